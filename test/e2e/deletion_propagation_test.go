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

//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestDeletionPropagation: a consumer's annotation
// syncagent.kcp.io/deletion-propagation-policy decides how the service
// cluster's copy goes with the kcp object. Without it, and with a value
// the agent does not know (a Warning says so), the copy is deleted and
// the object goes; with foreground the copy is deleted dependents first
// and the kcp object waits for it; with orphan the copy stays, without the
// agent's labels, and a new kcp object of the same name does not take it
// over. The annotation itself never reaches the service cluster.
func TestDeletionPropagation(t *testing.T) {
	t.Parallel()
	f, consumers, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	consumer := consumers[0]
	ctx := t.Context()

	policies := map[string]string{"plain": "", "foreground": "foreground", "orphan": "orphan", "odd": "sideways"}
	for name, policy := range policies {
		thing := newObject(kcpThing, "default", name, map[string]any{"color": "blue"})
		if policy != "" {
			thing.SetAnnotations(map[string]string{keys.DeletionPropagationPolicy: policy})
		}
		framework.Must(t, consumer.Client.Create(ctx, thing), "create Thing %s", name)
	}
	copies := map[string]*unstructured.Unstructured{}
	framework.WaitFor(t, syncTimeout, "the four local copies", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		if err != nil || len(items) != len(policies) {
			return false, err
		}
		for i := range items {
			copies[items[i].GetAnnotations()[keys.RemoteObjectName]] = &items[i]
		}
		return true, nil
	})
	for name, c := range copies {
		if _, ok := c.GetAnnotations()[keys.DeletionPropagationPolicy]; ok {
			t.Errorf("the copy of %s carries the deletion propagation annotation", name)
		}
	}

	// The unknown value is reported before it matters.
	framework.WaitFor(t, syncTimeout, "the early Warning about the unknown value", func(ctx context.Context) (bool, error) {
		return slices.ContainsFunc(namespacedEventMessages(ctx, consumer, "default", "odd", "InvalidDeletionPropagation"),
			func(m string) bool { return strings.Contains(m, "if this object is deleted") }), nil
	})

	for name := range policies {
		framework.Must(t, consumer.Client.Delete(ctx, newObject(kcpThing, "default", name, nil)), "delete Thing %s", name)
	}
	kcpGone := func(name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			err := consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, newObject(kcpThing, "", "", nil))
			return apierrors.IsNotFound(err), ctrlruntimeclient.IgnoreNotFound(err)
		}
	}
	localOf := func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
		u := newObject(localThing, "", "", nil)
		err := f.Service.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(copies[name]), u)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return u, err
	}

	// Background, the default and the fallback.
	for _, name := range []string{"plain", "odd"} {
		framework.WaitFor(t, syncTimeout, "Thing "+name+" gone", kcpGone(name))
		if u, err := localOf(ctx, name); err != nil || u != nil {
			t.Errorf("the copy of %s is still there (%v)", name, err)
		}
	}
	framework.WaitFor(t, syncTimeout, "the Warning about the unknown value at the deletion", func(ctx context.Context) (bool, error) {
		return slices.ContainsFunc(namespacedEventMessages(ctx, consumer, "default", "odd", "InvalidDeletionPropagation"),
			func(m string) bool { return strings.Contains(m, "is deleted in the background") }), nil
	})

	// Foreground: the copy waits for its dependents (the service cluster's
	// garbage collector; the test bed runs none, so the test plays it) and
	// the kcp object for the copy.
	framework.WaitFor(t, syncTimeout, "the copy of foreground deleted in the foreground", func(ctx context.Context) (bool, error) {
		u, err := localOf(ctx, "foreground")
		return u != nil && u.GetDeletionTimestamp() != nil && slices.Contains(u.GetFinalizers(), metav1.FinalizerDeleteDependents), err
	})
	thing := newObject(kcpThing, "", "", nil)
	framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "foreground"}, thing), "Thing foreground waits for its copy")
	if !slices.Contains(thing.GetFinalizers(), agentFinalizer(f)) {
		t.Errorf("Thing foreground lost the agent's finalizer while its copy is still there: %v", thing.GetFinalizers())
	}
	u, err := localOf(ctx, "foreground")
	framework.Must(t, err, "read the copy of foreground")
	u.SetFinalizers(slices.DeleteFunc(u.GetFinalizers(), func(s string) bool { return s == metav1.FinalizerDeleteDependents }))
	framework.Must(t, f.Service.Client.Update(ctx, u), "end the foreground deletion as the garbage collector would")
	framework.WaitFor(t, syncTimeout, "Thing foreground gone", kcpGone("foreground"))

	// Orphan: the copy stays, the object goes, nothing takes the copy over.
	framework.WaitFor(t, syncTimeout, "Thing orphan gone", kcpGone("orphan"))
	kept, err := localOf(ctx, "orphan")
	if err != nil || kept == nil {
		t.Fatalf("the orphaned copy is gone (%v)", err)
	}
	if kept.GetUID() != copies["orphan"].GetUID() || kept.GetDeletionTimestamp() != nil {
		t.Errorf("the orphaned copy was replaced or is being deleted")
	}
	for _, k := range []string{keys.RemoteObjectCluster, keys.RemoteObjectNameHash, keys.AgentName} {
		if _, ok := kept.GetLabels()[k]; ok {
			t.Errorf("the orphaned copy keeps the label %s", k)
		}
	}
	if got, want := kept.GetAnnotations()[keys.OrphanedFrom], consumer.ClusterName+"/default/orphan"; got != want {
		t.Errorf("the orphaned copy's %s = %q, want %q", keys.OrphanedFrom, got, want)
	}
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "orphan", map[string]any{"color": "red"})), "create Thing orphan again")
	framework.WaitFor(t, syncTimeout, "ObjectConflict on the new Thing orphan", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, consumer, "default", "orphan")["ObjectConflict"], nil
	})
	after, err := localOf(ctx, "orphan")
	framework.Must(t, err, "read the orphaned copy")
	if color, _, _ := unstructured.NestedString(after.Object, "spec", "color"); color != "blue" || after.GetResourceVersion() != kept.GetResourceVersion() {
		t.Errorf("the orphaned copy was written by the new Thing: color %q, resourceVersion %s (was %s)", color, after.GetResourceVersion(), kept.GetResourceVersion())
	}
}
