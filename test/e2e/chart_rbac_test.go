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

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// forbiddenRecoveryTimeout bounds the recovery after a missing permission
// is granted: the syncmanager checks again with backoff, at most 5 minutes
// apart.
const forbiddenRecoveryTimeout = 6 * time.Minute

// TestSyncForbiddenLocalType: the service owner's most common RBAC mistakes,
// a published type or a watched related type the agent may not list and
// watch cluster-wide, must not stop the agent; and related types that are
// not watched need no cluster-wide list or watch at all. The agent runs as
// the chart's ServiceAccount; the chart's rules grant all verbs on Things,
// Widgets and Gadgets but only get/create/update/patch/delete on Others,
// and on Secrets only get/create/update/patch/delete outside the agent's
// namespace. Widgets have related Secrets in the consumers' namespaces that
// are watched (byOwner); Gadgets have related Secrets both ways, unwatched.
// The Others and Widgets PublishedResources say which verbs on which
// resource are missing, Things and Gadgets keep syncing (the Gadgets'
// Secrets are read one by one, never listed), and granting the missing
// verbs makes Others and Widgets run without a restart.
func TestSyncForbiddenLocalType(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service

	svc.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	svc.InstallCRD(t, framework.TestCRD("example.com", "Other", "v1"))
	others := publishedResource("others", "example.com", "Other", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	framework.Must(t, svc.Client.Create(ctx, thingsPR()), "create PublishedResource things")
	framework.Must(t, svc.Client.Create(ctx, others), "create PublishedResource others")
	svc.InstallCRD(t, framework.TestCRD("example.com", "Widget", "v1"))
	widgets := publishedResource("widgets", "example.com", "Widget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		credentials := relatedSecret("credentials", syncagentv1alpha1.RelatedResourceOriginService, "{{ .Object.metadata.name }}-credentials")
		credentials.Watch = &syncagentv1alpha1.RelatedResourceWatch{ByOwner: &syncagentv1alpha1.RelatedResourceWatchByOwner{}}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{credentials}
	})
	framework.Must(t, svc.Client.Create(ctx, widgets), "create PublishedResource widgets")
	svc.InstallCRD(t, framework.TestCRD("example.com", "Gadget", "v1"))
	gadgets := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{
			relatedSecret("credentials", syncagentv1alpha1.RelatedResourceOriginService, "{{ .Object.metadata.name }}-credentials"),
			relatedSecret("token", syncagentv1alpha1.RelatedResourceOriginKcp, "{{ .Object.metadata.name }}-token"),
		}
	})
	framework.Must(t, svc.Client.Create(ctx, gadgets), "create PublishedResource gadgets")
	createKcpKubeconfigSecret(t, svc, f.KcpKubeconfig)
	objs := renderChart(t, chartRelease, map[string]any{
		"apiExportEndpointSliceName": f.Export.Name,
		"kcpKubeconfig":              "kcp-kubeconfig",
		"extraFlags":                 []any{"--log-format=Console"},
		// The least privilege this test is about: without the list of
		// every type the namespace cleanup needs.
		"deleteCreatedNamespaces": false,
		"rbac": map[string]any{"extraRules": []any{
			map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"things"},
				"verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"}},
			map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"others"},
				"verbs": []any{"get", "create", "update", "patch", "delete"}},
			map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"widgets", "gadgets"},
				"verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"}},
			map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"},
				"verbs": []any{"get", "create", "update", "patch", "delete"}},
		}},
	})
	applyObjects(t, svc.Client, objs)
	agent := startAsDeployment(t, svc, objs)
	agent.waitProbe(t, "readiness", agent.container.ReadinessProbe)

	for _, name := range []string{"things", "others", "widgets", "gadgets"} {
		svc.WaitForPublishedResource(t, name, schemaTimeout, "ExportReady", exportReady)
	}
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)

	svc.WaitForPublishedResource(t, "others", syncTimeout, "SyncReady False naming the missing verbs", func(pr *syncagentv1alpha1.PublishedResource) bool {
		c := findCondition(pr, syncagentv1alpha1.ConditionSyncReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == syncagentv1alpha1.ReasonControllerStartFailed &&
			strings.Contains(c.Message, "may not list, watch others.example.com cluster-wide")
	})
	svc.WaitForPublishedResource(t, "widgets", syncTimeout, "SyncReady False naming the related type", func(pr *syncagentv1alpha1.PublishedResource) bool {
		c := findCondition(pr, syncagentv1alpha1.ConditionSyncReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == syncagentv1alpha1.ReasonControllerStartFailed &&
			strings.Contains(c.Message, "may not list, watch secrets cluster-wide") && !strings.Contains(c.Message, "widgets")
	})
	svc.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	if err := fullSync(ctx, svc.Client, consumer, "unaffected", syncTimeout); err != nil {
		t.Fatalf("Things did not sync while Others lacks permissions: %v", err)
	}
	syncGadget(t, svc, consumer)

	// The service owner grants the missing verbs.
	grant := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "grant-others"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"example.com"}, Resources: []string{"others"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "grant-others"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: agent.serviceAccount, Namespace: framework.AgentNamespace}},
	}
	framework.Must(t, svc.Client.Create(ctx, grant), "create ClusterRole")
	framework.Must(t, svc.Client.Create(ctx, binding), "create ClusterRoleBinding")
	for _, name := range []string{"others", "widgets"} {
		svc.WaitForPublishedResource(t, name, forbiddenRecoveryTimeout, "SyncReady after the grant",
			framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	}
	kcpOther := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Other"}
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpOther, "default", "after-grant", map[string]any{"color": "red"})), "create an Other in kcp")
	framework.WaitFor(t, syncTimeout, "the Other's local copy", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "OtherList"})
		err := svc.Client.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-cluster": consumer.ClusterName})
		return err == nil && len(list.Items) == 1, err
	})
	if agent.Exited() {
		t.Errorf("the agent exited (code %d)", agent.ExitCode())
	}
}

// relatedSecret is a related Secret entry named by a template, without watch.
func relatedSecret(identifier string, origin syncagentv1alpha1.RelatedResourceOrigin, template string) syncagentv1alpha1.RelatedResourceSpec {
	return syncagentv1alpha1.RelatedResourceSpec{
		Identifier: identifier, Origin: origin, Kind: syncagentv1alpha1.RelatedResourceKindSecret,
		Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
			Template: &syncagentv1alpha1.TemplateExpression{Template: template},
		}},
	}
}

// referencedSecret is a related Secret entry "credentials" whose name the
// primary's spec.secretName holds, without watch.
func referencedSecret(origin syncagentv1alpha1.RelatedResourceOrigin) syncagentv1alpha1.RelatedResourceSpec {
	return syncagentv1alpha1.RelatedResourceSpec{
		Identifier: "credentials", Origin: origin, Kind: syncagentv1alpha1.RelatedResourceKindSecret,
		Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
			Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.secretName"}}},
	}
}

// syncGadget creates a Gadget and its kcp-origin token Secret in kcp and
// the service-origin credentials Secret next to its local copy, and waits
// until each Secret has its copy on the other side (names are templated
// per side: g1-… in kcp, <local name>-… on the service cluster).
func syncGadget(t *testing.T, svc *framework.ServiceCluster, consumer *framework.Workspace) {
	t.Helper()
	ctx := t.Context()
	framework.WaitFor(t, syncTimeout, "gadgets SyncReady", func(ctx context.Context) (bool, error) {
		pr := &syncagentv1alpha1.PublishedResource{}
		if err := svc.Client.Get(ctx, types.NamespacedName{Name: "gadgets"}, pr); err != nil {
			return false, err
		}
		c := findCondition(pr, syncagentv1alpha1.ConditionSyncReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == syncagentv1alpha1.ReasonRunning, nil
	})
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g1-token"}, Data: map[string][]byte{"token": []byte("t0ken")}}
	framework.Must(t, consumer.Client.Create(ctx, token), "create the token Secret in kcp")
	kcpGadget := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"}
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpGadget, "default", "g1", map[string]any{"color": "red"})), "create a Gadget in kcp")
	var local unstructured.Unstructured
	framework.WaitFor(t, syncTimeout, "the Gadget's local copy", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "GadgetList"})
		err := svc.Client.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-cluster": consumer.ClusterName})
		if err != nil || len(list.Items) != 1 {
			return false, err
		}
		local = list.Items[0]
		return true, nil
	})
	copied := &corev1.Secret{}
	framework.WaitFor(t, syncTimeout, "the token Secret on the service cluster", func(ctx context.Context) (bool, error) {
		err := svc.Client.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName() + "-token"}, copied)
		return err == nil && string(copied.Data["token"]) == "t0ken", ctrlruntimeclient.IgnoreNotFound(err)
	})
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: local.GetNamespace(), Name: local.GetName() + "-credentials"},
		Data: map[string][]byte{"password": []byte("s3cret")}}
	framework.Must(t, svc.Client.Create(ctx, creds), "create the credentials Secret on the service cluster")
	// Unwatched: the Gadget's next pass copies it (a change of the Gadget
	// triggers one at once).
	framework.Must(t, consumer.Client.Patch(ctx, newObject(kcpGadget, "default", "g1", nil),
		ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"blue"}}`))), "change the Gadget")
	framework.WaitFor(t, syncTimeout, "the credentials Secret in kcp", func(ctx context.Context) (bool, error) {
		got := &corev1.Secret{}
		err := consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "g1-credentials"}, got)
		return err == nil && string(got.Data["password"]) == "s3cret", ctrlruntimeclient.IgnoreNotFound(err)
	})
}
