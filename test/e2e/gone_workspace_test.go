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
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestGoneWorkspaceIsSwept: while the agent is down, a consumer takes our
// finalizer off their object by hand, deletes it and unbinds the export.
// Nothing in kcp names the copy any more; the agent's sweep finds the
// workspace unbound (twice in a row) and deletes its copy and state, and
// counts them. The other workspace's copy stays.
func TestGoneWorkspaceIsSwept(t *testing.T) {
	t.Parallel()
	sweep := []string{"--state-sweep-interval=2s", "--sweep-unbound-workspaces"}
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 2, sweep...)
	gone, stays := ws[0], ws[1]
	ctx := t.Context()
	for _, w := range ws {
		framework.Must(t, w.Client.Create(ctx, newObject(kcpThing, "default", "x", map[string]any{"color": "x"})), "create Thing")
		waitOnlyCopy(t, f.Service.Client, w.ClusterName)
	}
	stateOf := func(ctx context.Context, cluster string) (int, error) {
		var secrets corev1.SecretList
		err := f.Service.Client.List(ctx, &secrets, ctrlruntimeclient.InNamespace(framework.AgentNamespace),
			ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/object-state": "true", "syncagent.kcp.io/remote-object-cluster": cluster})
		return len(secrets.Items), err
	}
	if n, err := stateOf(ctx, gone.ClusterName); err != nil || n != 1 {
		t.Fatalf("state Secrets of the workspace: %d, %v; want 1", n, err)
	}

	agent.Stop(30 * time.Second)
	thing := newObject(kcpThing, "default", "x", nil)
	framework.Must(t, gone.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "x"}, thing), "get Thing")
	framework.Must(t, gone.Client.Patch(ctx, thing, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))), "remove the finalizer by hand")
	framework.Must(t, gone.Client.Delete(ctx, thing), "delete Thing")
	binding := &kcpapisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: f.Export.Name}}
	framework.Must(t, gone.Client.Delete(ctx, binding), "unbind")
	waitGone(t, gone.Client, binding, "the APIBinding")

	agent = framework.StartAgent(t, f.AgentArgs(sweep...)...)
	framework.WaitFor(t, 2*syncTimeout, "the unbound workspace's copy and state deleted", func(ctx context.Context) (bool, error) {
		copies, err := localCopies(ctx, f.Service.Client, gone.ClusterName)
		if err != nil || len(copies) > 0 {
			return false, err
		}
		n, err := stateOf(ctx, gone.ClusterName)
		return n == 0, err
	})
	if copies, err := localCopies(ctx, f.Service.Client, stays.ClusterName); err != nil || len(copies) != 1 {
		t.Errorf("the bound workspace's copies: %d, %v; want 1", len(copies), err)
	}
	if n, err := stateOf(ctx, stays.ClusterName); err != nil || n != 1 {
		t.Errorf("the bound workspace's state Secrets: %d, %v; want 1", n, err)
	}
	if got := metricValue(t, agent, "sync_agent_gone_workspace_objects_deleted_total", `kind="copy"`); got != 1 {
		t.Errorf("copies counted as deleted: %v, want 1", got)
	}
	if got := metricValue(t, agent, "sync_agent_gone_workspace_objects_deleted_total", `kind="state"`); got != 1 {
		t.Errorf("state Secrets counted as deleted: %v, want 1", got)
	}
	agent.NoErrors(t)
}
