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

package syncer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// syncStatus copies the local status, after the status mutations (which
// see the spec-mutated kcp object), up to kcp (contract §6.6), only for
// types with a status subresource.
func (s *Syncer) syncStatus(ctx context.Context, ws Workspace, obj, mutated, local *unstructured.Unstructured) (Result, error) {
	localStatus, err := s.StatusForKcp(mutated, local)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if s.StatusSubresource {
		// (Without one, nothing is written: nothing to map.)
		var problems []unresolved
		localStatus, problems = s.withKcpReferences(ctx, ws, obj, local, localStatus)
		s.report(obj, problems, &res)
	}
	// A missing status and a null one are the same.
	if equality.Semantic.DeepEqual(localStatus, obj.Object["status"]) {
		return res, nil
	}
	if !s.StatusSubresource {
		// Without a status subresource the status cannot be written
		// separately (contract §6.6): warn once per generation, never loop.
		if s.Warned != nil && s.Warned.First(obj) {
			s.Event(obj, corev1.EventTypeWarning, ReasonStatusSubresMissing,
				"The service reports a status, but this API has no status subresource, so it is not shown here.")
		}
		return res, nil
	}
	updated := obj.DeepCopy()
	if localStatus != nil {
		updated.Object["status"] = localStatus
	} else {
		delete(updated.Object, "status")
	}
	if err := ws.Client.Status().Update(ctx, updated); err != nil {
		if !ObjectNotFound(err, obj.GetName()) {
			return Result{}, fmt.Errorf("failed to update the status in kcp: %w", err)
		}
		// A workspace still served an earlier schema of the type, one
		// without a status subresource, answers the same 404 for an
		// object that exists: only a live read tells the two apart.
		gone, gerr := goneFromKcp(ctx, ws, obj)
		switch {
		case gerr != nil:
			return Result{}, gerr
		case gone:
			return Result{}, errObjectGone
		}
		return Result{}, fmt.Errorf("kcp does not serve the status of this object (is the workspace still bound to a schema without a status subresource?): %w", err)
	}
	s.Event(obj, corev1.EventTypeNormal, ReasonObjectStatusSynced, "The status was updated from the service cluster.")
	res.Writes++
	return res, nil
}

// goneFromKcp reports whether the workspace's server (ws.Live, else
// ws.Client) no longer has obj: not found, or found under another UID.
func goneFromKcp(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) (bool, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	err := ws.reader().Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(obj), cur)
	switch {
	case ObjectNotFound(err, obj.GetName()):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("failed to read %s %s from kcp: %w", obj.GetKind(), obj.GetName(), err)
	}
	return cur.GetUID() != obj.GetUID(), nil
}
