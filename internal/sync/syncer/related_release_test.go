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
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestSyncer_related_primaryDeletion(t *testing.T) {
	ctx := t.Context()
	cleanupCreds := credsEntry()
	cleanupCreds.Cleanup = true
	keep := syncagentv1alpha1.RelatedResourceSpec{
		Identifier: "keep", Origin: "service", Kind: "ConfigMap", Object: referenceTo("spec.keepName"),
	}
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry(), cleanupCreds, keep},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
		serviceObjs: []ctrlruntimeclient.Object{
			credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil),
			configMap(cluster, "kept", map[string]string{"k": "v"}),
		},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config", "credNames": []any{"a-creds"}, "keepName": "kept"}, nil)
	e.mustConverge(t)
	if n := len(e.relatedStateNames(t)); n != 3 {
		t.Fatalf("related state Secrets after the sync: %d, want 3", n)
	}
	mustGet(t, e.service, configMapGVK, cluster, "app-config")
	mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")
	mustGet(t, e.kcp, configMapGVK, "default", "kept")

	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.log = nil
	e.mustConverge(t)

	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the primary still exists")
	}
	if get(t, e.service, configMapGVK, cluster, "app-config") != nil {
		t.Error("the copy of the kcp-origin ConfigMap was not deleted")
	}
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the kcp-origin source kept finalizers %v", f)
	}
	if get(t, e.kcp, kcpCredGVK, "default", "a-creds") != nil {
		t.Error("the kcp copy of a cleanup entry was not deleted")
	}
	mustGet(t, e.kcp, configMapGVK, "default", "kept")
	mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")
	mustGet(t, e.service, configMapGVK, cluster, "kept")
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related state Secrets left: %v", names)
	}
	var secrets corev1.SecretList
	if err := e.service.List(ctx, &secrets, ctrlruntimeclient.InNamespace("agent-ns")); err != nil || len(secrets.Items) != 0 {
		t.Errorf("state Secrets left: %d (%v)", len(secrets.Items), err)
	}
	for _, want := range []string{"ConfigMap default/app-config: ObjectDeleted", "Thing default/foo: ObjectDeleted"} {
		if !slices.Contains(e.log, want) {
			t.Errorf("events %v lack %q", e.log, want)
		}
	}
}

// Two primaries selecting the same related objects: deleting the first
// keeps the shared copies and the source's finalizer for the second; the
// second's deletion removes them.
func TestSyncer_related_sharedObjectsOutliveTheFirstPrimary(t *testing.T) {
	ctx := t.Context()
	cleanupCreds := credsEntry()
	cleanupCreds.Cleanup = true
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{configEntry(), cleanupCreds},
		kcpObjects:  []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
		serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
	})
	spec := map[string]any{"configName": "app-config", "credNames": []any{"a-creds"}}
	e.createRemote(t, "default", "foo", spec)
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatalf("sync foo: %v", err)
	}
	// The service side changes the copy (as an API server does when it
	// turns stringData into data): bar, which has no state for it yet,
	// adopts it as the copy foo's record names, instead of refusing it.
	copied := mustGet(t, e.service, configMapGVK, cluster, "app-config")
	copied.Object["data"].(map[string]any)["added"] = "by the service"
	if err := e.service.Update(ctx, copied); err != nil {
		t.Fatal(err)
	}
	e.createRemote(t, "default", "bar", spec)
	if _, err := e.converge(t, "default", "bar"); err != nil {
		t.Fatalf("sync bar: %v", err)
	}
	if got := mustGet(t, e.service, configMapGVK, cluster, "app-config").Object["data"]; !cmp.Equal(got, map[string]any{"key": "value", "added": "by the service"}) {
		t.Errorf("shared copy's data after bar's adoption = %v", got)
	}
	if n := len(e.relatedStateNames(t)); n != 4 {
		t.Fatalf("related state Secrets after the sync: %d, want 4", n)
	}

	deletePrimary := func(name string) {
		t.Helper()
		if err := e.kcp.Delete(ctx, e.getRemote(t, "default", name)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.converge(t, "default", name); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
		if e.getRemote(t, "default", name) != nil {
			t.Fatalf("primary %s still exists", name)
		}
	}

	deletePrimary("foo")
	if get(t, e.service, configMapGVK, cluster, "app-config") == nil {
		t.Error("the copy bar still uses was deleted with foo")
	}
	if get(t, e.kcp, kcpCredGVK, "default", "a-creds") == nil {
		t.Error("the kcp copy bar still uses was deleted with foo")
	}
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); !slices.Contains(f, ownFinalizer) {
		t.Errorf("the source bar still uses lost its finalizer: %v", f)
	}
	if n := len(e.relatedStateNames(t)); n != 2 {
		t.Errorf("related state Secrets after deleting foo: %d, want bar's 2", n)
	}
	if writes, err := e.converge(t, "default", "bar"); err != nil || writes != 0 {
		t.Errorf("bar after foo's deletion: %d writes (%v), want 0", writes, err)
	}

	deletePrimary("bar")
	if get(t, e.service, configMapGVK, cluster, "app-config") != nil {
		t.Error("the copy was not deleted with the last primary")
	}
	if get(t, e.kcp, kcpCredGVK, "default", "a-creds") != nil {
		t.Error("the kcp copy of a cleanup entry was not deleted with the last primary")
	}
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the source kept finalizers %v after the last primary", f)
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related state Secrets left: %v", names)
	}
}

// Two primaries sharing a kcp-origin source are deleted at the same time:
// the second one's whole pass runs while the first one is between its
// check ("bar still holds it") and its record's deletion. Whoever looks
// last must release the source, or its finalizer stays forever.
func TestSyncer_related_sharedSourceReleasedWhenBothGoAtOnce(t *testing.T) {
	ctx := t.Context()
	fooRecord := relatedState("config", "kcp", configMapGVK, "default", "app-config")
	var between func()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
		serviceFuncs: interceptor.Funcs{Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
			if f := between; f != nil && obj.GetName() == fooRecord {
				between = nil
				f()
			}
			return c.Delete(ctx, obj, opts...)
		}},
	})
	for _, name := range []string{"foo", "bar"} {
		e.createRemote(t, "default", name, map[string]any{"configName": "app-config"})
		if _, err := e.converge(t, "default", name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
		if err := e.kcp.Delete(ctx, e.getRemote(t, "default", name)); err != nil {
			t.Fatal(err)
		}
	}
	between = func() {
		if _, err := e.converge(t, "default", "bar"); err != nil {
			t.Errorf("delete bar: %v", err)
		}
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatalf("delete foo: %v", err)
	}
	if between != nil {
		t.Fatal("the test did not interleave the two deletions")
	}
	for _, name := range []string{"foo", "bar"} {
		if e.getRemote(t, "default", name) != nil {
			t.Errorf("primary %s still exists", name)
		}
	}
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the shared source kept finalizers %v after both primaries went", f)
	}
	if get(t, e.service, configMapGVK, cluster, "app-config") != nil {
		t.Error("the shared copy outlived both primaries")
	}
}

// Records that must not keep a kcp-origin source's finalizer when its last
// real holder goes: the record of a primary that is gone (an orphan), and a
// record that names the source only as the kcp copy of a service object.
func TestSyncer_related_sourceNotHeldByOrphansOrCopies(t *testing.T) {
	back := syncagentv1alpha1.RelatedResourceSpec{
		Identifier: "back", Origin: "service", Kind: "ConfigMap", Object: referenceTo("spec.backName"),
	}
	testcases := []struct {
		name string
		// bar's spec, and whether bar disappears without its deletion being processed
		barSpec map[string]any
		barGone bool
	}{
		{name: "orphaned record of a primary that is gone", barSpec: map[string]any{"configName": "app-config"}, barGone: true},
		{name: "record naming the source as a copy", barSpec: map[string]any{"backName": "app-config"}},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			e := newRelatedEnv(t, relatedEnvOptions{
				rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry(), back},
				kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
			})
			e.createRemote(t, "default", "foo", map[string]any{"configName": "app-config"})
			if _, err := e.converge(t, "default", "foo"); err != nil {
				t.Fatalf("sync foo: %v", err)
			}
			e.createRemote(t, "default", "bar", tc.barSpec)
			if _, err := e.converge(t, "default", "bar"); err != nil {
				t.Fatalf("sync bar: %v", err)
			}
			if n := len(e.relatedStateNames(t)); n != 2 {
				t.Fatalf("related state Secrets: %d, want 2 (one per primary)", n)
			}
			if tc.barGone {
				e.vanish(t, "default", "bar")
			}

			if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
				t.Fatal(err)
			}
			if _, err := e.converge(t, "default", "foo"); err != nil {
				t.Fatalf("delete foo: %v", err)
			}
			if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
				t.Errorf("the source kept finalizers %v after its last holder went", f)
			}
		})
	}
}

// A related record that cannot be read names no copy: the primary's
// deletion drops it without trying to delete a nameless object, also for
// an entry with cleanup.
func TestSyncer_related_unreadableRecordGoesWithItsPrimary(t *testing.T) {
	ctx := t.Context()
	cleanupConfig := configEntry()
	cleanupConfig.Cleanup = true
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{cleanupConfig},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	record := &corev1.Secret{}
	name := relatedState("config", "kcp", configMapGVK, "default", "app-config")
	if err := e.service.Get(ctx, types.NamespacedName{Namespace: "agent-ns", Name: name}, record); err != nil {
		t.Fatal(err)
	}
	record.Data["record"] = []byte("{")
	if err := e.service.Update(ctx, record); err != nil {
		t.Fatal(err)
	}

	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the primary still exists")
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related state Secrets left: %v", names)
	}
}

func TestSyncer_related_kcpSourceDeleted(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)

	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	if get(t, e.kcp, configMapGVK, "default", "app-config") == nil {
		t.Fatal("the finalizer did not hold the source")
	}
	e.log = nil
	e.mustConverge(t)

	if get(t, e.kcp, configMapGVK, "default", "app-config") != nil {
		t.Error("the source still exists: finalizer not released")
	}
	if get(t, e.service, configMapGVK, cluster, "app-config") != nil {
		t.Error("the copy of the deleted source still exists")
	}
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related state Secrets left: %v", names)
	}
	if diff := cmp.Diff([]string{"ConfigMap default/app-config: ObjectCleanup", "ConfigMap default/app-config: ObjectDeleted"}, e.log); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if e.getRemote(t, "default", "foo") == nil {
		t.Error("the primary was deleted")
	}
	e.assertSteady(t)
}

// TestSyncer_related_noCopyForASourceGoneFromTheServer: a pass whose
// workspace cache still holds a kcp-origin source that was released and
// deleted a moment ago (found by the soak: the copy came back and stayed
// without a source) creates no copy.
func TestSyncer_related_noCopyForASourceGoneFromTheServer(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	stale := fake.NewClientBuilder().WithObjects(mustGet(t, e.kcp, configMapGVK, "default", "app-config"), e.getRemote(t, "default", "foo")).Build()

	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, configMapGVK, "default", "app-config")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if get(t, e.service, configMapGVK, cluster, "app-config") != nil {
		t.Fatal("the copy of the deleted source still exists")
	}
	if _, err := e.syncer.Process(ctx, Workspace{Client: stale, Live: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if get(t, e.service, configMapGVK, cluster, "app-config") != nil {
		t.Error("a copy was created for a source that is gone")
	}
}

func TestSyncer_related_serviceSourceDeletedKeepsKcpCopy(t *testing.T) {
	ctx := t.Context()
	source := credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)
	source.SetFinalizers([]string{"example.com/operator"})
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
		serviceObjs: []ctrlruntimeclient.Object{source},
	})
	e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
	e.mustConverge(t)

	if err := e.service.Delete(ctx, mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")); err != nil {
		t.Fatal(err)
	}
	e.assertSteady(t)
	mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")

	// Gone for good: the annotation goes, the kcp copy stays and so does
	// its record (TestSyncer_related_recreatedServiceSourceUpdatesItsCopy).
	gone := mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")
	gone.SetFinalizers(nil)
	if err := e.service.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")
	if diff := cmp.Diff([]string{relatedState("creds", "service", serviceCredGVK, cluster, "a-creds")}, e.relatedStateNames(t)); diff != "" {
		t.Errorf("related state Secrets (-want +got):\n%s", diff)
	}
	if a := relatedAnnotations(e.getRemote(t, "default", "foo")); len(a) != 0 {
		t.Errorf("annotations left: %v", a)
	}
}

// TestSyncer_related_recreatedServiceSourceUpdatesItsCopy: a service-side
// Secret deleted and created again with other data (an operator rotating
// credentials) updates the kcp copy that stayed; the copy is not refused
// as someone else's. Once the consumer deletes that copy, its record goes.
func TestSyncer_related_recreatedServiceSourceUpdatesItsCopy(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
		serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
	})
	e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
	e.mustConverge(t)

	if err := e.service.Delete(ctx, mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	e.assertSteady(t)
	if err := e.service.Create(ctx, credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "rotated"}, nil)); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if diff := cmp.Diff(map[string]any{"user": "rotated"}, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds").Object["spec"]); diff != "" {
		t.Errorf("spec of the kcp copy after the source came back (-want +got):\n%s", diff)
	}
	e.assertSteady(t)

	// Source and copy gone: nothing is left of them.
	if err := e.service.Delete(ctx, mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if names := e.relatedStateNames(t); len(names) != 0 {
		t.Errorf("related state Secrets left: %v", names)
	}
}
