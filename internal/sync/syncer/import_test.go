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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// legacyKey is where the service owner's object to import lives.
var legacyKey = types.NamespacedName{Namespace: "prod", Name: "legacy"}

// legacyObject is the service owner's object prod/legacy (UID uid-1).
func legacyObject(labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := typed(localGVK)
	u.SetNamespace(legacyKey.Namespace)
	u.SetName(legacyKey.Name)
	u.SetUID("uid-1")
	u.SetLabels(labels)
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// importedObject is the kcp object default/imported, created by the
// import of the object of UID createdBy (none: by someone else), with the
// agent's finalizer.
func (e *env) importedObject(createdBy string) *unstructured.Unstructured {
	obj := typed(remoteGVK)
	obj.SetNamespace("default")
	obj.SetName("imported")
	if createdBy != "" {
		obj.SetAnnotations(map[string]string{keys.ImportedFrom: createdBy})
	}
	obj.SetFinalizers([]string{e.syncer.finalizers().Own})
	return obj
}

// claim claims the service owner's object for the kcp object p.
func (e *env) claim(t *testing.T, p state.Primary) {
	t.Helper()
	local := typed(localGVK)
	if err := e.service.Get(context.Background(), legacyKey, local); err != nil {
		t.Fatal(err)
	}
	if err := e.syncer.ClaimForImport(context.Background(), local, p); err != nil {
		t.Fatal(err)
	}
}

// TestSyncer_imported: a service-cluster object imported into kcp is
// claimed first (the kcp object's sync labels, the claim, no state), then
// the kcp object is created (annotated with the object's UID); the next
// pass finds the claimed object (live, where the copies cache lags), never
// makes a second copy, and finishes the import: state recorded, the claim
// and the request removed, nothing of the object's spec written (a field
// only the service side has stays). Afterwards the usual rules hold: a kcp
// change is merged in, a service-side change of another field stays.
func TestSyncer_imported(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, legacyObject(map[string]string{keys.ImportInto: cluster, "app": "x"},
		map[string]any{"color": "green", "replicas": int64(3), "internal": "service only"}))
	// The copies cache sees nothing (it lags behind the claim).
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).Build()
	ws := Workspace{Client: e.kcp, Cluster: cluster}

	obj := e.importedObject("uid-1")
	obj.SetLabels(map[string]string{"app": "x"})
	obj.Object["spec"] = map[string]any{"color": "green", "replicas": int64(3)}
	e.claim(t, ImportPrimary(ws, obj))
	if err := e.kcp.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	res, err := e.syncer.Process(ctx, ws, e.getRemote(t, "default", "imported"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported == nil {
		t.Error("the pass that finished the import did not say so")
	}
	if _, err := e.converge(t, "default", "imported"); err != nil {
		t.Fatal(err)
	}
	local := e.localCopy(t) // fails if a second copy was created
	if local.GetNamespace() != "prod" || local.GetName() != "legacy" {
		t.Fatalf("the copy is %s/%s, want the imported object prod/legacy", local.GetNamespace(), local.GetName())
	}
	wantLabels := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "imported"}.Labels("agent")
	wantLabels["app"] = "x"
	if diff := cmp.Diff(wantLabels, local.GetLabels()); diff != "" {
		t.Errorf("labels of the imported object (-want +got):\n%s", diff)
	}
	if _, claim := local.GetAnnotations()[keys.Importing]; claim {
		t.Error("the claim stayed after the import")
	}
	if diff := cmp.Diff(map[string]any{"color": "green", "replicas": int64(3), "internal": "service only"}, local.Object["spec"]); diff != "" {
		t.Errorf("the import wrote the object's spec (-want +got):\n%s", diff)
	}

	// The service side changes one field, kcp another.
	local.Object["spec"].(map[string]any)["replicas"] = int64(5)
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	remote := e.getRemote(t, "default", "imported")
	remote.Object["spec"].(map[string]any)["color"] = "blue"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "imported"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"color": "blue", "replicas": int64(5), "internal": "service only"}, e.localCopy(t).Object["spec"]); diff != "" {
		t.Errorf("spec of the imported object after changes on both sides (-want +got):\n%s", diff)
	}
}

// TestSyncer_claimedObjectIsNeverTakenOverOrDeleted: an import that
// stopped after its claim leaves the object labelled for a kcp object the
// import did not create. A consumer's kcp object of that name does not
// take it over (the claim is dropped, the object kept as it was, and the
// consumer's object gets a copy of its own); the deletion of a kcp object
// whose import did not finish (claimed, with or without state) drops the
// claim instead of deleting the object.
func TestSyncer_claimedObjectIsNeverTakenOverOrDeleted(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		createdBy string
		deleting  bool
		withState bool
	}{
		{name: "another kcp object of the name", createdBy: ""},
		{name: "the import's kcp object is deleted before the import finished", createdBy: "uid-1", deleting: true},
		{name: "the import's kcp object is deleted after the state was written, before the claim went", createdBy: "uid-1", deleting: true, withState: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, legacyObject(map[string]string{"app": "x"}, map[string]any{"color": "green"}))
			ws := Workspace{Client: e.kcp, Cluster: cluster}
			obj := e.importedObject(tc.createdBy)
			obj.Object["spec"] = map[string]any{"color": "evil"}
			p := ImportPrimary(ws, obj)
			e.claim(t, p)
			if tc.withState {
				if err := e.syncer.State.Put(ctx, p, map[string]any{"spec": map[string]any{"color": "green"}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.kcp.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			if tc.deleting {
				if err := e.kcp.Delete(ctx, obj); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.converge(t, "default", "imported"); err != nil {
				t.Fatal(err)
			}
			got := typed(localGVK)
			if err := e.service.Get(ctx, legacyKey, got); err != nil {
				t.Fatalf("the service owner's object is gone: %v", err)
			}
			if diff := cmp.Diff(map[string]string{"app": "x"}, got.GetLabels()); diff != "" {
				t.Errorf("the claim stayed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"color": "green"}, got.Object["spec"]); diff != "" {
				t.Errorf("the service owner's object was overwritten (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncer_staleClaimIsNotDeleted: a copies cache that still shows a
// claim the API server no longer has (dropped a moment ago) does not make
// the deletion of the kcp object delete the service owner's object.
func TestSyncer_staleClaimIsNotDeleted(t *testing.T) {
	ctx := context.Background()
	legacy := legacyObject(map[string]string{"app": "x"}, nil)
	e := newEnv(t, legacy)
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	obj := e.importedObject("uid-1")
	p := ImportPrimary(ws, obj)
	stale := legacy.DeepCopy()
	e.syncer.addSyncMetadata(stale, p)
	stale.SetAnnotations(map[string]string{keys.Importing: "abc/default/imported"})
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).WithObjects(stale).Build()
	if err := e.kcp.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "imported"); err != nil {
		t.Fatal(err)
	}
	if err := e.service.Get(ctx, legacyKey, typed(localGVK)); err != nil {
		t.Fatalf("the service owner's object is gone: %v", err)
	}
	if e.getRemote(t, "default", "imported") != nil {
		t.Error("the kcp object kept the finalizer")
	}
}

// TestSyncer_vanishedImportDropsItsClaim: an import that claimed an object
// and never created its kcp object (the request removed meanwhile) leaves
// a claim; the pass of that kcp object, confirmed gone, drops it.
func TestSyncer_vanishedImportDropsItsClaim(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, legacyObject(map[string]string{"app": "x"}, nil))
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	obj := e.importedObject("")
	e.claim(t, ImportPrimary(ws, obj))
	if _, err := e.syncer.Vanished(ctx, ws, obj); err != nil {
		t.Fatal(err)
	}
	got := typed(localGVK)
	if err := e.service.Get(ctx, legacyKey, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"app": "x"}, got.GetLabels()); diff != "" {
		t.Errorf("labels after the vanished import (-want +got):\n%s", diff)
	}
	if _, claim := got.GetAnnotations()[keys.Importing]; claim {
		t.Error("the claim stayed")
	}
}
