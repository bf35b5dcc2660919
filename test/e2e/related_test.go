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
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// agentFinalizer is the finalizer of the fixture's agent (its default
// agent name) on the kcp objects it syncs.
func agentFinalizer(f *framework.Fixture) string {
	return keys.CleanupFinalizerOf(f.Export.Name + "-syncagent")
}

// openThingCRD is the test CRD with a spec that keeps unknown fields, so
// that related references and mutations have room to work.
func openThingCRD() *apiextensionsv1.CustomResourceDefinition { return openCRD("Thing") }

// openCRD is framework.TestCRD with a spec that keeps any field.
func openCRD(kind string) *apiextensionsv1.CustomResourceDefinition {
	crd := framework.TestCRD("example.com", kind, "v1")
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.XPreserveUnknownFields = ptrTo(true)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	return crd
}

func ptrTo[T any](v T) *T { return &v }

// relatedThingsPR publishes Things with three related entries and spec and
// status mutations:
//   - credentials: a Secret created on the service side next to the local
//     copy (owned by it, watched byOwner), copied to kcp, cleaned up;
//   - config: ConfigMaps named by the array spec.configMaps in kcp, copied
//     to the service cluster as Secrets (projection) with a CEL mutation
//     that moves data to stringData;
//   - labelled: service-side ConfigMaps selected by a templated label
//     selector per primary, renamed by a rewrite template; a change of one
//     re-syncs the primaries labelled watched=yes (watch bySelector).
func relatedThingsPR() *syncagentv1alpha1.PublishedResource {
	return thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Mutation = &syncagentv1alpha1.ResourceMutationSpec{
			Spec: []syncagentv1alpha1.ResourceMutation{
				{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: "spec.color", Pattern: "^(.*)$", Replacement: "dark-$1"}},
				{Delete: &syncagentv1alpha1.ResourceDeleteMutation{Path: "spec.secret"}},
				{Template: &syncagentv1alpha1.ResourceTemplateMutation{Path: "spec.origin", Template: "{{ .Self.metadata.name }} & {{ .Value }}"}},
			},
			Status: []syncagentv1alpha1.ResourceMutation{
				{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "status.summary", Expression: `has(self.status) && has(self.status.phase) ? "phase " + self.status.phase : "pending"`}},
			},
		}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{
			{
				Identifier: "credentials", Origin: syncagentv1alpha1.RelatedResourceOriginService, Kind: syncagentv1alpha1.RelatedResourceKindSecret,
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Template: &syncagentv1alpha1.TemplateExpression{Template: "{{ .Object.metadata.name }}-credentials"},
				}},
				Watch:   &syncagentv1alpha1.RelatedResourceWatch{ByOwner: &syncagentv1alpha1.RelatedResourceWatchByOwner{}},
				Cleanup: true,
			},
			{
				Identifier: "config", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Version: "v1", Resource: "configmaps",
				Projection: &syncagentv1alpha1.RelatedResourceProjection{Resource: "secrets"},
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.configMaps"},
				}},
				Mutation: &syncagentv1alpha1.ResourceMutationSpec{Spec: []syncagentv1alpha1.ResourceMutation{
					{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "stringData", Expression: "self.data"}},
					{Delete: &syncagentv1alpha1.ResourceDeleteMutation{Path: "data"}},
				}},
			},
			{
				Identifier: "labelled", Origin: syncagentv1alpha1.RelatedResourceOriginService, Kind: syncagentv1alpha1.RelatedResourceKindConfigMap,
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{
						LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "{{ .RemoteObject.metadata.name }}"}},
						Rewrite:       syncagentv1alpha1.RelatedResourceSelectorRewrite{Template: &syncagentv1alpha1.TemplateExpression{Template: "{{ .Value }}-copy"}},
					},
				}},
				Watch: &syncagentv1alpha1.RelatedResourceWatch{BySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"watched": "yes"}}},
			},
		}
	})
}

func getObject(ctx context.Context, c ctrlruntimeclient.Client, obj ctrlruntimeclient.Object, namespace, name string) error {
	return c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
}

// waitGone waits until obj is deleted.
func waitGone(t *testing.T, c ctrlruntimeclient.Client, obj ctrlruntimeclient.Object, what string) {
	t.Helper()
	framework.WaitFor(t, syncTimeout, what+" to be gone", func(ctx context.Context) (bool, error) {
		err := getObject(ctx, c, obj, obj.GetNamespace(), obj.GetName())
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// waitReleased waits until the kcp ConfigMap has lost our finalizer.
func waitReleased(t *testing.T, f *framework.Fixture, consumer *framework.Workspace, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	framework.WaitFor(t, syncTimeout, name+" released", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, cm, "default", name); err != nil {
			return false, err
		}
		return !controllerutilContains(cm.Finalizers, agentFinalizer(f)) && !controllerutilContains(cm.Finalizers, keys.CleanupFinalizer), nil
	})
}

// TestRelatedResources covers both origins, the three locating mechanisms,
// projection, watches, mutations on spec and status, the annotation on the
// kcp primary, cleanup on and off, and the release of kcp-origin sources.
func TestRelatedResources(t *testing.T) {
	t.Parallel()
	f, consumers, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()},
		[]*syncagentv1alpha1.PublishedResource{relatedThingsPR()}, 1)
	consumer := consumers[0]
	ctx := t.Context()
	svc := f.Service.Client

	// kcp-origin ConfigMaps first, then two primaries.
	for i := 1; i <= 3; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cfg-%d", i)}, Data: map[string]string{"key": fmt.Sprintf("value-%d", i)}}
		framework.Must(t, consumer.Client.Create(ctx, cm), "create ConfigMap")
	}
	// cfg-2 is shared: both primaries name it.
	configMaps := map[string][]any{"a": {"cfg-1", "cfg-2"}, "b": {"cfg-2", "cfg-3"}}
	for _, name := range []string{"a", "b"} {
		thing := newObject(kcpThing, "default", name, map[string]any{"color": "blue", "secret": "s3cret", "origin": "kcp", "configMaps": configMaps[name]})
		// watch.bySelector of "labelled" selects primaries by this label.
		thing.SetLabels(map[string]string{"watched": "yes"})
		framework.Must(t, consumer.Client.Create(ctx, thing), "create Thing %s", name)
	}

	localNS := consumer.ClusterName
	localName := map[string]string{}
	framework.WaitFor(t, syncTimeout, "both local copies", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, svc, consumer.ClusterName)
		if err != nil || len(items) != 2 {
			return false, err
		}
		for _, it := range items {
			localName[it.GetAnnotations()["syncagent.kcp.io/remote-object-name"]] = it.GetName()
		}
		return true, nil
	})

	// Spec mutations: regex, delete, template (no HTML escaping).
	localA := waitLocal(t, svc, localThing, localNS, localName["a"])
	if got, _, _ := unstructured.NestedString(localA.Object, "spec", "color"); got != "dark-blue" {
		t.Errorf("local spec.color = %q, want dark-blue (regex mutation)", got)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(localA.Object, "spec", "secret"); found {
		t.Errorf("local spec.secret exists, want it deleted by the mutation")
	}
	if got, _, _ := unstructured.NestedString(localA.Object, "spec", "origin"); got != "a & kcp" {
		t.Errorf("local spec.origin = %q, want %q (template mutation)", got, "a & kcp")
	}

	// kcp origin, array reference, projected into Secrets with a CEL mutation.
	for i := 1; i <= 3; i++ {
		secret := &corev1.Secret{}
		name := fmt.Sprintf("cfg-%d", i)
		framework.WaitFor(t, syncTimeout, "Secret "+name+" on the service cluster", func(ctx context.Context) (bool, error) {
			return true, getObject(ctx, svc, secret, localNS, name)
		})
		if got := string(secret.Data["key"]); got != fmt.Sprintf("value-%d", i) {
			t.Errorf("Secret %s data.key = %q, want value-%d", name, got, i)
		}
		for k := range secret.Labels {
			if len(k) > 16 && k[:16] == "syncagent.kcp.io" {
				t.Errorf("related copy %s carries agent label %s", name, k)
			}
		}
		cm := &corev1.ConfigMap{}
		framework.Must(t, getObject(ctx, consumer.Client, cm, "default", name), "get ConfigMap")
		if !controllerutilContains(cm.Finalizers, agentFinalizer(f)) {
			t.Errorf("kcp-origin ConfigMap %s lacks the finalizer: %v", name, cm.Finalizers)
		}
	}

	// Service origin, template name, owned by the local copy (watch byOwner).
	creds := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: localNS, Name: localName["a"] + "-credentials",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Thing", Name: localA.GetName(), UID: localA.GetUID()}}},
		Data: map[string][]byte{"password": []byte("first")},
	}
	framework.Must(t, svc.Create(ctx, creds), "create credentials Secret")
	kcpCreds := &corev1.Secret{}
	framework.WaitFor(t, syncTimeout, "the credentials in kcp", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, kcpCreds, "default", "a-credentials"); err != nil {
			return false, ctrlruntimeclient.IgnoreNotFound(err)
		}
		return string(kcpCreds.Data["password"]) == "first", nil
	})
	if len(kcpCreds.OwnerReferences) > 0 {
		t.Errorf("kcp copy carries ownerReferences: %v", kcpCreds.OwnerReferences)
	}
	creds.Data["password"] = []byte("second")
	framework.Must(t, svc.Update(ctx, creds), "update credentials Secret")
	framework.WaitFor(t, syncTimeout, "the credentials change in kcp (watch byOwner)", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, kcpCreds, "default", "a-credentials"); err != nil {
			return false, err
		}
		return string(kcpCreds.Data["password"]) == "second", nil
	})

	// Templated selectors, rendered per primary.
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: localNS, Name: "cm-" + name, Labels: map[string]string{"app": name}},
			Data: map[string]string{"for": name}}
		framework.Must(t, svc.Create(ctx, cm), "create labelled ConfigMap")
	}
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{}
		framework.WaitFor(t, syncTimeout, "cm-"+name+"-copy in kcp", func(ctx context.Context) (bool, error) {
			return true, getObject(ctx, consumer.Client, cm, "default", "cm-"+name+"-copy")
		})
		if cm.Data["for"] != name {
			t.Errorf("cm-%s-copy has data %v, want for=%s", name, cm.Data, name)
		}
	}

	// The kcp primaries list their service-origin related objects.
	thing := &unstructured.Unstructured{}
	thing.SetGroupVersionKind(kcpThing)
	wantAnnotations := map[string]string{
		"related-resources.syncagent.kcp.io/credentials.0": `{"namespace":"default","name":"a-credentials","apiVersion":"v1","kind":"Secret"}`,
		"related-resources.syncagent.kcp.io/labelled.0":    `{"namespace":"default","name":"cm-a-copy","apiVersion":"v1","kind":"ConfigMap"}`,
	}
	framework.WaitFor(t, syncTimeout, "the related-resources annotations on a", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, thing, "default", "a"); err != nil {
			return false, err
		}
		got := map[string]string{}
		for k, v := range thing.GetAnnotations() {
			if len(k) > 34 && k[:34] == "related-resources.syncagent.kcp.io" {
				got[k] = v
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(wantAnnotations), nil
	})
	for k, v := range wantAnnotations {
		if !json.Valid([]byte(v)) {
			t.Errorf("annotation %s is not JSON: %s", k, v)
		}
	}

	// Status mutation (CEL) on the way up.
	framework.Must(t, getObject(ctx, svc, localA, localNS, localName["a"]), "get local a")
	framework.Must(t, unstructured.SetNestedField(localA.Object, "Ready", "status", "phase"), "set phase")
	framework.Must(t, svc.Status().Update(ctx, localA), "update local status")
	framework.WaitFor(t, syncTimeout, "the mutated status in kcp", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, thing, "default", "a"); err != nil {
			return false, err
		}
		summary, _, _ := unstructured.NestedString(thing.Object, "status", "summary")
		return summary == "phase Ready", nil
	})

	// Deleting a: its copies of kcp-origin objects and of the cleanup entry
	// go, the labelled copy (no cleanup) stays, the sources are released;
	// cfg-2, which b also names, keeps its copy (the same object, not a
	// re-created one) and its finalizer.
	sharedCopy := &corev1.Secret{}
	framework.Must(t, getObject(ctx, svc, sharedCopy, localNS, "cfg-2"), "get the service copy of cfg-2")
	framework.Must(t, consumer.Client.Delete(ctx, thing), "delete Thing a")
	waitGone(t, consumer.Client, thing, "Thing a")
	waitGone(t, consumer.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a-credentials"}}, "the kcp credentials copy (cleanup)")
	if err := getObject(ctx, consumer.Client, &corev1.ConfigMap{}, "default", "cm-a-copy"); err != nil {
		t.Errorf("cm-a-copy (no cleanup) should stay in kcp: %v", err)
	}
	waitGone(t, svc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: localNS, Name: "cfg-1"}}, "the service copy of cfg-1")
	waitReleased(t, f, consumer, "cfg-1")
	for _, name := range []string{"cfg-2", "cfg-3"} {
		cm := &corev1.ConfigMap{}
		framework.Must(t, getObject(ctx, consumer.Client, cm, "default", name), "get %s", name)
		if !controllerutilContains(cm.Finalizers, agentFinalizer(f)) {
			t.Errorf("%s (related to b) lost its finalizer when a was deleted", name)
		}
	}
	stillShared := &corev1.Secret{}
	if err := getObject(ctx, svc, stillShared, localNS, "cfg-2"); err != nil || stillShared.UID != sharedCopy.UID {
		t.Errorf("the service copy of cfg-2, which b uses, was deleted with a (uid %s before, %s after, err %v)", sharedCopy.UID, stillShared.UID, err)
	}
	// The state of a's related objects is gone with a's.
	var states corev1.SecretList
	framework.Must(t, svc.List(ctx, &states, ctrlruntimeclient.InNamespace(framework.AgentNamespace),
		ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-name-hash": objmeta.Hash("a")}), "list state Secrets")
	if len(states.Items) != 0 {
		t.Errorf("%d state Secrets of a remain", len(states.Items))
	}

	// Deleting b releases its ConfigMaps and removes their copies.
	thingB := &unstructured.Unstructured{}
	thingB.SetGroupVersionKind(kcpThing)
	framework.Must(t, getObject(ctx, consumer.Client, thingB, "default", "b"), "get Thing b")
	framework.Must(t, consumer.Client.Delete(ctx, thingB), "delete Thing b")
	waitGone(t, consumer.Client, thingB, "Thing b")
	for _, name := range []string{"cfg-2", "cfg-3"} {
		waitGone(t, svc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: localNS, Name: name}}, "the service copy of "+name)
		waitReleased(t, f, consumer, name)
	}
	// A released source can be deleted.
	framework.Must(t, consumer.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg-1"}}), "delete cfg-1")
	waitGone(t, consumer.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg-1"}}, "cfg-1")
}

// TestRelatedReleasedWithPublishedResource: deleting a PublishedResource
// releases the kcp-origin related objects its primaries held, not only the
// primaries (contract §7 #14), so consumers can delete them.
func TestRelatedReleasedWithPublishedResource(t *testing.T) {
	t.Parallel()
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{{
			Identifier: "config", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Kind: syncagentv1alpha1.RelatedResourceKindConfigMap,
			Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.configMaps"},
			}},
		}}
	})
	f, consumers, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()}, []*syncagentv1alpha1.PublishedResource{pr}, 1)
	consumer := consumers[0]
	ctx := t.Context()

	framework.Must(t, consumer.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}, Data: map[string]string{"k": "v"}}), "create ConfigMap")
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "a", map[string]any{"configMaps": []any{"cfg"}})), "create Thing")
	cm := &corev1.ConfigMap{}
	framework.WaitFor(t, syncTimeout, "cfg held by the agent", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, cm, "default", "cfg"); err != nil {
			return false, err
		}
		return controllerutilContains(cm.Finalizers, agentFinalizer(f)), nil
	})
	waitLocal(t, f.Service.Client, corev1.SchemeGroupVersion.WithKind("ConfigMap"), consumer.ClusterName, "cfg")

	framework.Must(t, f.Service.Client.Delete(ctx, pr), "delete the PublishedResource")
	waitReleased(t, f, consumer, "cfg")
	framework.WaitFor(t, syncTimeout, "an ObjectReleased Event on cfg", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, consumer, "default", "cfg")["ObjectReleased"], nil
	})
	framework.Must(t, consumer.Client.Delete(ctx, cm), "delete cfg")
	waitGone(t, consumer.Client, cm, "cfg")
}
