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
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestSyncer_related_kcpOriginCopy(t *testing.T) {
	source := configMap("default", "app-config", map[string]string{"key": "value"})
	source.Labels = map[string]string{
		"app":                                    "web",
		"syncagent.kcp.io/agent-name":            "someone",
		"syncagent.kcp.io/object-state":          "true",
		"syncagent.kcp.io/remote-object-cluster": "xyz",
		"claimed.internal.apis.kcp.io/abc":       "x",
	}
	source.Annotations = map[string]string{
		"note":           "kept",
		"kcp.io/cluster": cluster,
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
		"syncagent.kcp.io/remote-object-name":              "x",
		annotationPfx + "x.0":                              "{}",
	}
	source.Finalizers = []string{"example.com/other"}
	source.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}}
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{source},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)

	gotSource := mustGet(t, e.kcp, configMapGVK, "default", "app-config")
	if diff := cmp.Diff([]string{"example.com/other", ownFinalizer}, gotSource.GetFinalizers()); diff != "" {
		t.Errorf("source finalizers (-want +got):\n%s", diff)
	}
	dest := &corev1.ConfigMap{}
	if err := e.service.Get(t.Context(), types.NamespacedName{Namespace: cluster, Name: "app-config"}, dest); err != nil {
		t.Fatalf("no copy on the service cluster: %v", err)
	}
	got := map[string]any{
		"labels": dest.Labels, "annotations": dest.Annotations, "data": dest.Data,
		"finalizers": dest.Finalizers, "ownerReferences": dest.OwnerReferences,
	}
	want := map[string]any{
		"labels": map[string]string{"app": "web"}, "annotations": map[string]string{"note": "kept"}, "data": map[string]string{"key": "value"},
		"finalizers": []string(nil), "ownerReferences": []metav1.OwnerReference(nil),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{
		"Thing default/foo: ObjectAccepted",
		"Thing default/foo: ObjectPlaced",
		"ConfigMap default/app-config: ObjectAccepted",
		"ConfigMap default/app-config: ObjectPlaced",
	}, e.log); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{relatedState("config", "kcp", configMapGVK, "default", "app-config")}, e.relatedStateNames(t)); diff != "" {
		t.Errorf("related state Secrets (-want +got):\n%s", diff)
	}
	if a := relatedAnnotations(e.getRemote(t, "default", "foo")); len(a) != 0 {
		t.Errorf("kcp-origin objects were recorded in the primary's annotations: %v", a)
	}
	e.assertSteady(t)
}

func TestSyncer_related_serviceOriginCopyAndAnnotations(t *testing.T) {
	e := newRelatedEnv(t, relatedEnvOptions{
		rels: []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
		serviceObjs: []ctrlruntimeclient.Object{
			credential(serviceCredGVK, cluster, "b-creds", map[string]any{"user": "b"}, nil),
			credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil),
		},
	})
	e.createPrimary(t, map[string]any{"credNames": []any{"b-creds", "a-creds", "missing"}}, map[string]string{
		annotationPfx + "creds.2": "stale",
		annotationPfx + "gone.0":  "stale",
		"unrelated":               "kept",
	})
	e.mustConverge(t)

	for _, name := range []string{"a-creds", "b-creds"} {
		copied := mustGet(t, e.kcp, kcpCredGVK, "default", name)
		if diff := cmp.Diff(map[string]any{"user": strings.TrimSuffix(name, "-creds")}, copied.Object["spec"]); diff != "" {
			t.Errorf("spec of the kcp copy %s (-want +got):\n%s", name, diff)
		}
		if l := copied.GetLabels(); len(l) != 0 {
			t.Errorf("the kcp copy %s carries labels %v", name, l)
		}
		if f := mustGet(t, e.service, serviceCredGVK, cluster, name).GetFinalizers(); len(f) != 0 {
			t.Errorf("the service-origin source %s got finalizers %v", name, f)
		}
	}
	primary := e.getRemote(t, "default", "foo")
	wantAnnotations := map[string]string{
		annotationPfx + "creds.0": `{"namespace":"default","name":"a-creds","apiVersion":"kcp.example.com/v1","kind":"Credential"}`,
		annotationPfx + "creds.1": `{"namespace":"default","name":"b-creds","apiVersion":"kcp.example.com/v1","kind":"Credential"}`,
	}
	if diff := cmp.Diff(wantAnnotations, relatedAnnotations(primary)); diff != "" {
		t.Errorf("related-resources annotations (-want +got):\n%s", diff)
	}
	if primary.GetAnnotations()["unrelated"] != "kept" {
		t.Errorf("other annotations were touched: %v", primary.GetAnnotations())
	}
	if diff := cmp.Diff([]string{
		"Thing default/foo: ObjectAccepted",
		"Thing default/foo: ObjectPlaced",
		"Credential default/a-creds: ObjectPlaced",
		"Credential default/b-creds: ObjectPlaced",
	}, e.log); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	e.assertSteady(t)

	// One object fewer: its annotation goes, its kcp copy stays.
	e.setPrimarySpec(t, "credNames", []any{"b-creds"})
	e.mustConverge(t)
	wantAnnotations = map[string]string{
		annotationPfx + "creds.0": `{"namespace":"default","name":"b-creds","apiVersion":"kcp.example.com/v1","kind":"Credential"}`,
	}
	if diff := cmp.Diff(wantAnnotations, relatedAnnotations(e.getRemote(t, "default", "foo"))); diff != "" {
		t.Errorf("related-resources annotations after dropping a-creds (-want +got):\n%s", diff)
	}
	mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")
	// The record of a-creds stays with its copy (selected again, it
	// updates the copy).
	wantState := []string{relatedState("creds", "service", serviceCredGVK, cluster, "a-creds"), relatedState("creds", "service", serviceCredGVK, cluster, "b-creds")}
	slices.Sort(wantState)
	if diff := cmp.Diff(wantState, e.relatedStateNames(t)); diff != "" {
		t.Errorf("related state Secrets (-want +got):\n%s", diff)
	}
	e.assertSteady(t)
}

// twoCredsEnv is an env with the creds entry, the service-side Credentials
// a-creds and b-creds, and write answering the kcp client's creates and
// patches first.
func twoCredsEnv(t *testing.T, write func(obj ctrlruntimeclient.Object) error) *relatedEnv {
	t.Helper()
	return newRelatedEnv(t, relatedEnvOptions{
		rels: []syncagentv1alpha1.RelatedResourceSpec{credsEntry()},
		serviceObjs: []ctrlruntimeclient.Object{
			credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, nil),
			credential(serviceCredGVK, cluster, "b-creds", map[string]any{"user": "b"}, nil),
		},
		kcpWrite: write,
	})
}

// TestSyncer_related_refusedByKcp: kcp refuses (403) to write one related
// object into the workspace (the consumer's claim selector excludes it):
// the pass goes on with the others, ends with a RefusedError that names
// it, records no state for it, and places it once kcp accepts it. A
// refused update keeps the copy's annotation on the primary.
func TestSyncer_related_refusedByKcp(t *testing.T) {
	refuse := true
	e := twoCredsEnv(t, func(obj ctrlruntimeclient.Object) error {
		if refuse && obj.GetName() == "a-creds" {
			return apierrors.NewForbidden(schema.GroupResource{Group: "kcp.example.com", Resource: "credentials"}, obj.GetName(),
				errors.New("object does not match required labels"))
		}
		return nil
	})
	e.createPrimary(t, map[string]any{"credNames": []any{"a-creds", "b-creds"}}, nil)
	_, err := e.converge(t, "default", "foo")
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("err = %v, want a RefusedError", err)
	}
	if diff := cmp.Diff(&RefusedError{Identifier: "creds", Kind: "Credential", Namespace: "default", Name: "a-creds", Err: refused.Err}, refused); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
	if get(t, e.kcp, kcpCredGVK, "default", "a-creds") != nil {
		t.Error("the refused object exists in kcp")
	}
	mustGet(t, e.kcp, kcpCredGVK, "default", "b-creds")
	if diff := cmp.Diff([]string{relatedState("creds", "service", serviceCredGVK, cluster, "b-creds")}, e.relatedStateNames(t)); diff != "" {
		t.Errorf("related state Secrets (-want +got):\n%s", diff)
	}

	refuse = false
	e.mustConverge(t)
	mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")
	e.assertSteady(t)
	placed := relatedAnnotations(e.getRemote(t, "default", "foo"))

	// The service side changes a-creds; kcp refuses the update now.
	refuse = true
	src := mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")
	src.Object["spec"] = map[string]any{"user": "a2"}
	if err := e.service.Update(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); !errors.As(err, &refused) || !refused.Existing {
		t.Fatalf("err = %v, want a RefusedError of an existing copy", err)
	}
	if diff := cmp.Diff(placed, relatedAnnotations(e.getRemote(t, "default", "foo"))); diff != "" {
		t.Errorf("related-resources annotations after a refused update (-want +got):\n%s", diff)
	}
}

// TestSyncer_related_hiddenCopyIsARefusal: kcp says the copy exists, but
// the workspace's server does not show it either (kcp 0.32: the consumer
// removed the label their claim selector asks for from our copy, which
// hides it): a refusal with backoff, not a prompt re-check forever. A
// hidden copy the agent wrote keeps its annotation on the primary.
func TestSyncer_related_hiddenCopyIsARefusal(t *testing.T) {
	hide := map[string]bool{}
	e := twoCredsEnv(t, func(obj ctrlruntimeclient.Object) error {
		if hide[obj.GetName()] {
			return apierrors.NewAlreadyExists(schema.GroupResource{Group: "kcp.example.com", Resource: "credentials"}, obj.GetName())
		}
		return nil
	})
	pass := func() error {
		t.Helper()
		for range 5 { // the first passes add the finalizer and create the local copy
			res, err := e.syncer.Process(t.Context(), Workspace{Client: e.kcp, Live: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
			if err != nil || !res.Requeue {
				return err
			}
		}
		t.Fatal("no steady pass within 5")
		return nil
	}

	// Never placed: a-creds exists in kcp only where the agent cannot see it.
	hide["a-creds"] = true
	e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
	var refused *RefusedError
	if err := pass(); !errors.As(err, &refused) || refused.Name != "a-creds" || refused.Existing {
		t.Fatalf("err = %v, want a RefusedError for a-creds (not an existing copy of ours)", err)
	}

	// Placed, then hidden: the record says the copy is ours.
	hide["a-creds"] = false
	e.setPrimarySpec(t, "credNames", []any{"b-creds"})
	if err := pass(); err != nil {
		t.Fatal(err)
	}
	placed := relatedAnnotations(e.getRemote(t, "default", "foo"))
	if len(placed) != 1 {
		t.Fatalf("annotations %v, want the one of b-creds", placed)
	}
	hide["b-creds"] = true
	if err := e.kcp.Delete(t.Context(), get(t, e.kcp, kcpCredGVK, "default", "b-creds")); err != nil { // out of the agent's sight
		t.Fatal(err)
	}
	if err := pass(); !errors.As(err, &refused) || refused.Name != "b-creds" || !refused.Existing {
		t.Fatalf("err = %v, want a RefusedError for our hidden copy b-creds", err)
	}
	if diff := cmp.Diff(placed, relatedAnnotations(e.getRemote(t, "default", "foo"))); diff != "" {
		t.Errorf("related-resources annotations of a hidden copy (-want +got):\n%s", diff)
	}
}

// TestRefusals: every RefusedError of a joined tree, in order.
func TestRefusals(t *testing.T) {
	a, b := &RefusedError{Name: "a"}, &RefusedError{Name: "b"}
	err := errors.Join(fmt.Errorf("first: %w", a), ErrConflict, errors.Join(b))
	if diff := cmp.Diff([]*RefusedError{a, b}, Refusals(err)); diff != "" {
		t.Errorf("Refusals (-want +got):\n%s", diff)
	}
	if got := Refusals(ErrConflict); got != nil {
		t.Errorf("Refusals(ErrConflict) = %v, want none", got)
	}
}

func TestSyncer_related_threeWayMerge(t *testing.T) {
	ctx := t.Context()
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value", "dropped": "soon"})},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	e.mustConverge(t)

	// The service side adds a field of its own.
	dest := &corev1.ConfigMap{}
	if err := e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "app-config"}, dest); err != nil {
		t.Fatal(err)
	}
	dest.Data["extra"] = "service"
	if err := e.service.Update(ctx, dest); err != nil {
		t.Fatal(err)
	}
	// The origin changes a field and removes another.
	source := &corev1.ConfigMap{}
	if err := e.kcp.Get(ctx, types.NamespacedName{Namespace: "default", Name: "app-config"}, source); err != nil {
		t.Fatal(err)
	}
	source.Data = map[string]string{"key": "changed"}
	if err := e.kcp.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	e.log = nil
	e.mustConverge(t)

	if err := e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "app-config"}, dest); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"key": "changed", "extra": "service"}, dest.Data); diff != "" {
		t.Errorf("copy data (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ConfigMap default/app-config: ObjectSynced"}, e.log); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	e.assertSteady(t)
}

func TestSyncer_related_existingDestinationWithoutState(t *testing.T) {
	testcases := []struct {
		name   string
		origin syncagentv1alpha1.RelatedResourceOrigin
		// existing is the destination that is there before the first sync.
		existingData map[string]string
		wantConflict bool
	}{
		{name: "kcp origin, identical copy is adopted", origin: "kcp", existingData: map[string]string{"key": "value"}},
		{name: "kcp origin, different copy is refused", origin: "kcp", existingData: map[string]string{"key": "theirs"}, wantConflict: true},
		{name: "service origin, identical copy is adopted", origin: "service", existingData: map[string]string{"key": "value"}},
		{name: "service origin, different copy is refused", origin: "service", existingData: map[string]string{"key": "theirs"}, wantConflict: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			rel := configEntry()
			rel.Origin = tc.origin
			opts := relatedEnvOptions{rels: []syncagentv1alpha1.RelatedResourceSpec{rel}}
			source := configMap("default", "app-config", map[string]string{"key": "value"})
			existing := configMap(cluster, "app-config", tc.existingData)
			originClient := func(e *relatedEnv) ctrlruntimeclient.Client { return e.kcp }
			destClient := func(e *relatedEnv) ctrlruntimeclient.Client { return e.service }
			if tc.origin == "kcp" {
				opts.kcpObjects, opts.serviceObjs = []ctrlruntimeclient.Object{source}, []ctrlruntimeclient.Object{existing}
			} else {
				source.Namespace, existing.Namespace = cluster, "default"
				opts.kcpObjects, opts.serviceObjs = []ctrlruntimeclient.Object{existing}, []ctrlruntimeclient.Object{source}
				originClient, destClient = destClient, originClient
			}
			e := newRelatedEnv(t, opts)
			e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
			before := mustGet(t, destClient(e), configMapGVK, existing.Namespace, "app-config")

			_, err := e.converge(t, "default", "foo")
			after := mustGet(t, destClient(e), configMapGVK, existing.Namespace, "app-config")
			if after.GetResourceVersion() != before.GetResourceVersion() {
				t.Errorf("the existing destination was written: %v", after.Object)
			}
			if tc.wantConflict {
				if !errors.Is(err, ErrConflict) {
					t.Fatalf("err = %v, want ErrConflict", err)
				}
				if last := e.log[len(e.log)-1]; last != "Thing default/foo: ObjectConflict" {
					t.Errorf("last event = %q, want ObjectConflict on the primary", last)
				}
				if names := e.relatedStateNames(t); len(names) != 0 {
					t.Errorf("related state was written for a refused object: %v", names)
				}
				if a := relatedAnnotations(e.getRemote(t, "default", "foo")); len(a) != 0 {
					t.Errorf("a refused object was recorded in the annotations: %v", a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(e.relatedStateNames(t)) != 1 {
				t.Errorf("related state Secrets = %v, want one", e.relatedStateNames(t))
			}
			e.assertSteady(t)

			// Adopted: origin changes now flow.
			src := mustGet(t, originClient(e), configMapGVK, source.Namespace, "app-config")
			src.Object["data"] = map[string]any{"key": "changed"}
			if err := originClient(e).Update(ctx, src); err != nil {
				t.Fatal(err)
			}
			e.mustConverge(t)
			if got := mustGet(t, destClient(e), configMapGVK, existing.Namespace, "app-config").Object["data"]; !cmp.Equal(got, map[string]any{"key": "changed"}) {
				t.Errorf("adopted copy data = %v, want the changed origin data", got)
			}
		})
	}
}

// TestSyncer_related_refusedSourceKeepsNoFinalizer: a kcp-origin source
// whose copy is refused (no state, the destination differs) must not carry
// our finalizer: nothing of ours exists to clean up, and once the primary
// stops selecting it nothing would ever release it.
func TestSyncer_related_refusedSourceKeepsNoFinalizer(t *testing.T) {
	e := newRelatedEnv(t, relatedEnvOptions{
		rels:        []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
		kcpObjects:  []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
		serviceObjs: []ctrlruntimeclient.Object{configMap(cluster, "app-config", map[string]string{"key": "theirs"})},
	})
	e.createPrimary(t, map[string]any{"configName": "app-config"}, nil)
	if _, err := e.converge(t, "default", "foo"); !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the refused source has finalizers %v", f)
	}

	// The primary selects nothing any more.
	e.setPrimarySpec(t, "configName", "")
	e.mustConverge(t)
	if f := mustGet(t, e.kcp, configMapGVK, "default", "app-config").GetFinalizers(); len(f) != 0 {
		t.Errorf("the deselected source still has finalizers %v", f)
	}
}

func TestSyncer_related_syncStatus(t *testing.T) {
	testcases := []struct {
		name string
		opts relatedEnvOptions
		// wantStatus is the status of the kcp copy; wantWarning an Event.
		wantStatus  any
		wantWarning bool
	}{
		{name: "status is copied through the status subresource", wantStatus: map[string]any{"phase": "Ready"}},
		{name: "no status subresource in discovery: one warning", opts: relatedEnvOptions{kcpCredsWithoutHasStatus: true}, wantWarning: true},
		{name: "the status subresource answers 404: one warning", opts: relatedEnvOptions{withoutKcpCredStatus: true}, wantWarning: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			rel := credsEntry()
			rel.SyncStatus = true
			tc.opts.rels = []syncagentv1alpha1.RelatedResourceSpec{rel}
			tc.opts.serviceObjs = []ctrlruntimeclient.Object{credential(serviceCredGVK, cluster, "a-creds", map[string]any{"user": "a"}, map[string]any{"phase": "Ready"})}
			e := newRelatedEnv(t, tc.opts)
			e.createPrimary(t, map[string]any{"credNames": []any{"a-creds"}}, nil)
			e.mustConverge(t)
			e.assertSteady(t)

			copied := mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds")
			if diff := cmp.Diff(tc.wantStatus, copied.Object["status"]); diff != "" {
				t.Errorf("status of the kcp copy (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"user": "a"}, copied.Object["spec"]); diff != "" {
				t.Errorf("spec of the kcp copy (-want +got):\n%s", diff)
			}
			warnings := 0
			for _, l := range e.log {
				if l == "Credential default/a-creds: StatusSubresourceMissing" {
					warnings++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantWarning]; warnings != want {
				t.Errorf("StatusSubresourceMissing events = %d, want %d (events %v)", warnings, want, e.log)
			}
			if !tc.wantWarning {
				// A status change flows too.
				src := mustGet(t, e.service, serviceCredGVK, cluster, "a-creds")
				src.Object["status"] = map[string]any{"phase": "Rotating"}
				if err := e.service.Status().Update(ctx, src); err != nil {
					t.Fatal(err)
				}
				e.mustConverge(t)
				if got := mustGet(t, e.kcp, kcpCredGVK, "default", "a-creds").Object["status"]; !cmp.Equal(got, map[string]any{"phase": "Rotating"}) {
					t.Errorf("status after the change = %v", got)
				}
			}
			// The state never holds the status.
			var secrets corev1.SecretList
			if err := e.service.List(ctx, &secrets, ctrlruntimeclient.HasLabels{"syncagent.kcp.io/related-identifier"}); err != nil || len(secrets.Items) != 1 {
				t.Fatalf("related state Secrets: %d, %v", len(secrets.Items), err)
			}
			if s := string(secrets.Items[0].Data["state"]); strings.Contains(s, "status") {
				t.Errorf("the related state holds the status: %s", s)
			}
		})
	}
}
