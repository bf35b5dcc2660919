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
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/google/go-cmp/cmp"

	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// setFinalizers replaces the finalizers of a kcp object, as another agent
// or an earlier version of this one left them.
func setFinalizers(t *testing.T, c ctrlruntimeclient.Client, obj ctrlruntimeclient.Object, finalizers ...string) {
	t.Helper()
	obj.SetFinalizers(finalizers)
	if err := c.Update(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// TestSyncer_legacyFinalizerOfAPrimaryIsMigrated: a primary synced by the
// reference (or an earlier version) carries syncagent.kcp.io/cleanup; the
// first pass replaces it by the agent's own, and deleting the primary
// removes the agent's own and leaves nothing.
func TestSyncer_legacyFinalizerOfAPrimaryIsMigrated(t *testing.T) {
	e := newRelatedEnv(t, relatedEnvOptions{})
	e.createPrimary(t, map[string]any{}, nil)
	setFinalizers(t, e.kcp, e.getRemote(t, "default", "foo"), "example.com/other", finalizer.Legacy)
	e.mustConverge(t)
	if diff := cmp.Diff([]string{"example.com/other", ownFinalizer}, e.getRemote(t, "default", "foo").GetFinalizers()); diff != "" {
		t.Errorf("finalizers after the first pass (-want +got):\n%s", diff)
	}
	if err := e.kcp.Delete(t.Context(), e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if diff := cmp.Diff([]string{"example.com/other"}, e.getRemote(t, "default", "foo").GetFinalizers()); diff != "" {
		t.Errorf("finalizers after the cleanup (-want +got):\n%s", diff)
	}
}

// TestSyncer_anotherAgentsLegacyFinalizerStays: a consumer's ConfigMap that
// another agent (the reference, say) guards with syncagent.kcp.io/cleanup
// becomes a related source of ours: it gets the agent's own finalizer next
// to the other's, and when our primary goes only ours is removed (the other
// agent still needs its own: reference issue #172).
func TestSyncer_anotherAgentsLegacyFinalizerStays(t *testing.T) {
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
	})
	setFinalizers(t, e.kcp, mustGet(t, e.kcp, configMapGVK, "default", "app-config"), finalizer.Legacy)
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	if diff := cmp.Diff([]string{finalizer.Legacy, ownFinalizer}, mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the source while synced (-want +got):\n%s", diff)
	}
	if err := e.kcp.Delete(t.Context(), e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if diff := cmp.Diff([]string{finalizer.Legacy}, mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the source after our primary went (-want +got):\n%s", diff)
	}
}

// TestSyncer_ourLegacyFinalizerOfASourceIsMigrated: a related source this
// agent synced before per-agent finalizers (its record exists) carries the
// legacy finalizer: the next pass replaces it by the agent's own, and the
// primary's deletion leaves the source without either.
func TestSyncer_ourLegacyFinalizerOfASourceIsMigrated(t *testing.T) {
	e := syncedWithSource(t)
	// As an earlier version left it: the legacy finalizer on the source, a
	// record that names none.
	setFinalizers(t, e.kcp, mustGet(t, e.kcp, configMapGVK, "default", "app-config"), finalizer.Legacy)
	writeLegacyRecords(t, e)
	e.mustConverge(t)
	if diff := cmp.Diff([]string{ownFinalizer}, mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the source after the next pass (-want +got):\n%s", diff)
	}
	if err := e.kcp.Delete(t.Context(), e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("finalizers of the source after the primary went: %v", f)
	}
}

// writeLegacyRecords rewrites default/foo's related records as versions
// before per-agent finalizers wrote them (no finalizer named).
func writeLegacyRecords(t *testing.T, e *relatedEnv) {
	t.Helper()
	ctx := t.Context()
	records, err := e.syncer.State.ListRelatedLive(ctx, fooPrimary())
	if err != nil || len(records) == 0 {
		t.Fatalf("related records of default/foo: %v, %v", records, err)
	}
	for _, r := range records {
		rec := state.Related{Primary: r.PrimaryOf(), RelatedRecord: r.RelatedRecord}
		content, err := e.syncer.State.GetRelatedLive(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		rec.Finalizer = ""
		if err := e.syncer.State.PutRelated(ctx, rec, content); err != nil {
			t.Fatal(err)
		}
		if got, err := e.syncer.State.StoredRecord(ctx, rec, true); err != nil || got == nil || got.Finalizer != "" {
			t.Fatalf("the rewritten record: %+v, %v", got, err)
		}
	}
}

// TestSyncer_legacySourceOfADeletedPrimaryIsReleased: the primary of a
// source that carries the legacy finalizer (from an earlier version, its
// record naming no finalizer) is deleted before any pass of this version:
// the source loses the legacy finalizer all the same.
func TestSyncer_legacySourceOfADeletedPrimaryIsReleased(t *testing.T) {
	e := syncedWithSource(t)
	setFinalizers(t, e.kcp, mustGet(t, e.kcp, configMapGVK, "default", "app-config"), finalizer.Legacy)
	setFinalizers(t, e.kcp, e.getRemote(t, "default", "foo"), finalizer.Legacy)
	writeLegacyRecords(t, e)
	if err := e.kcp.Delete(t.Context(), e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("finalizers of the source after the primary went: %v", f)
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related state left: %v", names)
	}
}

// asReference rewrites default/foo's related state as the reference keeps
// it: no related state Secrets, the ConfigMap's last state in the primary's
// Secret; both objects carry the reference's finalizer.
func asReference(t *testing.T, e *relatedEnv) {
	t.Helper()
	ctx := t.Context()
	for _, name := range e.relatedStateNames(t) {
		if err := e.service.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-ns", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	primary := &corev1.Secret{}
	if err := e.service.Get(ctx, types.NamespacedName{Namespace: "agent-ns", Name: state.SecretName(fooPrimary())}, primary); err != nil {
		t.Fatal(err)
	}
	primary.Data[state.LegacyKey(cluster, "default", "app-config")] = []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config","namespace":"default"},"data":{"key":"value"}}`)
	if err := e.service.Update(ctx, primary); err != nil {
		t.Fatal(err)
	}
	setFinalizers(t, e.kcp, mustGet(t, e.kcp, configMapGVK, "default", "app-config"), finalizer.Legacy)
	setFinalizers(t, e.kcp, e.getRemote(t, "default", "foo"), finalizer.Legacy)
}

// TestSyncer_referenceSourceIsTakenOver: after a switch from the reference
// (related state in the primary's Secret, its finalizer on the source), the
// next pass replaces the reference's finalizer on the source by the
// agent's own, and the source's later deletion leaves none.
func TestSyncer_referenceSourceIsTakenOver(t *testing.T) {
	e := syncedWithSource(t)
	asReference(t, e)
	e.mustConverge(t)
	if diff := cmp.Diff([]string{ownFinalizer}, mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the source after the takeover (-want +got):\n%s", diff)
	}
	if err := e.kcp.Delete(t.Context(), mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if err := e.kcp.Get(t.Context(), types.NamespacedName{Namespace: "default", Name: "app-config"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted source: %v, want it gone", err)
	}
}

// TestSyncer_referencePrimaryDeletedAtTheSwitch: a primary the reference
// synced is deleted before any pass of this agent: its source loses the
// reference's finalizer and the source's service copy goes, as the
// reference would have done.
func TestSyncer_referencePrimaryDeletedAtTheSwitch(t *testing.T) {
	e := syncedWithSource(t)
	asReference(t, e)
	if err := e.kcp.Delete(t.Context(), e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("finalizers of the source after the primary went: %v", f)
	}
	if err := e.service.Get(t.Context(), types.NamespacedName{Namespace: cluster, Name: "app-config"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the source's service copy: %v, want it gone", err)
	}
}

// TestSyncer_takenOverSourceKeepsAnotherAgentsLegacyFinalizer: two
// primaries of the agent held a source before per-agent finalizers (their
// records name no finalizer); the first takes it over, which marks the
// second's record too, so when another agent puts the legacy finalizer back
// and the source is released, the second record does not make the other
// agent's finalizer the agent's.
func TestSyncer_takenOverSourceKeepsAnotherAgentsLegacyFinalizer(t *testing.T) {
	ctx := t.Context()
	e := syncedWithSource(t)
	records, err := e.syncer.State.ListRelatedLive(ctx, fooPrimary())
	if err != nil || len(records) != 1 {
		t.Fatalf("records of foo: %v, %v", records, err)
	}
	// As an earlier version left them: foo's and bar's records of the
	// source, naming no finalizer; the legacy finalizer on the source.
	bar := fooPrimary()
	bar.Name = "bar"
	old := state.Related{Primary: bar, RelatedRecord: records[0].RelatedRecord}
	old.Finalizer = ""
	if err := e.syncer.State.PutRelated(ctx, old, map[string]any{"data": map[string]any{"key": "value"}}); err != nil {
		t.Fatal(err)
	}
	writeLegacyRecords(t, e)
	setFinalizers(t, e.kcp, mustGet(t, e.kcp, configMapGVK, "default", "app-config"), finalizer.Legacy)
	e.mustConverge(t)
	if diff := cmp.Diff([]string{ownFinalizer}, mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the taken-over source (-want +got):\n%s", diff)
	}
	got, err := e.syncer.State.StoredRecord(ctx, old, true)
	if err != nil || got == nil || got.Finalizer != ownFinalizer {
		t.Fatalf("bar's record after the takeover: %+v, %v; want it to name %s", got, err, ownFinalizer)
	}
	if ours, _, err := e.syncer.legacyOurs(ctx, old, got, nil); err != nil || ours {
		t.Errorf("bar's record makes a legacy finalizer the agent's: %v, %v", ours, err)
	}
	// Another agent puts the legacy finalizer back; the source is deleted.
	setFinalizers(t, e.kcp, mustGet(t, e.kcp, configMapGVK, "default", "app-config"), ownFinalizer, finalizer.Legacy)
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if diff := cmp.Diff([]string{finalizer.Legacy}, mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the deleted source (-want +got):\n%s", diff)
	}
}

// syncedWithSource is a relatedEnv whose primary default/foo has synced its
// kcp-origin related ConfigMap default/app-config.
func syncedWithSource(t *testing.T) *relatedEnv {
	t.Helper()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	return e
}
