// Copyright 2026 The api-syncagent Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package main

import (
	"bytes"
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// direct is the physical reference: the bench itself creates N objects of
// the local type in the service kube-apiserver with the same parallelism,
// then sets their status, updates their spec and deletes them. Each
// latency is the call's duration, the throughput N over the wall time. It
// runs before the agent starts, so nothing else loads the machine.
func (e *env) direct() {
	n := e.cfg.Objects
	c := e.svcDyn.Resource(localGVR).Namespace(directNamespace)
	objs := make([]*unstructured.Unstructured, n)

	start, done, calls := e.parallel(n, func(ctx context.Context, i int) error {
		u, err := c.Create(ctx, newThing(localGVR, directNamespace, objectName(i)), metav1.CreateOptions{})
		objs[i] = u
		return err
	})
	e.res.Phases["direct-create"] = callPhase(start, done, calls)

	start, done, calls = e.parallel(n, func(ctx context.Context, i int) error {
		objs[i].Object["status"] = map[string]any{"phase": "Ready"}
		u, err := c.UpdateStatus(ctx, objs[i], metav1.UpdateOptions{})
		objs[i] = u
		return err
	})
	e.res.Phases["direct-status"] = callPhase(start, done, calls)

	start, done, calls = e.parallel(n, func(ctx context.Context, i int) error {
		if err := unstructured.SetNestedField(objs[i].Object, "red", "spec", "color"); err != nil {
			return err
		}
		_, err := c.Update(ctx, objs[i], metav1.UpdateOptions{})
		return err
	})
	e.res.Phases["direct-update"] = callPhase(start, done, calls)

	start, done, calls = e.parallel(n, func(ctx context.Context, i int) error {
		return c.Delete(ctx, objectName(i), metav1.DeleteOptions{})
	})
	e.res.Phases["direct-delete"] = callPhase(start, done, calls)
}

// unrelated creates cfg.Unrelated Secrets of 1 KiB in the service
// cluster's namespace unrelatedNamespace: a cluster's other tenants'
// Secrets, which no PublishedResource names and the agent must not cache.
func (e *env) unrelated() {
	n := e.cfg.Unrelated
	if n == 0 {
		return
	}
	e.svc.CreateNamespace(e.t, unrelatedNamespace)
	data := bytes.Repeat([]byte("x"), 1024)
	_, _, _ = e.parallel(n, func(ctx context.Context, i int) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: unrelatedNamespace, Name: objectName(i)}, Data: map[string][]byte{"data": data}}
		return e.svc.Client.Create(ctx, s)
	})
}
