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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestSyncer_deletionPropagation: the kcp object's annotation decides how
// its copy goes: deleted with the policy it names (background without one
// or with an unknown value, which is warned about), or kept and orphaned,
// so that the kcp object goes at once and no later kcp object of the same
// name adopts the copy.
func TestSyncer_deletionPropagation(t *testing.T) {
	tests := []struct {
		name       string
		annotation *string
		wantPolicy metav1.DeletionPropagation // "" : no delete
		wantWarn   bool
	}{
		{name: "none", wantPolicy: metav1.DeletePropagationBackground},
		{name: "background", annotation: ptr("background"), wantPolicy: metav1.DeletePropagationBackground},
		{name: "foreground", annotation: ptr("foreground"), wantPolicy: metav1.DeletePropagationForeground},
		{name: "unknown", annotation: ptr("Foreground"), wantPolicy: metav1.DeletePropagationBackground, wantWarn: true},
		{name: "orphan", annotation: ptr("orphan")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			var policies []metav1.DeletionPropagation
			e.syncer.Service = interceptor.NewClient(e.service.(ctrlruntimeclient.WithWatch), interceptor.Funcs{
				Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
					o := &ctrlruntimeclient.DeleteOptions{}
					o.ApplyOptions(opts)
					policies = append(policies, ptrValue(o.PropagationPolicy))
					return c.Delete(ctx, obj, opts...)
				},
			})
			e.syncedFoo(t)
			obj := e.getRemote(t, "default", "foo")
			if tt.annotation != nil {
				obj.SetAnnotations(map[string]string{keys.DeletionPropagationPolicy: *tt.annotation})
				if err := e.kcp.Update(ctx, obj); err != nil {
					t.Fatal(err)
				}
				if _, err := e.converge(t, "default", "foo"); err != nil {
					t.Fatal(err)
				}
				if _, copied := e.localCopy(t).GetAnnotations()[keys.DeletionPropagationPolicy]; copied {
					t.Error("the policy annotation was copied to the service cluster")
				}
			}
			local := e.localCopy(t)
			if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
				t.Fatal(err)
			}
			if _, err := e.converge(t, "default", "foo"); err != nil {
				t.Fatal(err)
			}
			if e.getRemote(t, "default", "foo") != nil {
				t.Fatal("the kcp object still exists")
			}
			if warned := slices.Contains(e.events, ReasonInvalidDeletionPropagation); warned != tt.wantWarn {
				t.Errorf("warned %v, want %v (events %v)", warned, tt.wantWarn, e.events)
			}
			if tt.wantPolicy != "" {
				if !slices.Equal(policies, []metav1.DeletionPropagation{tt.wantPolicy}) {
					t.Errorf("the copy was deleted with %v, want %s", policies, tt.wantPolicy)
				}
				return
			}
			// Orphaned: kept, unlinked, and adopted by nothing.
			if len(policies) != 0 {
				t.Errorf("the orphaned copy was deleted (%v)", policies)
			}
			kept := e.localCopy(t)
			if kept.GetUID() != local.GetUID() {
				t.Fatal("the orphaned copy is another object")
			}
			if diff := linkKeys(kept); len(diff) != 0 {
				t.Errorf("the orphaned copy keeps the keys that tie it to its kcp object: %v", diff)
			}
			if got := kept.GetAnnotations()[keys.OrphanedFrom]; got != cluster+"/default/foo" {
				t.Errorf("orphaned-from = %q", got)
			}
			var secrets corev1.SecretList
			if err := e.service.List(ctx, &secrets); err != nil || len(secrets.Items) != 0 {
				t.Errorf("state Secrets left: %d (%v)", len(secrets.Items), err)
			}
			e.createRemote(t, "default", "foo", map[string]any{"color": "red"})
			if _, err := e.converge(t, "default", "foo"); !errors.Is(err, ErrConflict) {
				t.Errorf("a new kcp object of the same name: %v, want ErrConflict (the orphan is not adopted)", err)
			}
		})
	}
}

// linkKeys returns the labels and annotations of obj that tie a copy to a
// kcp object.
func linkKeys(obj interface {
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}) []string {
	var found []string
	for _, k := range []string{keys.RemoteObjectCluster, keys.RemoteObjectNameHash, keys.RemoteObjectNamespaceHash, keys.AgentName} {
		if _, ok := obj.GetLabels()[k]; ok {
			found = append(found, k)
		}
	}
	for _, k := range []string{keys.RemoteObjectName, keys.RemoteObjectNamespace, keys.RemoteObjectWorkspacePath, keys.RemoteObjectKind} {
		if _, ok := obj.GetAnnotations()[k]; ok {
			found = append(found, k)
		}
	}
	return found
}

func ptr[T any](v T) *T { return &v }

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestSyncer_related_sourcePropagation: the copy of a kcp-origin related
// object goes as its source's own annotation says, whether the source or
// its primary is deleted: foreground is passed on, orphan keeps the copy;
// the source's finalizer and the records go either way.
func TestSyncer_related_sourcePropagation(t *testing.T) {
	for _, deleteSource := range []bool{true, false} {
		for _, policy := range []string{"foreground", "orphan"} {
			name := policy + " primary deleted"
			if deleteSource {
				name = policy + " source deleted"
			}
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				var policies []metav1.DeletionPropagation
				source := configMap("default", "app-config", map[string]string{"key": "value"})
				source.SetAnnotations(map[string]string{keys.DeletionPropagationPolicy: policy})
				e := newRelatedEnv(t, relatedEnvOptions{
					rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
					kcpObjects: []ctrlruntimeclient.Object{source},
					serviceFuncs: interceptor.Funcs{Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
						if obj.GetName() == "app-config" {
							o := &ctrlruntimeclient.DeleteOptions{}
							o.ApplyOptions(opts)
							policies = append(policies, ptrValue(o.PropagationPolicy))
						}
						return c.Delete(ctx, obj, opts...)
					}},
				})
				e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
				e.mustConverge(t)
				if _, copied := mustGet(t, e.service, configMapGVK, cluster, "app-config").GetAnnotations()[keys.DeletionPropagationPolicy]; copied {
					t.Error("the policy annotation was copied to the service cluster")
				}
				deleted := e.getRemote(t, "default", "foo")
				if deleteSource {
					deleted = mustGet(t, e.kcp, configMapGVK, "default", "app-config")
				}
				if err := e.kcp.Delete(ctx, deleted); err != nil {
					t.Fatal(err)
				}
				e.mustConverge(t)

				kept := get(t, e.service, configMapGVK, cluster, "app-config") != nil
				switch policy {
				case "foreground":
					if kept || !slices.Equal(policies, []metav1.DeletionPropagation{metav1.DeletePropagationForeground}) {
						t.Errorf("copy kept %v, deleted with %v; want it deleted in the foreground", kept, policies)
					}
				case "orphan":
					if !kept || len(policies) != 0 {
						t.Errorf("copy kept %v, deleted with %v; want it kept", kept, policies)
					} else if from := mustGet(t, e.service, configMapGVK, cluster, "app-config").GetAnnotations()[keys.OrphanedFrom]; from != cluster+"/default/app-config" {
						t.Errorf("the kept copy's %s = %q, want %s/default/app-config", keys.OrphanedFrom, from, cluster)
					}
				}
				if src := get(t, e.kcp, configMapGVK, "default", "app-config"); src != nil && len(src.GetFinalizers()) != 0 {
					t.Errorf("the source kept finalizers %v", src.GetFinalizers())
				}
				if names := e.relatedStateNames(t); len(names) != 0 {
					t.Errorf("related state Secrets left: %v", names)
				}
			})
		}
	}
}

// sourceWithPolicy is the kcp ConfigMap app-config with a propagation
// policy.
func sourceWithPolicy(policy string) *corev1.ConfigMap {
	source := configMap("default", "app-config", map[string]string{"key": "value"})
	source.SetAnnotations(map[string]string{keys.DeletionPropagationPolicy: policy})
	return source
}

// TestSyncer_related_foregroundSourceWaitsForItsCopy: a related source
// deleted in the foreground keeps the agent's finalizer (and its record)
// while its copy is being deleted, and is released once the copy is gone.
func TestSyncer_related_foregroundSourceWaitsForItsCopy(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{sourceWithPolicy("foreground")},
		// The service cluster's garbage collector holds the copy while its
		// dependents go.
		serviceFuncs: interceptor.Funcs{Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
			if obj.GetName() == "app-config" {
				cur := typed(configMapGVK)
				if err := c.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				cur.SetFinalizers([]string{metav1.FinalizerDeleteDependents})
				if err := c.Update(ctx, cur); err != nil {
					return err
				}
			}
			return c.Delete(ctx, obj, opts...)
		}},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	src := get(t, e.kcp, configMapGVK, "default", "app-config")
	if src == nil || !slices.Contains(src.GetFinalizers(), "syncagent.kcp.io/cleanup-agent") {
		t.Fatalf("the source was released while its copy is still being deleted: %v", src)
	}
	if cp := get(t, e.service, configMapGVK, cluster, "app-config"); cp == nil || cp.GetDeletionTimestamp() == nil {
		t.Fatalf("the copy is not being deleted: %v", cp)
	}
	// The dependents are gone.
	cp := mustGet(t, e.service, configMapGVK, cluster, "app-config")
	cp.SetFinalizers(nil)
	if err := e.service.Update(ctx, cp); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if src := get(t, e.kcp, configMapGVK, "default", "app-config"); src != nil {
		t.Errorf("the source stays after its copy went: finalizers %v", src.GetFinalizers())
	}
}

// TestSyncer_related_orphanedCopyIsNotTakenOver: the copy an orphaned
// source left is nobody's: a new source of the same name and content is
// refused (ObjectConflict), and its deletion leaves the kept copy alone.
func TestSyncer_related_orphanedCopyIsNotTakenOver(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{sourceWithPolicy("orphan")},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	kept := mustGet(t, e.service, configMapGVK, cluster, "app-config")

	if err := e.kcp.Create(ctx, configMap("default", "app-config", map[string]string{"key": "value"})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); !errors.Is(err, ErrConflict) {
		t.Errorf("a new source whose copy's name is taken by an orphaned copy: %v, want ObjectConflict", err)
	}
	if src := mustGet(t, e.kcp, configMapGVK, "default", "app-config"); len(src.GetFinalizers()) != 0 {
		t.Errorf("the refused source got finalizers %v", src.GetFinalizers())
	}
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	_, _ = e.converge(t, "default", "foo")
	if cp := get(t, e.service, configMapGVK, cluster, "app-config"); cp == nil || cp.GetUID() != kept.GetUID() || cp.GetDeletionTimestamp() != nil {
		t.Errorf("the orphaned copy was taken over or deleted: %v", cp)
	}
}

// TestSyncer_related_unreadableSourceKeepsItsCopy: when the primary goes
// and its source's policy cannot be read, the pass fails; an orphan taken
// for a delete could not be undone.
func TestSyncer_related_unreadableSourceKeepsItsCopy(t *testing.T) {
	ctx := t.Context()
	unreadable := false
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{sourceWithPolicy("orphan")},
		kcpGetKind: "ConfigMap",
		kcpGet: func(key ctrlruntimeclient.ObjectKey) error {
			if unreadable && key.Name == "app-config" {
				return errors.New("connection reset")
			}
			return nil
		},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	unreadable = true
	if _, err := e.converge(t, "default", "foo"); err == nil {
		t.Error("the primary's deletion went on without its source's policy")
	}
	if get(t, e.service, configMapGVK, cluster, "app-config") == nil {
		t.Error("the copy of a source whose policy could not be read was deleted")
	}
}

// TestSyncer_related_sourceGoneBehindAStaleCache: a primary's deletion
// whose workspace cache still shows its kcp-origin source (a watch that
// missed the source's deletion; seen for five minutes after a shard
// restart in the soak) while kcp answers that the source is gone is not
// held up: the source holds nothing any more, and the primary is released
// instead of being passed again and again.
func TestSyncer_related_sourceGoneBehindAStaleCache(t *testing.T) {
	ctx := t.Context()
	gone := false
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
		kcpWrite: func(obj ctrlruntimeclient.Object) error {
			if gone && obj.GetName() == "app-config" {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "app-config")
			}
			return nil
		},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	gone = true
	e.mustConverge(t)
	if obj := e.getRemote(t, "default", "foo"); obj != nil {
		t.Errorf("the primary was not released: finalizers %v", obj.GetFinalizers())
	}
}

// TestSyncer_related_keptCopyOutlivesALeftoverRecord: an orphaned source's
// record outlives the source (its delete failed after the finalizer went);
// the primary's deletion later, reading the record, does not delete the
// copy the consumer asked to keep.
func TestSyncer_related_keptCopyOutlivesALeftoverRecord(t *testing.T) {
	ctx := t.Context()
	failRecordDelete := false
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{sourceWithPolicy("orphan")},
		serviceFuncs: interceptor.Funcs{Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
			if _, ok := obj.(*corev1.Secret); ok && failRecordDelete {
				failRecordDelete = false
				return errors.New("connection reset")
			}
			return c.Delete(ctx, obj, opts...)
		}},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	failRecordDelete = true
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	if _, err := e.syncer.ReleaseDeletedSources(ctx, ws, e.getRemote(t, "default", "foo")); err == nil {
		t.Fatal("the record's delete did not fail: the test cannot leave a record behind")
	}
	if get(t, e.kcp, configMapGVK, "default", "app-config") != nil || len(e.relatedStateNames(t)) == 0 {
		t.Fatalf("want the source gone and its record left, got records %v", e.relatedStateNames(t))
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if cp := get(t, e.service, configMapGVK, cluster, "app-config"); cp == nil || cp.GetDeletionTimestamp() != nil {
		t.Errorf("the kept copy was deleted: %v", cp)
	}
}

// TestSyncer_related_sharedSourceReleasedByItsLastHolder: two primaries of
// the agent hold one source and share its copy; the source is deleted
// while another agent's finalizer keeps it. The first primary's pass
// leaves the copy (the other still records it) and removes the agent's
// finalizer; the second's pass must still delete the copy and its record,
// although the source no longer carries the agent's finalizer.
func TestSyncer_related_sharedSourceReleasedByItsLastHolder(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
	})
	spec := map[string]any{"configName": "app-config"}
	e.createPrimary(t, spec, nil)
	e.mustConverge(t)
	e.createRemote(t, "default", "bar", spec)
	if _, err := e.converge(t, "default", "bar"); err != nil {
		t.Fatal(err)
	}
	src := mustGet(t, e.kcp, configMapGVK, "default", "app-config")
	src.SetFinalizers(append(src.GetFinalizers(), "example.com/other-agent"))
	if err := e.kcp.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"foo", "bar"} {
		if _, err := e.converge(t, "default", name); err != nil {
			t.Fatal(err)
		}
	}
	if fins := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); !slices.Equal(fins, []string{"example.com/other-agent"}) {
		t.Errorf("the source's finalizers: %v, want only the other agent's", fins)
	}
	if cp := get(t, e.service, configMapGVK, cluster, "app-config"); cp != nil && cp.GetDeletionTimestamp() == nil {
		t.Error("the copy of the deleted source is still there")
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related records left: %v", names)
	}
}

// TestSyncer_unknownPropagationWarnedEarly: an unknown deletion
// propagation value is reported while the object lives, once per value,
// not only when it is deleted.
func TestSyncer_unknownPropagationWarnedEarly(t *testing.T) {
	e := newEnv(t)
	e.syncer.WarnedPropagation = once.NewPerValue()
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	warnings := func() int {
		n := 0
		for _, r := range e.events {
			if r == ReasonInvalidDeletionPropagation {
				n++
			}
		}
		return n
	}
	for _, step := range []struct {
		value string // "" removes the annotation
		want  int    // warnings so far
	}{{"Orphan", 1}, {"Orphan", 1}, {"delete", 2}, {"orphan", 2}, {"Orphan", 3}, {"", 3}} {
		obj := e.getRemote(t, "default", "foo")
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if step.value == "" {
			delete(a, keys.DeletionPropagationPolicy)
		} else {
			a[keys.DeletionPropagationPolicy] = step.value
		}
		obj.SetAnnotations(a)
		if err := e.kcp.Update(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
		if _, err := e.converge(t, "default", "foo"); err != nil {
			t.Fatal(err)
		}
		if got := warnings(); got != step.want {
			t.Fatalf("after %q: %d InvalidDeletionPropagation warnings, want %d", step.value, got, step.want)
		}
	}
}
