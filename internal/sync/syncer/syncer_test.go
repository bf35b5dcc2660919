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
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/mutation"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/merge"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestSyncer_createThenSteadyState(t *testing.T) {
	e := newEnv(t)
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})

	writes, err := e.converge(t, "default", "foo")
	if err != nil {
		t.Fatal(err)
	}
	// finalizer, namespace, local copy, state Secret
	if writes != 4 {
		t.Errorf("writes for a new object = %d, want 4", writes)
	}
	local := e.localCopy(t)
	if local.GetNamespace() != cluster || local.GetName() != "2747cabbb481a433679f-76d3bc41c9f588f7fcd0" {
		t.Errorf("local copy at %s/%s", local.GetNamespace(), local.GetName())
	}
	if diff := cmp.Diff(objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "foo"}.Labels("agent"), local.GetLabels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if local.Object["spec"].(map[string]any)["color"] != "blue" {
		t.Errorf("spec not copied: %v", local.Object["spec"])
	}
	// The namespace it created says whose it is and for which workspace.
	ns := &corev1.Namespace{}
	if err := e.service.Get(context.Background(), types.NamespacedName{Name: cluster}, ns); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{keys.CreatedBy: "agent", keys.CreatedForCluster: cluster}, ns.Labels); diff != "" {
		t.Errorf("the created namespace's labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{ReasonObjectAccepted, ReasonObjectPlaced}, e.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// In sync: zero writes.
	if writes, err := e.converge(t, "default", "foo"); err != nil || writes != 0 {
		t.Errorf("in-sync pass made %d writes (err %v), want 0", writes, err)
	}
}

func TestSyncer_threeWayMergeAndStatus(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)

	// A service-side field (an operator's default) and a status.
	local := e.localCopy(t)
	local.Object["spec"].(map[string]any)["defaulted"] = "by-operator"
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	local.Object["status"] = map[string]any{"phase": "Ready"}
	if err := e.service.Status().Update(ctx, local); err != nil {
		t.Fatal(err)
	}

	// An unrelated kcp change.
	remote := e.getRemote(t, "default", "foo")
	remote.Object["spec"].(map[string]any)["color"] = "red"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"color": "red", "defaulted": "by-operator"}, e.localCopy(t).Object["spec"]); diff != "" {
		t.Errorf("local spec (-want +got):\n%s", diff)
	}
	// The spec write is announced before the status (set above) goes up.
	if diff := cmp.Diff([]string{ReasonObjectAccepted, ReasonObjectPlaced, ReasonObjectSynced, ReasonObjectStatusSynced}, e.events); diff != "" {
		t.Errorf("events after a spec write (-want +got):\n%s", diff)
	}
	// status flows up
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"phase": "Ready"}, e.getRemote(t, "default", "foo").Object["status"]); diff != "" {
		t.Errorf("kcp status (-want +got):\n%s", diff)
	}

	// A kcp change of the service-side field wins.
	remote = e.getRemote(t, "default", "foo")
	remote.Object["spec"].(map[string]any)["defaulted"] = "by-consumer"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if got := e.localCopy(t).Object["spec"].(map[string]any)["defaulted"]; got != "by-consumer" {
		t.Errorf("defaulted = %v, want by-consumer", got)
	}
}

func TestSyncer_deletion(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") == nil {
		t.Fatal("the finalizer did not hold the kcp object")
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the kcp object still exists: finalizer not released")
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
	if err := e.service.List(ctx, list); err != nil || len(list.Items) != 0 {
		t.Errorf("local copies left: %d (%v)", len(list.Items), err)
	}
	var secrets corev1.SecretList
	if err := e.service.List(ctx, &secrets); err != nil || len(secrets.Items) != 0 {
		t.Errorf("state Secrets left: %d (%v)", len(secrets.Items), err)
	}
}

func TestSyncer_waitsForForeignFinalizers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	local := e.localCopy(t)
	local.SetFinalizers([]string{"operator.example.com/cleanup"})
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
	if err != nil || res.Writes != 1 {
		t.Fatalf("want the local copy deleted, got %+v, %v", res, err)
	}
	for range 3 {
		res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
		want := "the local copy " + cluster + "/2747cabbb481a433679f-76d3bc41c9f588f7fcd0 is being deleted and held by the finalizers operator.example.com/cleanup"
		if err != nil || res.Waiting != want || res.Writes != 0 {
			t.Fatalf("want to wait for the foreign finalizer without writes, got %+v, %v", res, err)
		}
	}
	if e.getRemote(t, "default", "foo") == nil {
		t.Fatal("the finalizer was released before the local copy was gone")
	}
}

// TestSyncer_removingLastLabelAndAnnotation: a consumer removes the only
// label, then the only annotation of their object. Each removal reaches the
// local copy key by key: labels and annotations set on the service side
// and the sync metadata stay, and the object converges (a patch that drops
// metadata would be refused on every pass, freezing the object).
func TestSyncer_removingLastLabelAndAnnotation(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	remote := typed(remoteGVK)
	remote.SetNamespace("default")
	remote.SetName("foo")
	remote.SetLabels(map[string]string{"team": "a"})
	remote.SetAnnotations(map[string]string{"note": "n"})
	remote.Object["spec"] = map[string]any{"color": "blue"}
	if err := e.kcp.Create(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	local := e.localCopy(t)
	local.SetLabels(merge.WithEntries(local.GetLabels(), map[string]string{"operator": "yes"}))
	local.SetAnnotations(merge.WithEntries(local.GetAnnotations(), map[string]string{"svc": "keep"}))
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		name   string
		change func(*unstructured.Unstructured)
		check  func(*unstructured.Unstructured) bool
	}{
		{"label removed", func(o *unstructured.Unstructured) { o.SetLabels(nil) }, func(l *unstructured.Unstructured) bool {
			return l.GetLabels()["team"] == "" && l.GetLabels()["operator"] == "yes" && l.GetAnnotations()["note"] == "n"
		}},
		{"annotation removed", func(o *unstructured.Unstructured) { o.SetAnnotations(nil) }, func(l *unstructured.Unstructured) bool {
			return l.GetAnnotations()["note"] == "" && l.GetAnnotations()["svc"] == "keep" && l.GetLabels()["operator"] == "yes"
		}},
	} {
		obj := e.getRemote(t, "default", "foo")
		step.change(obj)
		if err := e.kcp.Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
		if _, err := e.converge(t, "default", "foo"); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		local := e.localCopy(t)
		if !step.check(local) {
			t.Errorf("%s: local labels %v, annotations %v", step.name, local.GetLabels(), local.GetAnnotations())
		}
		if _, ok := objmeta.FromLocal(local); !ok {
			t.Errorf("%s: the local copy lost its sync metadata: %v", step.name, local.GetLabels())
		}
		res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
		if err != nil || res.Writes != 0 {
			t.Errorf("%s: not converged: %+v, %v", step.name, res, err)
		}
	}
}

// TestSyncer_deleteConfirmsAbsenceLive: a kcp object deleted right after
// its copy was created, while the copies cache has not seen the copy yet:
// the copy is found with a live read and deleted before the finalizer
// goes (otherwise it would be orphaned forever).
func TestSyncer_deleteConfirmsAbsenceLive(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	// A cache that has not seen the copy.
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).Build()
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
	if err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") == nil {
		t.Fatal("the finalizer was released while the local copy existed")
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
	if err := e.service.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || res.Writes != 1 {
		t.Errorf("the copy the cache did not see was not deleted: %d copies left, %+v", len(list.Items), res)
	}
}

// TestSyncer_stateIsNeverACopy: with Secrets as the published type, the
// state Secrets carry the same remote-object labels as the copies; the
// copy lookup must not count them (it found two copies and failed
// forever). A copy of another type that happens to carry the state label
// is still a copy.
func TestSyncer_stateIsNeverACopy(t *testing.T) {
	secretGVK := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	remote := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "foo"}
	object := func(gvk schema.GroupVersionKind, name string, extra map[string]string) unstructured.Unstructured {
		u := typed(gvk)
		u.SetName(name)
		u.SetLabels(merge.WithEntries(remote.Labels("agent"), extra))
		return *u
	}
	state := map[string]string{keys.ObjectState: "true"}
	e := newEnv(t)
	testcases := []struct {
		name       string
		candidates []unstructured.Unstructured
		want       string
	}{
		{name: "a Secret copy next to its state Secret", candidates: []unstructured.Unstructured{object(secretGVK, "copy", nil), object(secretGVK, "obj-state-x", state)}, want: "copy"},
		{name: "a copy of another type with the state label", candidates: []unstructured.Unstructured{object(localGVK, "copy", state)}, want: "copy"},
		{name: "the copy of another kcp kind's object of the same name next to ours",
			candidates: []unstructured.Unstructured{ofKind(object(localGVK, "old", nil), "Gizmo.kcp.example.com"), ofKind(object(localGVK, "copy", nil), "Thing.kcp.example.com")}, want: "copy"},
		{name: "a copy that records no kind (an earlier version's) is ours",
			candidates: []unstructured.Unstructured{ofKind(object(localGVK, "old", nil), "Gizmo.kcp.example.com"), object(localGVK, "copy", nil)}, want: "copy"},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.syncer.onlyCopy(tc.candidates, schema.GroupKind{Group: "kcp.example.com", Kind: "Thing"})
			if err != nil || got == nil || got.GetName() != tc.want {
				t.Fatalf("onlyCopy = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestSyncer_namingSeesTheMutatedObject: the local name is computed from
// the kcp object after its spec mutations (contract §2.5), so a name
// template that reads a mutated field uses the mutated value.
func TestSyncer_namingSeesTheMutatedObject(t *testing.T) {
	e := newEnv(t)
	namer, err := naming.NewNamer(&syncagentv1alpha1.ResourceNaming{Name: "copy-{{ .Object.spec.color }}", Namespace: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	mutator, err := mutation.Compile([]syncagentv1alpha1.ResourceMutation{
		{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: "spec.color", Replacement: "mutated"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.Namer, e.syncer.SpecMutator = namer, mutator
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	local := e.localCopy(t)
	if local.GetNamespace() != "fixed" || local.GetName() != "copy-mutated" {
		t.Errorf("local copy %s/%s, want fixed/copy-mutated", local.GetNamespace(), local.GetName())
	}
	if color, _, _ := unstructured.NestedString(local.Object, "spec", "color"); color != "mutated" {
		t.Errorf("spec.color = %q, want the mutated value", color)
	}
}

// TestSyncer_deletionNeedsNoNaming: an object whose name template fails
// (no copy was ever created) is still deleted: the deletion finds copies
// by their labels, not by a computed name.
func TestSyncer_deletionNeedsNoNaming(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	namer, err := naming.NewNamer(&syncagentv1alpha1.ResourceNaming{Name: `{{ fail "no name" }}`})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.Namer = namer
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).Build() // a cache that lags
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err == nil {
		t.Fatal("want the naming error")
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatalf("the deletion depends on naming: %v", err)
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the object is stuck in deletion")
	}
}

// TestSyncer_removesTheDeletionMark: a namespace that a sweep marked for
// deletion (found empty) loses the mark before the copy is created in it,
// so the sweep's deletion, conditional on the namespace not changing since
// the mark, fails.
func TestSyncer_removesTheDeletionMark(t *testing.T) {
	marked := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster, ResourceVersion: "7",
		Annotations: map[string]string{keys.DeletionCandidate: "2026-11-28T00:00:00Z", "other": "kept"}}}
	e := newEnv(t, marked)
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{}
	if err := e.service.Get(context.Background(), types.NamespacedName{Name: cluster}, ns); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"other": "kept"}, ns.Annotations); diff != "" {
		t.Errorf("annotations of the marked namespace (-want +got):\n%s", diff)
	}
	if ns.ResourceVersion == "7" {
		t.Error("the namespace did not change: a sweep's conditional delete would go through")
	}
	e.localCopy(t)
}
