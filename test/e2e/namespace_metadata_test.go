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
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestNamespaceMetadata: the agent runs as the chart's ServiceAccount with
// the chart's namespaceMetadata values. The namespace it creates for a
// workspace has the labels and annotations from the start (templated with
// the workspace); a namespace the service owner made beforehand for another
// workspace gets nothing. A helm upgrade (the agent restarts) that changes
// one label and drops a label and the annotation brings the created
// namespace in line, keeps a label the service owner added to it, and
// leaves a configured label the service owner changed as they wrote it (a
// NamespaceMetadataKept Event on the namespace).
// Finally the workspace unbinds and the sweep deletes the namespace, which
// takes the chart's permission to patch namespaces (the deletion mark).
func TestNamespaceMetadata(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service
	svc.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, svc.Client.Create(ctx, thingsPR()), "create PublishedResource things")
	createKcpKubeconfigSecret(t, svc, f.KcpKubeconfig)
	values := func(labels, annotations map[string]any) map[string]any {
		return map[string]any{
			"apiExportEndpointSliceName": f.Export.Name,
			"kcpKubeconfig":              "kcp-kubeconfig",
			"extraFlags":                 []any{"--log-format=Console", "--state-sweep-interval=2s"},
			"namespaceMetadata":          map[string]any{"labels": labels, "annotations": annotations},
			"rbac": map[string]any{"extraRules": []any{map[string]any{
				"apiGroups": []any{"example.com"}, "resources": []any{"things"},
				"verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"},
			}}},
		}
	}
	objs := renderChart(t, chartRelease, values(
		map[string]any{"team": "tenants", "tenant": "{{ .ClusterName }}", "tier": "gold"},
		map[string]any{"example.com/owner": "kcp-{{ .ClusterName }}"}))
	applyObjects(t, svc.Client, objs)
	agent := startAsDeployment(t, svc, objs)
	svc.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	created := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	owners := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	// The service owner's own namespace for the second workspace's copies.
	ownersLabels := map[string]string{"owner": "service-owner"}
	framework.Must(t, svc.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: owners.ClusterName, Labels: ownersLabels}}), "create the service owner's namespace")
	for _, w := range []*framework.Workspace{created, owners} {
		framework.Must(t, w.Client.Create(ctx, newObject(kcpThing, "default", "x", map[string]any{"color": "x"})), "create Thing")
		waitOnlyCopy(t, svc.Client, w.ClusterName)
	}
	namespace := func(ctx context.Context, name string) (*corev1.Namespace, error) {
		ns := &corev1.Namespace{}
		return ns, svc.Client.Get(ctx, types.NamespacedName{Name: name}, ns)
	}
	ns, err := namespace(ctx, created.ClusterName)
	framework.Must(t, err, "get the created namespace")
	wantLabels := map[string]string{
		// The chart names the agent after the release.
		"syncagent.kcp.io/created-by": chartRelease, "syncagent.kcp.io/created-for-cluster": created.ClusterName,
		"kubernetes.io/metadata.name": created.ClusterName, "team": "tenants", "tenant": created.ClusterName, "tier": "gold",
	}
	if !maps.Equal(ns.Labels, wantLabels) {
		t.Errorf("labels of the created namespace: %v, want %v", ns.Labels, wantLabels)
	}
	if got := ns.Annotations["example.com/owner"]; got != "kcp-"+created.ClusterName {
		t.Errorf("annotation example.com/owner of the created namespace: %q, want kcp-%s", got, created.ClusterName)
	}
	// The service owner labels the created namespace too, and sets a
	// configured label to a value of their own.
	ns.Labels["cost-center"], ns.Labels["team"] = "42", "owners"
	framework.Must(t, svc.Client.Update(ctx, ns), "label the created namespace")

	// helm upgrade: team changed (but the owner's value stays), tier and
	// the annotation dropped.
	agent.Stop(30 * time.Second)
	objs = renderChart(t, chartRelease, values(map[string]any{"team": "platform", "tenant": "{{ .ClusterName }}"}, nil))
	applyObjects(t, svc.Client, objs)
	agent = startAsDeployment(t, svc, objs)
	wantLabels["team"], wantLabels["cost-center"] = "owners", "42"
	delete(wantLabels, "tier")
	framework.WaitFor(t, syncTimeout, "the created namespace in line with the new values", func(ctx context.Context) (bool, error) {
		ns, err := namespace(ctx, created.ClusterName)
		if err != nil {
			return false, err
		}
		_, annotated := ns.Annotations["example.com/owner"]
		return maps.Equal(ns.Labels, wantLabels) && !annotated, nil
	})
	framework.WaitFor(t, syncTimeout, "a NamespaceMetadataKept Event on the created namespace", func(ctx context.Context) (bool, error) {
		var events corev1.EventList
		if err := svc.Client.List(ctx, &events, ctrlruntimeclient.InNamespace("default")); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == created.ClusterName &&
				e.Reason == "NamespaceMetadataKept" && strings.Contains(e.Message, "label team")
		}), nil
	})
	ns, err = namespace(ctx, owners.ClusterName)
	framework.Must(t, err, "get the service owner's namespace")
	if want := map[string]string{"owner": "service-owner", "kubernetes.io/metadata.name": owners.ClusterName}; !maps.Equal(ns.Labels, want) || len(ns.Annotations) != 0 {
		t.Errorf("the service owner's namespace was changed: labels %v, annotations %v", ns.Labels, ns.Annotations)
	}

	// The workspace unbinds: the sweep, with the chart's RBAC, deletes the
	// namespace it created (no kube-controller-manager: it stays
	// Terminating).
	binding := &kcpapisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: f.Export.Name}}
	framework.Must(t, created.Client.Delete(ctx, binding), "unbind")
	waitGone(t, created.Client, binding, "the APIBinding")
	framework.WaitFor(t, syncTimeout, "the created namespace deleted", func(ctx context.Context) (bool, error) {
		ns, err := namespace(ctx, created.ClusterName)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && ns.DeletionTimestamp != nil, err
	})
	agent.NoErrors(t)
}
