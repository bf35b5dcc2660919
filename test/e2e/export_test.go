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
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

func exportReady(pr *syncagentv1alpha1.PublishedResource) bool {
	return framework.HasCondition(syncagentv1alpha1.ConditionExportReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSchemaExported)(pr)
}

func getExport(ctx context.Context, ws *framework.Workspace, name string) (*kcpapisv1alpha2.APIExport, error) {
	exp := &kcpapisv1alpha2.APIExport{}
	return exp, ws.Client.Get(ctx, types.NamespacedName{Name: name}, exp)
}

func exportSchemas(exp *kcpapisv1alpha2.APIExport) []string {
	var names []string
	for _, r := range exp.Spec.Resources {
		names = append(names, r.Schema)
	}
	return names
}

func hasClaim(exp *kcpapisv1alpha2.APIExport, group, resource string) bool {
	return slices.ContainsFunc(exp.Spec.PermissionClaims, func(c kcpapisv1alpha2.PermissionClaim) bool {
		return c.Group == group && c.Resource == resource
	})
}

// TestExportMerge: the schema lands in the APIExport; an admin's schema and
// claim survive; claims grow with related resources; a new schema for the
// same group/resource replaces the old one; the schema stays after the
// PublishedResource is deleted; a consumer can list the projected type.
func TestExportMerge(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	// An admin's own schema and a selector-based claim in the export.
	foreign := &kcpapisv1alpha1.APIResourceSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.foreigns.admin.example.com"},
		Spec: kcpapisv1alpha1.APIResourceSchemaSpec{
			Group: "admin.example.com", Scope: "Cluster",
			Names:    apiextensionsNames("Foreign", "foreigns"),
			Versions: []kcpapisv1alpha1.APIResourceVersion{{Name: "v1", Served: true, Storage: true, Schema: objectSchema()}},
		},
	}
	framework.Must(t, f.Org.Client.Create(ctx, foreign), "create foreign schema")
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	exp.Spec.Resources = append(exp.Spec.Resources, kcpapisv1alpha2.ResourceSchema{Name: "foreigns", Group: "admin.example.com", Schema: foreign.Name,
		Storage: kcpapisv1alpha2.ResourceSchemaStorage{CRD: &kcpapisv1alpha2.ResourceSchemaStorageCRD{}}})
	exp.Spec.PermissionClaims = append(exp.Spec.PermissionClaims, kcpapisv1alpha2.PermissionClaim{
		GroupResource: kcpapisv1alpha2.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, Verbs: []string{"get", "list"}})
	framework.Must(t, f.Org.Client.Update(ctx, exp), "add admin entries to the export")

	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1beta1", "v1"))
	pr := publishedResource("things", "example.com", "Thing", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	framework.Must(t, f.Service.Client.Create(ctx, pr), "create PublishedResource")
	framework.StartAgent(t, f.AgentArgs()...)

	pr = f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)
	first := pr.Status.ResourceSchemaName
	exp, err = getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	if got := exportSchemas(exp); !slices.Equal(got, []string{foreign.Name, first}) {
		t.Errorf("export schemas = %v, want the foreign one and %s, sorted by resource.group", got, first)
	}
	if !hasClaim(exp, "rbac.authorization.k8s.io", "roles") || !hasClaim(exp, "", "events") {
		t.Errorf("claims = %+v, want the admin's roles claim and events", exp.Spec.PermissionClaims)
	}
	if exp.Annotations["syncagent.kcp.io/agent-name"] != f.Export.Name+"-syncagent" {
		t.Errorf("export lacks the agent-name annotation: %v", exp.Annotations)
	}
	if c := findCondition(pr, syncagentv1alpha1.ConditionReady); c == nil || c.Reason != syncagentv1alpha1.ReasonNoEndpoints {
		t.Errorf("Ready = %+v, want NoEndpoints while no workspace binds the export", c)
	}

	// A consumer binds the export and lists the type with kubectl.
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	kubeconfig := framework.WriteKubeconfig(t, framework.ArtifactsDir(t), "consumer.kubeconfig", f.Kcp.AdminConfig(consumer.Path))
	kubectl, err := framework.RequireEnv(framework.EnvKubectlBin)
	framework.Must(t, err, "find kubectl")
	framework.WaitFor(t, time.Minute, "kubectl get things.kcp.example.com in the consumer workspace", func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig="+kubeconfig, "get", "things.kcp.example.com", "-A").CombinedOutput()
		if err != nil {
			return false, &cmdError{string(out), err}
		}
		return strings.Contains(string(out), "No resources found"), nil
	})
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "Ready once a workspace binds the export",
		framework.HasCondition(syncagentv1alpha1.ConditionReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonReady))

	// Related resources make the claims grow; a version selection change
	// gives a new schema for the same group/resource, which replaces the old.
	framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Name: "things"}, pr), "get PublishedResource")
	pr.Spec.Resource.Versions = []string{"v1"}
	pr.Spec.Related = []syncagentv1alpha1.RelatedResourceSpec{{
		Identifier: "credentials", Origin: syncagentv1alpha1.RelatedResourceOriginService, Kind: syncagentv1alpha1.RelatedResourceKindSecret,
		Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
			Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.secretName"}}},
	}}
	framework.Must(t, f.Service.Client.Update(ctx, pr), "update PublishedResource")
	pr = f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "a new schema", func(pr *syncagentv1alpha1.PublishedResource) bool {
		return schemaReady(pr) && pr.Status.ResourceSchemaName != first
	})
	second := pr.Status.ResourceSchemaName
	framework.WaitFor(t, schemaTimeout, "the new schema to replace the old one in the export", func(ctx context.Context) (bool, error) {
		exp, err = getExport(ctx, f.Org, f.Export.Name)
		return err == nil && slices.Equal(exportSchemas(exp), []string{foreign.Name, second}), err
	})
	f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady for the new schema", func(pr *syncagentv1alpha1.PublishedResource) bool {
		c := findCondition(pr, syncagentv1alpha1.ConditionExportReady)
		return exportReady(pr) && c != nil && strings.Contains(c.Message, second)
	})
	for _, gr := range [][2]string{{"", "secrets"}, {"", "namespaces"}, {"", "events"}, {"rbac.authorization.k8s.io", "roles"}} {
		if !hasClaim(exp, gr[0], gr[1]) {
			t.Errorf("claim %v missing: %+v", gr, exp.Spec.PermissionClaims)
		}
	}
	framework.WaitFor(t, time.Minute, "APIExport Events", func(ctx context.Context) (bool, error) {
		reasons := namespacedEventReasons(ctx, f.Org, "default", f.Export.Name)
		return reasons["AddingResourceSchemas"] && reasons["RemovingResourceSchemas"] && reasons["AddingPermissionClaims"], nil
	})

	// Deleting the PublishedResource keeps its schema in the export.
	framework.Must(t, f.Service.Client.Delete(ctx, pr), "delete PublishedResource")
	time.Sleep(3 * time.Second)
	exp, err = getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	if got := exportSchemas(exp); !slices.Contains(got, second) {
		t.Errorf("export schemas = %v after deleting the PublishedResource, want %s kept", got, second)
	}
}

// TestExportMissing: with --apiexport-ref naming an APIExport that does not
// exist yet, the PublishedResource reports APIExportNotFound, and recovers
// when the export is created.
func TestExportMissing(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	name := framework.RandomName("late-export")
	framework.GrantAgent(t, f.Org, name, name)
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, f.Service.Client.Create(ctx, publishedResource("things", "example.com", "Thing")), "create PublishedResource")

	args := append(f.AgentArgs(), "--apiexport-ref="+name)
	args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--apiexportendpointslice-ref=") })
	framework.StartAgent(t, args...)

	f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "APIExportNotFound",
		framework.HasCondition(syncagentv1alpha1.ConditionExportReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonAPIExportNotFound))

	framework.CreateAPIExport(t, f.Org, name)
	f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)
}

type cmdError struct {
	out string
	err error
}

func (e *cmdError) Error() string { return e.err.Error() + ": " + e.out }
