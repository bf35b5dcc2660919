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
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	"github.com/kcp-syncagent/api-syncagent/internal/validation"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// builtinGroup is the group the built-in types are published as in kcp.
const builtinGroup = "builtin.example.com"

var (
	localDeployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	kcpDeployment   = schema.GroupVersionKind{Group: builtinGroup, Version: "v1", Kind: "Deployment"}
	localService    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	kcpService      = schema.GroupVersionKind{Group: builtinGroup, Version: "v1", Kind: "Service"}
)

// builtinPR publishes a built-in type of the service cluster as
// builtinGroup.
func builtinPR(name, group, kind string) *syncagentv1alpha1.PublishedResource {
	return publishedResource(name, group, kind, func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: builtinGroup}
	})
}

// newDeployment is a minimal valid Deployment spec.
func newDeployment(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return newObject(gvk, namespace, name, map[string]any{
		"replicas": int64(1),
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example.com/app:1"}}},
		},
	})
}

// TestBuiltinStatusReachesKcp: Deployments and Services published from the
// service cluster's built-in types have the status subresource in their
// schema, and the status the service side reports reaches the kcp objects
// (the reference's releases up to v0.7.0 published them without it; every
// status write back failed with "not found").
func TestBuiltinStatusReachesKcp(t *testing.T) {
	t.Parallel()
	// A Service's name must start with a letter; the default naming's
	// hashes may start with a digit. The naming the docs suggest.
	services := builtinPR("services", "", "Service")
	services.Spec.Naming = &syncagentv1alpha1.ResourceNaming{Name: validation.ServiceNaming}
	f, consumers, _ := syncSetup(t, nil, []*syncagentv1alpha1.PublishedResource{
		builtinPR("deployments", "apps", "Deployment"), services,
	}, 1)
	consumer := consumers[0]
	ctx := t.Context()
	for _, name := range []string{"deployments", "services"} {
		pr := f.Service.WaitForPublishedResource(t, name, schemaTimeout, "schema ready", schemaReady)
		for _, v := range getSchema(t, f, pr.Status.ResourceSchemaName).Spec.Versions {
			if v.Subresources.Status == nil {
				t.Errorf("the schema %s of %s, version %s, has no status subresource", pr.Status.ResourceSchemaName, name, v.Name)
			}
		}
	}

	deployment := newDeployment(kcpDeployment, "default", "web")
	framework.Must(t, consumer.Client.Create(ctx, deployment), "create the Deployment in kcp")
	service := newObject(kcpService, "default", "web", map[string]any{
		"selector": map[string]any{"app": "web"},
		"ports":    []any{map[string]any{"name": "http", "port": int64(80), "protocol": "TCP"}},
	})
	framework.Must(t, consumer.Client.Create(ctx, service), "create the Service in kcp")

	// The service side reports a status, as its controllers would (the
	// test bed runs none).
	local := waitBuiltinCopy(t, f.Service.Client, localDeployment, consumer.ClusterName)
	framework.Must(t, unstructured.SetNestedField(local.Object, map[string]any{
		"observedGeneration": local.GetGeneration(), "replicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
	}, "status"), "set the Deployment's status")
	framework.Must(t, f.Service.Client.Status().Update(ctx, local), "update the local Deployment's status")
	waitKcpStatus(t, consumer, deployment, "readyReplicas", func(v any) bool { return v == int64(1) })

	local = waitBuiltinCopy(t, f.Service.Client, localService, consumer.ClusterName)
	framework.Must(t, unstructured.SetNestedSlice(local.Object, []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Serving", "message": "the service side serves it",
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}}, "status", "conditions"), "set the Service's status")
	framework.Must(t, f.Service.Client.Status().Update(ctx, local), "update the local Service's status")
	waitKcpStatus(t, consumer, service, "conditions", func(v any) bool {
		conditions, _ := v.([]any)
		return len(conditions) == 1 && conditions[0].(map[string]any)["reason"] == "Serving"
	})
}

// waitBuiltinCopy waits for the one local copy of gvk from a workspace.
func waitBuiltinCopy(t *testing.T, c ctrlruntimeclient.Client, gvk schema.GroupVersionKind, cluster string) *unstructured.Unstructured {
	t.Helper()
	var local *unstructured.Unstructured
	framework.WaitFor(t, syncTimeout, "the local "+gvk.Kind, func(ctx context.Context) (bool, error) {
		items, err := localCopiesOf(ctx, c, gvk, cluster)
		if err != nil || len(items) != 1 {
			return false, err
		}
		local = &items[0]
		return true, nil
	})
	return local
}

// waitKcpStatus waits until status.<field> of the kcp object satisfies ok.
func waitKcpStatus(t *testing.T, ws *framework.Workspace, obj *unstructured.Unstructured, field string, ok func(any) bool) {
	t.Helper()
	framework.WaitFor(t, syncTimeout, "status."+field+" of the "+obj.GetKind()+" in kcp", func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := ws.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(obj), got); err != nil {
			return false, err
		}
		v, found, _ := unstructured.NestedFieldCopy(got.Object, "status", field)
		return found && ok(v), nil
	})
}

// TestBuiltinSchemaSwitchKeepsConsumers: a consumer bound to the schema the
// reference's releases up to v0.7.0 published for Deployments (no status
// subresource, so another name) keeps its Deployment when the agent takes
// over: the agent publishes the schema with status, replaces the export's
// entry, kcp moves the binding to it, and the Deployment, the same object,
// syncs and gets its status. The local Deployment, with its status, is
// there before the agent starts (as the reference left it): the agent's
// first passes may write the status while kcp still serves the old
// schema, whose 404 must not be taken for a deleted object.
func TestBuiltinSchemaSwitchKeepsConsumers(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	agentName := f.Export.Name + "-syncagent"
	pr := builtinPR("deployments", "apps", "Deployment")
	// A naming the test can predict, to place the reference's copy.
	pr.Spec.Naming = &syncagentv1alpha1.ResourceNaming{Namespace: "{{ .ClusterName }}", Name: "{{ .Object.metadata.name }}"}

	// The old schema, as the reference built it: every subresource lost.
	resolver, err := discovery.NewResolver(f.Service.Config, f.Service.Client)
	framework.Must(t, err, "discovery of the service cluster")
	src, err := resolver.Resolve(ctx, schema.GroupKind{Group: "apps", Kind: "Deployment"})
	framework.Must(t, err, "resolve apps/Deployment")
	for i := range src.Spec.Versions {
		src.Spec.Versions[i].Subresources = &apiextensionsv1.CustomResourceSubresources{}
	}
	projected, err := projection.Project(src, pr)
	framework.Must(t, err, "project the old schema")
	old, err := projection.Schema(src, projected, agentName)
	framework.Must(t, err, "the old schema")
	framework.Must(t, f.Org.Client.Create(ctx, old), "create the old schema %s", old.Name)
	framework.Must(t, appendToExport(ctx, f.Org, f.Export.Name, map[string]map[string]any{
		"resources": {"group": builtinGroup, "name": "deployments", "schema": old.Name, "storage": map[string]any{"crd": map[string]any{}}},
	}), "add the old schema to the export")

	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, f.Export.Spec.PermissionClaims)
	deployment := newDeployment(kcpDeployment, "default", "web")
	framework.WaitFor(t, syncTimeout, "the Deployment created in kcp", func(ctx context.Context) (bool, error) {
		err := consumer.Client.Create(ctx, deployment)
		return err == nil, ignoreNoMatch(err)
	})
	uid := deployment.GetUID()

	// The copy the reference made, with the status the service reports.
	framework.Must(t, f.Service.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consumer.ClusterName}}), "create the copy's namespace")
	local := newDeployment(localDeployment, consumer.ClusterName, deployment.GetName())
	framework.Must(t, f.Service.Client.Create(ctx, local), "create the reference's local Deployment")
	framework.Must(t, unstructured.SetNestedField(local.Object, map[string]any{"observedGeneration": local.GetGeneration(), "replicas": int64(1), "readyReplicas": int64(1)}, "status"), "set the Deployment's status")
	framework.Must(t, f.Service.Client.Status().Update(ctx, local), "update the local Deployment's status")

	framework.Must(t, f.Service.Client.Create(ctx, pr), "create the PublishedResource")
	framework.StartAgent(t, f.AgentArgs()...)
	pr = f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)
	if pr.Status.ResourceSchemaName == old.Name {
		t.Fatalf("the agent published the old schema %s again", old.Name)
	}
	exp, err := getRawExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	if e := rawEntry(exp, "resources", map[string]string{"group": builtinGroup, "name": "deployments"}); e == nil || e["schema"] != pr.Status.ResourceSchemaName {
		t.Errorf("the export's deployments entry is %v, want the schema %s", e, pr.Status.ResourceSchemaName)
	}
	framework.WaitFor(t, schemaTimeout, "the consumer's binding on the new schema", func(ctx context.Context) (bool, error) {
		b := &kcpapisv1alpha2.APIBinding{}
		if err := consumer.Client.Get(ctx, types.NamespacedName{Name: f.Export.Name}, b); err != nil {
			return false, err
		}
		for _, r := range b.Status.BoundResources {
			if r.Resource == "deployments" {
				return r.Schema.Name == pr.Status.ResourceSchemaName, nil
			}
		}
		return false, nil
	})

	if adopted := waitBuiltinCopy(t, f.Service.Client, localDeployment, consumer.ClusterName); adopted.GetUID() != local.GetUID() {
		t.Errorf("the local Deployment is another object (UID %s), not the reference's copy %s", adopted.GetUID(), local.GetUID())
	}
	waitKcpStatus(t, consumer, deployment, "readyReplicas", func(v any) bool { return v == int64(1) })
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(kcpDeployment)
	framework.Must(t, consumer.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(deployment), got), "get the Deployment")
	if got.GetUID() != uid {
		t.Errorf("the Deployment in kcp is another object (UID %s, created as %s)", got.GetUID(), uid)
	}
}
