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
	"testing"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

var (
	kcpGadget      = schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"}
	localGadget    = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	providerWidget = schema.GroupVersionKind{Group: "provider.example.com", Version: "v1", Kind: "Widget"}
	localWidget    = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

// createProviderExport publishes Widgets (provider.example.com) from
// another APIExport in ws and returns that export's identity hash.
func createProviderExport(t *testing.T, ws *framework.Workspace, name string) string {
	t.Helper()
	ctx := t.Context()
	ars := &kcpapisv1alpha1.APIResourceSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.widgets.provider.example.com"},
		Spec: kcpapisv1alpha1.APIResourceSchemaSpec{
			Group: "provider.example.com",
			Names: apiextensionsNames("Widget", "widgets"),
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []kcpapisv1alpha1.APIResourceVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:       objectSchema(),
				Subresources: apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	framework.Must(t, ws.Client.Create(ctx, ars), "create the provider's APIResourceSchema")
	export := &kcpapisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kcpapisv1alpha2.APIExportSpec{Resources: []kcpapisv1alpha2.ResourceSchema{{
			Name: "widgets", Group: "provider.example.com", Schema: ars.Name,
			Storage: kcpapisv1alpha2.ResourceSchemaStorage{CRD: &kcpapisv1alpha2.ResourceSchemaStorageCRD{}},
		}}},
	}
	framework.Must(t, ws.Client.Create(ctx, export), "create the provider's APIExport")
	framework.WaitFor(t, syncTimeout, "the provider export's identity", func(ctx context.Context) (bool, error) {
		err := ws.Client.Get(ctx, types.NamespacedName{Name: name}, export)
		return export.Status.IdentityHash != "", err
	})
	return export.Status.IdentityHash
}

// TestRelatedTypes: related objects of a type from the same export (a
// service-side Gadget copied up into the export's own kcp.example.com
// Gadgets) and of a type from another export (kcp-side provider Widgets,
// reached through a permission claim with identityHash), both with
// syncStatus in the direction of their copy.
func TestRelatedTypes(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service.Client

	providerWS := f.Kcp.CreateWorkspace(t, f.Org.Path, framework.RandomName("provider"), "universal")
	identity := createProviderExport(t, providerWS, "widgets")

	widgetCRD := framework.TestCRD("example.com", "Widget", "v1")
	widgetSpec := widgetCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	widgetSpec.XPreserveUnknownFields = ptrTo(true)
	widgetCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = widgetSpec
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{openThingCRD(), framework.TestCRD("example.com", "Gadget", "v1"), widgetCRD} {
		f.Service.InstallCRD(t, crd)
	}
	things := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{
			{
				Identifier: "gadget", Origin: syncagentv1alpha1.RelatedResourceOriginService,
				Group: "example.com", Version: "v1", Resource: "gadgets",
				Projection: &syncagentv1alpha1.RelatedResourceProjection{Group: "kcp.example.com"},
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Template: &syncagentv1alpha1.TemplateExpression{Template: `{{ if eq .Side "kcp" }}{{ .Object.metadata.name }}-gadget{{ else }}{{ .Object.metadata.name }}{{ end }}`},
				}},
				// Every local Thing re-syncs when a Gadget changes.
				Watch:      &syncagentv1alpha1.RelatedResourceWatch{BySelector: &metav1.LabelSelector{}},
				SyncStatus: true,
			},
			{
				Identifier: "widget", Origin: syncagentv1alpha1.RelatedResourceOriginKcp,
				Group: "provider.example.com", Version: "v1", Resource: "widgets", IdentityHash: identity,
				Projection: &syncagentv1alpha1.RelatedResourceProjection{Group: "example.com"},
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.widget"},
				}},
				SyncStatus: true,
			},
		}
	})
	// Gadgets are only published (the export serves them), not synced.
	gadgets := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		s.Synchronization = &syncagentv1alpha1.SynchronizationSpec{Enabled: false}
	})
	for _, pr := range []*syncagentv1alpha1.PublishedResource{things, gadgets} {
		framework.Must(t, svc.Create(ctx, pr), "create PublishedResource %s", pr.Name)
	}
	framework.StartAgent(t, f.AgentArgs()...)
	for _, pr := range []string{"things", "gadgets"} {
		f.Service.WaitForPublishedResource(t, pr, schemaTimeout, "ExportReady", exportReady)
	}

	// The export claims provider Widgets by identity; the consumer binds
	// the provider export, then ours with every claim accepted.
	var claims []kcpapisv1alpha2.PermissionClaim
	framework.WaitFor(t, syncTimeout, "the widgets claim with identityHash", func(ctx context.Context) (bool, error) {
		exp, err := getExport(ctx, f.Org, f.Export.Name)
		if err != nil {
			return false, err
		}
		claims = exp.Spec.PermissionClaims
		for _, c := range claims {
			if c.Resource == "widgets" && c.IdentityHash == identity {
				return true, nil
			}
		}
		return false, nil
	})
	consumer := f.Kcp.CreateWorkspace(t, f.Org.Path, framework.RandomName("consumer"), "universal")
	framework.BindExport(t, consumer, providerWS.Path, "widgets", nil)
	framework.BindExport(t, consumer, f.Org.Path, f.Export.Name, claims)
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))

	// A Widget in kcp (another export's type) with a status, and a Thing
	// that references it.
	widget := newObject(providerWidget, "default", "w1", map[string]any{"size": int64(3)})
	framework.Must(t, consumer.Client.Create(ctx, widget), "create Widget")
	framework.Must(t, unstructured.SetNestedField(widget.Object, "Blue", "status", "shade"), "set Widget status")
	framework.Must(t, consumer.Client.Status().Update(ctx, widget), "update Widget status")
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "t1", map[string]any{"widget": "w1"})), "create Thing")

	localNS := waitCopies(t, f, consumer.ClusterName, 1)[0].GetNamespace()
	localName := waitCopies(t, f, consumer.ClusterName, 1)[0].GetName()

	// kcp origin, other export: the Widget arrives with spec and status.
	localW := &unstructured.Unstructured{}
	localW.SetGroupVersionKind(localWidget)
	framework.WaitFor(t, syncTimeout, "the Widget copy with its status", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, svc, localW, localNS, "w1"); err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		shade, _, _ := unstructured.NestedString(localW.Object, "status", "shade")
		return shade == "Blue", nil
	})
	if size, _, _ := unstructured.NestedInt64(localW.Object, "spec", "size"); size != 3 {
		t.Errorf("Widget copy spec.size = %d, want 3", size)
	}

	// Service origin, same export: a local Gadget named like the local
	// Thing appears in kcp as <thing>-gadget, with its status.
	gadget := newObject(localGadget, localNS, localName, map[string]any{"color": "red"})
	framework.Must(t, svc.Create(ctx, gadget), "create local Gadget")
	framework.Must(t, unstructured.SetNestedField(gadget.Object, "Built", "status", "phase"), "set Gadget status")
	framework.Must(t, svc.Status().Update(ctx, gadget), "update Gadget status")
	kcpG := &unstructured.Unstructured{}
	kcpG.SetGroupVersionKind(kcpGadget)
	framework.WaitFor(t, syncTimeout, "the Gadget in kcp with its status", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, kcpG, "default", "t1-gadget"); err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		phase, _, _ := unstructured.NestedString(kcpG.Object, "status", "phase")
		return phase == "Built", nil
	})
	if color, _, _ := unstructured.NestedString(kcpG.Object, "spec", "color"); color != "red" {
		t.Errorf("kcp Gadget spec.color = %q, want red", color)
	}
	thing := &unstructured.Unstructured{}
	thing.SetGroupVersionKind(kcpThing)
	framework.WaitFor(t, syncTimeout, "the gadget annotation", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, thing, "default", "t1"); err != nil {
			return false, err
		}
		return thing.GetAnnotations()["related-resources.syncagent.kcp.io/gadget.0"] ==
			`{"namespace":"default","name":"t1-gadget","apiVersion":"kcp.example.com/v1","kind":"Gadget"}`, nil
	})
}
