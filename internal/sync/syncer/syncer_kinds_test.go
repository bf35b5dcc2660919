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
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/merge"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// TestSyncer_primaryCompletesItsRelatedRole: a kcp object that is a
// primary and also the kcp-origin related object of another primary
// (contract §7 #31) keeps the shared finalizer until the other primary's
// copy of it and its record are gone; its deletion does that cleanup
// itself (the other primary's sync runs only on its own events, or never
// when its PublishedResource is disabled), then the finalizer goes.
func TestSyncer_primaryCompletesItsRelatedRole(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	e.createRemote(t, "default", "bar", map[string]any{"color": "red"})
	bar := state.Primary{APIVersion: remoteGVK.GroupVersion().String(), Kind: remoteGVK.Kind}
	bar.Cluster, bar.Namespace, bar.Name = cluster, "default", "bar"
	barHoldsFoo := state.Related{Primary: bar, RelatedRecord: state.RelatedRecord{
		Identifier: "peer", OriginSide: "kcp",
		Primary:     state.ObjectRef{APIVersion: bar.APIVersion, Kind: bar.Kind, Namespace: "default", Name: "bar"},
		Origin:      state.ObjectRef{APIVersion: bar.APIVersion, Kind: bar.Kind, Namespace: "default", Name: "foo"},
		Destination: state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: cluster, Name: "foo-peer"},
	}}
	// A record of a primary that is gone (an orphan) holds foo too.
	gone := bar
	gone.Name = "gone"
	goneHoldsFoo := barHoldsFoo
	goneHoldsFoo.Primary = gone
	goneHoldsFoo.RelatedRecord.Primary.Name = "gone"
	goneHoldsFoo.Destination.Name = "foo-gone"
	for _, rec := range []state.Related{barHoldsFoo, goneHoldsFoo} {
		if err := e.syncer.State.PutRelated(ctx, rec, map[string]any{"data": map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		if err := e.service.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: rec.Destination.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	for range 10 {
		obj := e.getRemote(t, "default", "foo")
		if obj == nil {
			break
		}
		// Until bar's copy of foo and its record are gone, foo stays.
		if err := e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "foo-peer"}, &corev1.ConfigMap{}); err == nil && !controllerutil.ContainsFinalizer(obj, ownFinalizer) {
			t.Fatal("the finalizer went before the related role's cleanup")
		}
		if _, err := e.syncer.Process(ctx, ws, obj); err != nil {
			t.Fatal(err)
		}
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Fatal("the object stayed")
	}
	for _, rec := range []state.Related{barHoldsFoo, goneHoldsFoo} {
		if err := e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: rec.Destination.Name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s's copy of foo stayed: %v", rec.Name, err)
		}
		if got, err := e.syncer.State.GetRelated(ctx, rec); err != nil || got != nil {
			t.Errorf("%s's record of foo stayed: %v, %v", rec.Name, got, err)
		}
	}
}

// fooRef names default/foo as the controller does for a kcp object its
// cache does not have.
func fooRef() *unstructured.Unstructured {
	ref := typed(remoteGVK)
	ref.SetNamespace("default")
	ref.SetName("foo")
	return ref
}

// vanish removes a kcp object, finalizer or not, as the API server does
// when a delete races with the finalizer patch (or as a consumer who takes
// the finalizer off by hand).
func (e *env) vanish(t *testing.T, namespace, name string) {
	t.Helper()
	obj := e.getRemote(t, namespace, name)
	obj.SetFinalizers(nil)
	if err := e.kcp.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// vanishedUntilDone runs Vanished until it stops asking for a requeue.
func (e *env) vanishedUntilDone(t *testing.T, ws Workspace, ref *unstructured.Unstructured) {
	t.Helper()
	for range 5 {
		res, err := e.syncer.Vanished(context.Background(), ws, ref)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Requeue {
			return
		}
	}
	t.Fatal("Vanished did not finish within 5 passes")
}

// ofKind records a kcp kind on a local object, as the agent does on its copies.
func ofKind(u unstructured.Unstructured, gk string) unstructured.Unstructured {
	u.SetAnnotations(map[string]string{keys.RemoteObjectKind: gk})
	return u
}

// TestSyncer_oldKindsCopyIsNotTakenOver: after a projection change, the
// copy of an old kind's object (released, kept on the service cluster)
// has the workspace, namespace and name of a new object of the new kind.
// The new object does not take it over (ObjectConflict: its name is
// taken), and deleting the new object leaves it.
func TestSyncer_oldKindsCopyIsNotTakenOver(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.createRemote(t, "default", "foo", map[string]any{"color": "red"})
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	old, _, err := e.syncer.NewCopy(ws, e.getRemote(t, "default", "foo"))
	if err != nil {
		t.Fatal(err)
	}
	old.Object["spec"] = map[string]any{"color": "the old kind's"}
	old.SetAnnotations(merge.WithEntries(old.GetAnnotations(), map[string]string{keys.RemoteObjectKind: "Gizmo.kcp.example.com"}))
	if err := e.service.Create(ctx, old); err != nil {
		t.Fatal(err)
	}

	if _, err := e.converge(t, "default", "foo"); !errors.Is(err, ErrConflict) {
		t.Fatalf("the new kind's object: %v, want ErrConflict", err)
	}
	readOld := func() *unstructured.Unstructured {
		t.Helper()
		got := typed(localGVK)
		if err := e.service.Get(ctx, types.NamespacedName{Namespace: old.GetNamespace(), Name: old.GetName()}, got); err != nil {
			t.Fatalf("the old kind's copy: %v", err)
		}
		return got
	}
	if got := readOld(); got.Object["spec"].(map[string]any)["color"] != "the old kind's" {
		t.Errorf("the old kind's copy was written: %v", got.Object["spec"])
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the new kind's object was not released")
	}
	readOld()
}
