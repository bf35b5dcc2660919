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
	"strings"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// schemaTimeout bounds how long the agent may take to publish a schema.
const schemaTimeout = time.Minute

func publishedResource(name, group, kind string, mutate ...func(*syncagentv1alpha1.PublishedResourceSpec)) *syncagentv1alpha1.PublishedResource {
	pr := &syncagentv1alpha1.PublishedResource{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       syncagentv1alpha1.PublishedResourceSpec{Resource: syncagentv1alpha1.SourceResourceDescriptor{APIGroup: group, Kind: kind}},
	}
	for _, m := range mutate {
		m(&pr.Spec)
	}
	return pr
}

func schemaReady(pr *syncagentv1alpha1.PublishedResource) bool {
	return framework.HasCondition(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSchemaAvailable)(pr) &&
		pr.Status.ResourceSchemaName != "" && pr.Status.ObservedGeneration == pr.Generation
}

// getSchema fetches an APIResourceSchema from the org workspace.
func getSchema(t *testing.T, f *framework.Fixture, name string) *kcpapisv1alpha1.APIResourceSchema {
	t.Helper()
	ars := &kcpapisv1alpha1.APIResourceSchema{}
	framework.Must(t, f.Org.Client.Get(t.Context(), types.NamespacedName{Name: name}, ars), "get APIResourceSchema %s", name)
	return ars
}

func versionNames(ars *kcpapisv1alpha1.APIResourceSchema) []string {
	var names []string
	for _, v := range ars.Spec.Versions {
		names = append(names, v.Name)
	}
	return names
}

// TestSchemaLifecycle: a schema is created with the contract's metadata and
// only the selected versions; a CRD change gives a second schema that the
// PublishedResource points to; reverting the change returns to the first
// name; deleting the PublishedResource leaves the schemas in kcp.
func TestSchemaLifecycle(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	crd := framework.TestCRD("example.com", "Thing", "v1alpha1", "v1beta1", "v1")
	f.Service.InstallCRD(t, crd)
	pr := publishedResource("things", "example.com", "Thing", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Resource.Versions = []string{"v1beta1", "v1", "v9"}
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	framework.Must(t, f.Service.Client.Create(ctx, pr), "create PublishedResource")

	framework.StartAgent(t, f.AgentArgs()...).WaitReady(t, agentReadyTimeout)

	pr = f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "schema ready", schemaReady)
	first := pr.Status.ResourceSchemaName
	if !strings.HasPrefix(first, "v") || !strings.HasSuffix(first, ".things.kcp.example.com") {
		t.Fatalf("schema name %q does not follow v<hash>.<plural>.<group>", first)
	}
	ars := getSchema(t, f, first)
	if got := strings.Join(versionNames(ars), ","); got != "v1beta1,v1" {
		t.Errorf("schema versions = %s, want v1beta1,v1 (v1alpha1 not selected, v9 ignored)", got)
	}
	agentName := f.Export.Name + "-syncagent"
	if ars.Labels["syncagent.kcp.io/agent-name"] != agentName || ars.Annotations["syncagent.kcp.io/agent-name"] != agentName {
		t.Errorf("schema lacks the agent label/annotation %q: %v %v", agentName, ars.Labels, ars.Annotations)
	}
	if ars.Annotations["syncagent.kcp.io/source-generation"] != "1" {
		t.Errorf("source-generation = %q, want 1", ars.Annotations["syncagent.kcp.io/source-generation"])
	}
	if c := findCondition(pr, syncagentv1alpha1.ConditionConfigValid); c == nil || c.Reason != syncagentv1alpha1.ReasonValid {
		t.Errorf("ConfigValid = %+v, want Valid", c)
	}

	// Change the CRD: a new schema, and the status follows.
	changed := framework.TestCRD("example.com", "Thing", "v1alpha1", "v1beta1", "v1")
	changed.Spec.Versions[2].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = changed.Spec.Versions[2].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"]
	f.Service.InstallCRD(t, changed)
	pr = f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "a second schema", func(pr *syncagentv1alpha1.PublishedResource) bool {
		return schemaReady(pr) && pr.Status.ResourceSchemaName != first
	})
	second := pr.Status.ResourceSchemaName
	getSchema(t, f, second)

	// Revert: the first name comes back and the first schema is reused.
	f.Service.InstallCRD(t, crd)
	f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "the first schema again", func(pr *syncagentv1alpha1.PublishedResource) bool {
		return schemaReady(pr) && pr.Status.ResourceSchemaName == first
	})

	// Deleting the PublishedResource deletes nothing in kcp.
	framework.Must(t, f.Service.Client.Delete(ctx, pr), "delete PublishedResource")
	time.Sleep(2 * time.Second)
	getSchema(t, f, first)
	getSchema(t, f, second)
}

func findCondition(pr *syncagentv1alpha1.PublishedResource, condType string) *metav1.Condition {
	for i := range pr.Status.Conditions {
		if pr.Status.Conditions[i].Type == condType {
			return &pr.Status.Conditions[i]
		}
	}
	return nil
}

// TestSchemaFullProjection publishes a CRD with every projection field set,
// in an unusual version order, and checks the schema.
func TestSchemaFullProjection(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)

	crd := framework.TestCRD("example.com", "Gadget", "v2", "v1", "v1beta1") // storage: v1beta1
	crd.Spec.Names.ShortNames = []string{"gd"}
	f.Service.InstallCRD(t, crd)
	pr := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{
			Group: "kcp.example.com", Kind: "Widget", Plural: "widgetz", Scope: syncagentv1alpha1.ClusterScoped,
			Versions:   map[string]string{"v2": "v1alpha1"},
			ShortNames: []string{"wz"}, Categories: []string{"gizmos"},
		}
	})
	framework.Must(t, f.Service.Client.Create(t.Context(), pr), "create PublishedResource")
	framework.StartAgent(t, f.AgentArgs()...)

	pr = f.Service.WaitForPublishedResource(t, "gadgets", schemaTimeout, "schema ready", schemaReady)
	ars := getSchema(t, f, pr.Status.ResourceSchemaName)
	s := ars.Spec
	if s.Group != "kcp.example.com" || s.Names.Kind != "Widget" || s.Names.ListKind != "WidgetList" || s.Names.Singular != "widget" ||
		s.Names.Plural != "widgetz" || string(s.Scope) != "Cluster" ||
		strings.Join(s.Names.ShortNames, ",") != "wz" || strings.Join(s.Names.Categories, ",") != "gizmos" {
		t.Errorf("projected names/scope wrong: %+v, scope %s", s.Names, s.Scope)
	}
	if got := strings.Join(versionNames(ars), ","); got != "v1alpha1,v1beta1,v1" {
		t.Errorf("versions = %s, want Kubernetes order v1alpha1,v1beta1,v1", got)
	}
	for _, v := range s.Versions {
		if v.Storage != (v.Name == "v1beta1") {
			t.Errorf("version %s storage = %v; the source storage version v1beta1 must stay storage", v.Name, v.Storage)
		}
	}
	if !strings.HasSuffix(ars.Name, ".widgetz.kcp.example.com") {
		t.Errorf("schema name %q does not use the projected plural and group", ars.Name)
	}
}

// TestSchemaBuiltinType publishes the built-in Role type under another
// group; its schema comes from the OpenAPI v2 models, as in the reference.
func TestSchemaBuiltinType(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)

	pr := publishedResource("roles", "rbac.authorization.k8s.io", "Role", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "rbac.kcp.example.com"}
	})
	framework.Must(t, f.Service.Client.Create(t.Context(), pr), "create PublishedResource")
	unprojected := publishedResource("raw-configmaps", "", "ConfigMap")
	framework.Must(t, f.Service.Client.Create(t.Context(), unprojected), "create PublishedResource")
	framework.StartAgent(t, f.AgentArgs()...)

	pr = f.Service.WaitForPublishedResource(t, "roles", schemaTimeout, "schema ready", schemaReady)
	ars := getSchema(t, f, pr.Status.ResourceSchemaName)
	if ars.Spec.Group != "rbac.kcp.example.com" || ars.Spec.Names.Kind != "Role" || ars.Spec.Names.Plural != "roles" || string(ars.Spec.Scope) != "Namespaced" {
		t.Errorf("unexpected schema: group %s, names %+v, scope %s", ars.Spec.Group, ars.Spec.Names, ars.Spec.Scope)
	}
	if got := strings.Join(versionNames(ars), ","); got != "v1" {
		t.Errorf("versions = %s, want v1", got)
	}
	schema, err := ars.Spec.Versions[0].GetSchema()
	framework.Must(t, err, "decode schema")
	if _, ok := schema.Properties["rules"]; !ok {
		t.Errorf("the Role schema has no rules property: %v", schema.Properties)
	}
	if ars.Annotations["syncagent.kcp.io/source-generation"] != "0" {
		t.Errorf("source-generation = %q, want 0 for built-in types", ars.Annotations["syncagent.kcp.io/source-generation"])
	}

	// A built-in type in the core group needs a projection.
	f.Service.WaitForPublishedResource(t, "raw-configmaps", schemaTimeout, "ProtectedGroup",
		framework.HasCondition(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonProtectedGroup))
}

// TestSchemaErrors: a PublishedResource whose CRD does not exist yet
// recovers when the CRD appears (no restart); impossible projections get a
// clear condition without disturbing a valid PublishedResource.
func TestSchemaErrors(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Valid", "v1"))
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Twin", "v1beta1", "v1"))
	for _, pr := range []*syncagentv1alpha1.PublishedResource{
		publishedResource("valid", "example.com", "Valid"),
		publishedResource("late", "example.com", "Late"),
		publishedResource("duplicate-versions", "example.com", "Twin", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Projection = &syncagentv1alpha1.ResourceProjection{Versions: map[string]string{"v1beta1": "v1"}}
		}),
		publishedResource("protected", "example.com", "Valid", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "apps.k8s.io", Kind: "Other"}
		}),
		publishedResource("bad-template", "example.com", "Twin", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name | nosuchfunction }}"}
			s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "twins.example.com"}
		}),
	} {
		framework.Must(t, f.Service.Client.Create(ctx, pr), "create PublishedResource %s", pr.Name)
	}
	// Without the sync controller (a split deployment), Ready is computed
	// from the conditions present.
	agent := framework.StartAgent(t, f.AgentArgs("--disabled-controllers=sync")...)

	f.Service.WaitForPublishedResource(t, "valid", schemaTimeout, "schema ready", schemaReady)
	f.Service.WaitForPublishedResource(t, "late", schemaTimeout, "SourceNotFound",
		framework.HasCondition(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceNotFound))
	f.Service.WaitForPublishedResource(t, "duplicate-versions", schemaTimeout, "InvalidProjection",
		framework.HasCondition(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonInvalidProjection))
	f.Service.WaitForPublishedResource(t, "protected", schemaTimeout, "ProtectedGroup",
		framework.HasCondition(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonProtectedGroup))
	f.Service.WaitForPublishedResource(t, "bad-template", schemaTimeout, "ConfigValid=False",
		framework.HasCondition(syncagentv1alpha1.ConditionConfigValid, metav1.ConditionFalse, syncagentv1alpha1.ReasonInvalidConfiguration))
	f.Service.WaitForPublishedResource(t, "bad-template", schemaTimeout, "Ready=False/InvalidConfiguration once the schema is exported",
		framework.HasCondition(syncagentv1alpha1.ConditionReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonInvalidConfiguration))
	// "protected" publishes the same source kind as "valid": ambiguous.
	f.Service.WaitForPublishedResource(t, "valid", schemaTimeout, "AmbiguousConfiguration",
		framework.HasCondition(syncagentv1alpha1.ConditionConfigValid, metav1.ConditionTrue, syncagentv1alpha1.ReasonAmbiguousConfiguration))

	// The invalid ones are terminal: no hot retry loop.
	framework.WaitFor(t, time.Minute, "Warning events for the broken PublishedResources", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "duplicate-versions")[syncagentv1alpha1.ReasonInvalidProjection], nil
	})

	// The CRD appears: the late PublishedResource recovers without a restart.
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Late", "v1"))
	f.Service.WaitForPublishedResource(t, "late", schemaTimeout, "schema ready", schemaReady)
	if agent.Exited() {
		t.Fatalf("agent exited: %s", agent.Logs())
	}
}
