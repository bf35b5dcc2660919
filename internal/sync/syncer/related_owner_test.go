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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestSyncer_related_consumerObjectInPlaceOfTheCopy: a consumer who
// deletes the kcp copy of a service-origin object that is gone and puts an
// object of their own under its name keeps it: the returning source does
// not merge into it (ObjectConflict), and the primary's deletion with
// cleanup does not delete it.
func TestSyncer_related_consumerObjectInPlaceOfTheCopy(t *testing.T) {
	ctx := t.Context()
	entry := credsEntry()
	entry.Cleanup = true
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{entry},
		serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
	})
	e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
	e.mustConverge(t)
	if err := e.service.Delete(ctx, mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)

	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")); err != nil {
		t.Fatal(err)
	}
	mine := credential(kcpCredGVK, "default", "a-creds", map[string]any{"user": "consumer", "password": "consumer-secret"}, nil)
	if err := e.kcp.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if err := e.service.Create(ctx, credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "service"}, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); !errors.Is(err, ErrConflict) {
		t.Errorf("err = %v, want ErrConflict", err)
	}
	want := map[string]any{"user": "consumer", "password": "consumer-secret"}
	if diff := cmp.Diff(want, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds").Object["spec"]); diff != "" {
		t.Errorf("the consumer's object was changed (-want +got):\n%s", diff)
	}

	primary := e.getRemote(t, "default", "foo")
	if err := e.kcp.Delete(ctx, primary); err != nil {
		t.Fatal(err)
	}
	_, _ = e.converge(t, "default", "foo")
	if get(t, e.kcp, kcpCredGVK, "default", "a-creds") == nil {
		t.Error("the primary's deletion deleted the consumer's object")
	}
}

// TestSyncer_related_laggingRecordIsNoReplacement: a cache that still has
// the record of the copy the agent replaced a moment ago (the consumer had
// deleted it) does not make the new copy someone else's: the record is
// asked from the server before the copy is refused.
func TestSyncer_related_laggingRecordIsNoReplacement(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
		serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
	})
	e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
	e.mustConverge(t)
	var before corev1.SecretList
	if err := e.service.List(ctx, &before, ctrlruntimeclient.InNamespace("agent-ns")); err != nil {
		t.Fatal(err)
	}
	stale := withAgentIndexes(fake.NewClientBuilder()).Build()
	for i := range before.Items {
		sec := before.Items[i].DeepCopy()
		sec.ResourceVersion = ""
		if err := stale.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer deletes the copy; the agent writes a new one.
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	// The source changes while the agent's cache still has the old record.
	src := mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")
	src.Object["spec"] = map[string]any{"user": "changed"}
	if err := e.service.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	e.syncer.State = &state.Store{Client: stale, Live: e.service, Namespace: "agent-ns", AgentName: "agent"}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatalf("a lagging record made the agent's own copy foreign: %v", err)
	}
	if diff := cmp.Diff(map[string]any{"user": "changed"}, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds").Object["spec"]); diff != "" {
		t.Errorf("the copy (-want +got):\n%s", diff)
	}
}

// TestSyncer_related_sharedRecordProvesOnlyItsCopy: another primary's
// record of the same origin does not make an object the consumer put in
// the copy's place ours.
func TestSyncer_related_sharedRecordProvesOnlyItsCopy(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
		serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
	})
	spec := map[string]any{"credNames": []any{"a-creds"}}
	e.createRemote(t, "default", "foo", spec)
	e.createRemote(t, "default", "bar", spec)
	for _, name := range []string{"foo", "bar"} {
		if _, err := e.converge(t, "default", name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Create(ctx, credential(kcpCredGVK, "default", "a-creds", map[string]any{"user": "consumer"}, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); !errors.Is(err, ErrConflict) {
		t.Errorf("err = %v, want ErrConflict", err)
	}
	if diff := cmp.Diff(map[string]any{"user": "consumer"}, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds").Object["spec"]); diff != "" {
		t.Errorf("the consumer's object (-want +got):\n%s", diff)
	}
}

// TestSyncer_related_copyWrittenWithoutItsRecord: a pass that ends after
// the agent wrote a new copy but before its record (the service cluster
// went away) leaves a record that names no copy; the next pass takes the
// new copy as ours and updates it.
func TestSyncer_related_copyWrittenWithoutItsRecord(t *testing.T) {
	ctx := t.Context()
	failRecord := false
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
		serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
		serviceFuncs: interceptor.Funcs{Update: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.UpdateOption) error {
			if _, isSecret := obj.(*corev1.Secret); isSecret && failRecord && obj.GetLabels()["syncagent.kcp.io/related-identifier"] != "" {
				if sec := obj.(*corev1.Secret); strings.Contains(string(sec.Data["record"]), "destinationUID") {
					return apierrors.NewServiceUnavailable("the service cluster went away")
				}
			}
			return c.Update(ctx, obj, opts...)
		}},
	})
	e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
	e.mustConverge(t)
	if err := e.kcp.Delete(ctx, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")); err != nil {
		t.Fatal(err)
	}
	failRecord = true
	if _, err := e.converge(t, "default", "foo"); err == nil {
		t.Fatal("the record write did not fail")
	}
	failRecord = false
	src := mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")
	src.Object["spec"] = map[string]any{"user": "rotated"}
	if err := e.service.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)
	if diff := cmp.Diff(map[string]any{"user": "rotated"}, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds").Object["spec"]); diff != "" {
		t.Errorf("the copy (-want +got):\n%s", diff)
	}
}

// TestSyncer_related_copyOfAnEarlierPrimaryIsTakenOver: a primary deleted
// and created again under its name finds the kcp copy the agent made for
// the first one (service-origin copies stay): it is taken over and
// updated, not refused.
func TestSyncer_related_copyOfAnEarlierPrimaryIsTakenOver(t *testing.T) {
	// The agent's kcp caches keep no managedFields: the copy is read again
	// from the server.
	strip := func(kcp ctrlruntimeclient.Client) ctrlruntimeclient.Client {
		return interceptor.NewClient(kcp.(ctrlruntimeclient.WithWatch), interceptor.Funcs{
			Get: func(ctx context.Context, c ctrlruntimeclient.WithWatch, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
				err := c.Get(ctx, key, obj, opts...)
				obj.SetManagedFields(nil)
				return err
			},
		})
	}
	for name, cache := range map[string]func(ctrlruntimeclient.Client) ctrlruntimeclient.Client{
		"a cache with managedFields": func(kcp ctrlruntimeclient.Client) ctrlruntimeclient.Client { return kcp },
		"a cache without":            strip,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			e := newRelatedEnv(t, relatedEnvOptions{
				rels:        []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
				serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
			})
			e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
			e.mustConverge(t)
			if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
				t.Fatal(err)
			}
			e.mustConverge(t)
			mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")
			if names := e.relatedStateNames(t); len(names) != 0 {
				t.Fatalf("related state after the primary's deletion: %v", names)
			}
			src := mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")
			src.Object["spec"] = map[string]any{"user": "second"}
			if err := e.service.Update(ctx, src); err != nil {
				t.Fatal(err)
			}
			e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
			ws := Workspace{Client: cache(e.kcp), Live: e.kcp, Cluster: cluster}
			for range 10 {
				res, err := e.syncer.Process(ctx, ws, e.getRemote(t, "default", "foo"))
				if err != nil {
					t.Fatal(err)
				}
				if !res.Requeue {
					break
				}
			}
			if diff := cmp.Diff(map[string]any{"user": "second"}, mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds").Object["spec"]); diff != "" {
				t.Errorf("the copy (-want +got):\n%s", diff)
			}
			e.assertSteady(t)
		})
	}
}

// TestSyncer_related_unreadableCopyKeepsItsRecord: when the kcp copy of a
// gone service-origin object cannot be read (its claim withdrawn), or the
// read answers a 404 that says nothing about the copy (a path the virtual
// workspace no longer serves), the pass goes on and the record stays.
func TestSyncer_related_unreadableCopyKeepsItsRecord(t *testing.T) {
	gr := schema.GroupResource{Group: "kcp.example.com", Resource: "credentials"}
	for name, readErr := range map[string]error{
		"forbidden":      apierrors.NewForbidden(gr, "a-creds", errors.New("no claim")),
		"path not found": apierrors.NewGenericServerResponse(404, "GET", gr, "", "the server could not find the requested resource", 0, true),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			failing := false
			e := newRelatedEnv(t, relatedEnvOptions{
				rels:        []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
				serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
				kcpGet: func(ctrlruntimeclient.ObjectKey) error {
					if failing {
						return readErr
					}
					return nil
				},
			})
			e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
			e.mustConverge(t)
			if err := e.service.Delete(ctx, mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")); err != nil {
				t.Fatal(err)
			}
			failing = true
			e.mustConverge(t)
			if names := e.relatedStateNames(t); len(names) != 1 {
				t.Errorf("related state Secrets: %v, want the record kept", names)
			}
		})
	}
}

func TestSyncer_related_deselectedSourceIsReleased(t *testing.T) {
	e := newRelatedEnv(t, relatedEnvOptions{
		rels: []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{
			configMap("default", "app-config", map[string]string{"key": "value"}),
			configMap("default", "new-config", map[string]string{"key": "new"}),
		},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)

	e.setPrimarySpec(t, "configName", "new-config")
	e.mustConverge(t)

	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the deselected source kept finalizers %v", f)
	}
	if diff := cmp.Diff([]string{ownFinalizer}, mustGet(t, e.kcp, configMapGVK, "default", "new-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the new source (-want +got):\n%s", diff)
	}
	// The old copy stays; only its state goes.
	mustGet(t, e.service, configMapGVK, cluster, "app-config")
	mustGet(t, e.service, configMapGVK, cluster, "new-config")
	if diff := cmp.Diff([]string{relatedState("config", "kcp", configMapGVK, "default", "new-config")}, e.relatedStateNames(t)); diff != "" {
		t.Errorf("related state Secrets (-want +got):\n%s", diff)
	}
	e.assertSteady(t)
}

// TestSyncer_related_otherPrimaryKindKeepsItsRelatedState: a primary of
// another PublishedResource with the same namespace and name shares the
// labels of the state Secrets; pruning and deleting this primary's related
// objects must leave the other one's alone.
func TestSyncer_related_otherPrimaryKindKeepsItsRelatedState(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels: []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{
			configMap("default", "app-config", map[string]string{"key": "value"}),
			configMap("default", "gadget-config", map[string]string{"key": "gadget"}),
		},
	})
	// The Gadget default/foo synced its own related ConfigMap.
	gadget := state.Primary{APIVersion: "gadgets.example.com/v1", Kind: "Gadget"}
	gadget.Cluster, gadget.Namespace, gadget.Name = cluster, "default", "foo"
	gadgetRelated := state.Related{Primary: gadget, RelatedRecord: state.RelatedRecord{
		Identifier: "config", OriginSide: "kcp",
		Origin:      state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "gadget-config"},
		Destination: state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: cluster, Name: "gadget-config"},
	}}
	if err := e.syncer.State.PutRelated(ctx, gadgetRelated, map[string]any{"data": map[string]any{"key": "gadget"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.service.Create(ctx, configMap(cluster, "gadget-config", map[string]string{"key": "gadget"})); err != nil {
		t.Fatal(err)
	}
	src := mustGet(t, e.kcp, configMapGVK, "default", "gadget-config")
	src.SetFinalizers([]string{ownFinalizer})
	if err := e.kcp.Update(ctx, src); err != nil {
		t.Fatal(err)
	}

	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	e.mustConverge(t)

	if diff := cmp.Diff([]string{state.RelatedSecretName(gadgetRelated)}, e.relatedStateNames(t)); diff != "" {
		t.Errorf("related state Secrets (-want +got):\n%s", diff)
	}
	mustGet(t, e.service, configMapGVK, cluster, "gadget-config")
	if diff := cmp.Diff([]string{ownFinalizer}, mustGet(t, e.kcp, configMapGVK, "default", "gadget-config").GetFinalizers()); diff != "" {
		t.Errorf("finalizers of the Gadget's source (-want +got):\n%s", diff)
	}
}

// TestSyncer_related_orphanedRecordKeepsNoCopy: two primaries share the
// copies of their related objects; one vanishes without its deletion being
// processed (its record stays, orphaned). When the other is deleted, the
// copies go with it: an orphaned record keeps nothing alive.
func TestSyncer_related_orphanedRecordKeepsNoCopy(t *testing.T) {
	ctx := t.Context()
	cleanupCreds := credsEntry()
	cleanupCreds.Cleanup = true
	cleanupConfig := configEntry()
	cleanupConfig.Cleanup = true
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{cleanupConfig, cleanupCreds},
		kcpObjects:  []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
		serviceObjs: []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil)},
	})
	spec := map[string]any{"configName": "app-config", "credNames": []any{"a-creds"}}
	for _, name := range []string{"foo", "bar"} {
		e.createRemote(t, "default", name, spec)
		if _, err := e.converge(t, "default", name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	e.vanish(t, "default", "bar")
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatalf("delete foo: %v", err)
	}
	if get(t, e.service, configMapGVK, cluster, "app-config") != nil {
		t.Error("the service copy was kept for a primary that is gone")
	}
	if get(t, e.kcp, kcpCredGVK, "default", "a-creds") != nil {
		t.Error("the kcp copy was kept for a primary that is gone")
	}
}

// TestSyncer_related_aliveChecksOnlyItsWorkspace: records of another
// workspace (service-side objects shared across workspaces) are not
// looked up in this one, so they count; a record of this workspace counts
// only if its primary exists, and a 404 about the type, not the object,
// cannot tell.
func TestSyncer_related_aliveChecksOnlyItsWorkspace(t *testing.T) {
	e := newEnv(t)
	e.createRemote(t, "default", "alive", map[string]any{})
	p := fooPrimary()
	record := func(cluster, name string) state.StoredRelated {
		r := state.StoredRelated{Cluster: cluster}
		r.Primary = state.ObjectRef{APIVersion: p.APIVersion, Kind: p.Kind, Namespace: "default", Name: name}
		return r
	}
	records := []state.StoredRelated{record("other-ws", "gone"), record(cluster, "alive"), record(cluster, "gone")}
	got, err := e.syncer.alive(t.Context(), Workspace{Client: e.kcp, Cluster: cluster}, p, records)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Cluster+"/"+r.Primary.Name)
	}
	if want := []string{"other-ws/gone", cluster + "/alive"}; !slices.Equal(names, want) {
		t.Errorf("alive = %v, want %v", names, want)
	}
	typeGone := apierrors.NewNotFound(schema.GroupResource{Group: "kcp.example.com", Resource: "things"}, "")
	if ObjectNotFound(typeGone, "gone") || !ObjectNotFound(apierrors.NewNotFound(schema.GroupResource{}, "gone"), "gone") {
		t.Error("objectNotFound must tell a missing object from a missing type")
	}
}
