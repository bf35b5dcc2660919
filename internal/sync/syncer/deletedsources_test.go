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
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestSyncer_deletedSourceOfAnUnsyncedPrimaryIsReleased: the primary of a
// kcp-origin source is no longer synced (filtered out, synchronization
// disabled) when the consumer deletes the source: the pass that only
// releases deleted sources deletes the copy and the record and removes
// the finalizer, and leaves the primary and its copy alone.
func TestSyncer_deletedSourceOfAnUnsyncedPrimaryIsReleased(t *testing.T) {
	e := syncedWithSource(t)
	ctx := t.Context()
	ws := Workspace{Client: e.kcp, Cluster: cluster}

	// A source not being deleted is left as it is.
	res, err := e.syncer.ReleaseDeletedSources(ctx, ws, e.getRemote(t, "default", "foo"))
	if err != nil || res.Writes != 0 {
		t.Fatalf("a pass with no source in deletion: %d writes, %v; want none", res.Writes, err)
	}
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.syncer.ReleaseDeletedSources(ctx, ws, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if got := get(t, e.kcp, configMapGVK, "default", "app-config"); got != nil {
		t.Errorf("the deleted source is still there, finalizers %v", got.GetFinalizers())
	}
	err = e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "app-config"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the source's copy: %v, want NotFound", err)
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related records left: %v", names)
	}
	if f := e.getRemote(t, "default", "foo").GetFinalizers(); len(f) != 1 || f[0] != ownFinalizer {
		t.Errorf("the primary's finalizers: %v, want only %s", f, ownFinalizer)
	}
}

// TestSyncer_removedEntryOfAnUnsyncedPrimaryIsForgotten: the related entry
// is removed from the PublishedResource while the primary is not synced:
// its pass forgets the entry's records as a synced pass prunes them (the
// source loses the finalizer, its copy stays), so a later deletion of the
// source is not held up.
func TestSyncer_removedEntryOfAnUnsyncedPrimaryIsForgotten(t *testing.T) {
	e := syncedWithSource(t)
	ctx := t.Context()
	e.syncer.Related = nil
	if _, err := e.syncer.ReleaseDeletedSources(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the source of the removed entry keeps finalizers %v", f)
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("records of the removed entry left: %v", names)
	}
	if err := e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "app-config"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the copy of a source that is not deleted: %v, want it kept", err)
	}
}

// TestSyncer_lastEntryRemovedIsPruned: the last related entry is removed
// from the PublishedResource; the synced pass prunes its records as for
// any removed entry (the source loses the finalizer, its copy stays).
func TestSyncer_lastEntryRemovedIsPruned(t *testing.T) {
	e := syncedWithSource(t)
	e.syncer.Related = nil
	e.mustConverge(t)
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the source of the removed entry keeps finalizers %v", f)
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("records of the removed entry left: %v", names)
	}
	if err := e.service.Get(t.Context(), types.NamespacedName{Namespace: cluster, Name: "app-config"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the copy: %v, want it kept", err)
	}
}

// TestSyncer_deletedSourceReleaseSurvivesAFailedFinalizerPatch: the
// finalizer patch of a deleted source fails once (a conflict with another
// agent removing its own finalizer, in the soak); the next pass, with
// nothing but the record to go by (the primary is not synced), must still
// release it: the record goes only after the finalizer.
func TestSyncer_deletedSourceReleaseSurvivesAFailedFinalizerPatch(t *testing.T) {
	conflicts := 0
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
		kcpWrite: func(obj ctrlruntimeclient.Object) error {
			if obj.GetName() == "app-config" && obj.GetDeletionTimestamp() != nil && conflicts == 0 {
				conflicts++
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "app-config", errors.New("the object has been modified"))
			}
			return nil
		},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	ctx := t.Context()
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.syncer.ReleaseDeletedSources(ctx, ws, e.getRemote(t, "default", "foo")); err == nil || conflicts != 1 {
		t.Fatalf("the first pass: %v (conflicts %d), want the conflict", err, conflicts)
	}
	if _, err := e.syncer.ReleaseDeletedSources(ctx, ws, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if got := get(t, e.kcp, configMapGVK, "default", "app-config"); got != nil {
		t.Errorf("the deleted source keeps finalizers %v after the retry", got.GetFinalizers())
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related records left: %v", names)
	}
}
