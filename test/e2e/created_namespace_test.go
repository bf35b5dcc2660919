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

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestCreatedNamespaceIsDeleted: two workspaces unbind the export. The
// namespace the agent created for the first is deleted once its copy is
// gone; the second's is kept, because the service owner put a ConfigMap
// into it. A third workspace that stays bound keeps its namespace.
func TestCreatedNamespaceIsDeleted(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 3, "--state-sweep-interval=2s")
	emptied, kept, bound := ws[0], ws[1], ws[2]
	ctx := t.Context()
	for _, w := range ws {
		framework.Must(t, w.Client.Create(ctx, newObject(kcpThing, "default", "x", map[string]any{"color": "x"})), "create Thing")
		waitOnlyCopy(t, f.Service.Client, w.ClusterName)
	}
	// The copies are in a namespace named after the workspace (the default
	// naming), created by the agent.
	namespace := func(ctx context.Context, w *framework.Workspace) (*corev1.Namespace, error) {
		ns := &corev1.Namespace{}
		return ns, f.Service.Client.Get(ctx, types.NamespacedName{Name: w.ClusterName}, ns)
	}
	ns, err := namespace(ctx, emptied)
	framework.Must(t, err, "get the created namespace")
	if ns.Labels["syncagent.kcp.io/created-by"] != f.Export.Name+"-syncagent" || ns.Labels["syncagent.kcp.io/created-for-cluster"] != emptied.ClusterName {
		t.Fatalf("the created namespace's labels: %v", ns.Labels)
	}
	framework.Must(t, f.Service.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: kept.ClusterName, Name: "owners-settings"}}),
		"the service owner's ConfigMap in the second namespace")

	for _, w := range []*framework.Workspace{emptied, kept} {
		binding := &kcpapisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: f.Export.Name}}
		framework.Must(t, w.Client.Delete(ctx, binding), "unbind")
		waitGone(t, w.Client, binding, "the APIBinding")
	}
	// Without kube-controller-manager the namespace stays Terminating:
	// deleted as far as the agent is concerned.
	framework.WaitFor(t, syncTimeout, "the emptied workspace's namespace deleted", func(ctx context.Context) (bool, error) {
		ns, err := namespace(ctx, emptied)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && ns.DeletionTimestamp != nil, err
	})
	sweeps := strings.Count(agent.Logs(), "State sweep done")
	framework.WaitFor(t, syncTimeout, "three more sweeps", func(context.Context) (bool, error) {
		return strings.Count(agent.Logs(), "State sweep done") >= sweeps+3, nil
	})
	for _, w := range []*framework.Workspace{kept, bound} {
		ns, err := namespace(ctx, w)
		framework.Must(t, err, "get the namespace of %s", w.Path)
		if ns.DeletionTimestamp != nil {
			t.Errorf("namespace %s is being deleted, want it kept", ns.Name)
		}
	}
	if copies, err := localCopies(ctx, f.Service.Client, kept.ClusterName); err != nil || len(copies) != 0 {
		t.Errorf("the unbound workspace's copies: %d, %v; want none", len(copies), err)
	}
	if got := metricValue(t, agent, "sync_agent_created_namespaces_deleted_total"); got != 1 {
		t.Errorf("created namespaces counted as deleted: %v, want 1", got)
	}
	agent.NoErrors(t)
}
