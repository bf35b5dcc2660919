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
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestKcpKubeconfigReload: the agent's kcp token is rotated while it runs
// (a second user gets the agent's permissions, the kubeconfig file is
// rewritten with that user's token, the first user's permissions are
// revoked): objects created before, during and after keep syncing, with
// their status back in kcp, and the agent says it reloaded. Then a broken
// kubeconfig is written: the agent goes on with the token it has, keeps
// syncing, and reports the failure.
func TestKcpKubeconfigReload(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	ctx := t.Context()
	cluster := ws[0].ClusterName
	syncs := func(name string) {
		t.Helper()
		thing := newObject(kcpThing, "default", name, map[string]any{"color": "blue"})
		framework.Must(t, ws[0].Client.Create(ctx, thing), "create Thing %s", name)
		var local unstructured.Unstructured
		framework.WaitFor(t, syncTimeout, "the local copy of "+name, func(ctx context.Context) (bool, error) {
			items, err := localCopies(ctx, f.Service.Client, cluster)
			if err != nil {
				return false, err
			}
			for _, item := range items {
				if item.GetAnnotations()["syncagent.kcp.io/remote-object-name"] == name {
					local = item
					return true, nil
				}
			}
			return false, nil
		})
		reportStatus(t, f.Service.Client, &local, ws[0], thing)
	}
	syncs("before")

	framework.GrantAgentUser(t, f.Org, f.Export.Name, f.Export.Name, framework.SecondAgentUser)
	old, err := os.ReadFile(f.KcpKubeconfig)
	framework.Must(t, err, "read the kcp kubeconfig")
	framework.WriteKubeconfig(t, framework.ArtifactsDir(t), "kcp.kubeconfig", f.Kcp.SecondAgentConfig(f.Org.Path))
	if now, _ := os.ReadFile(f.KcpKubeconfig); string(now) == string(old) {
		t.Fatal("the kubeconfig was not rewritten")
	}
	framework.WaitFor(t, syncTimeout, "the reload", func(ctx context.Context) (bool, error) {
		return sumSamples(scrape(t, agent), "sync_agent_kcp_kubeconfig_reloads_total", `result="success"`) >= 1, nil
	})
	syncs("during")
	framework.RevokeAgentUser(t, f.Org, f.Export.Name, framework.AgentUser)
	// Only once kcp refuses the old token does "after" prove the new one.
	oldToken, err := ctrlruntimeclient.New(f.Kcp.AgentConfig(f.Org.Path), ctrlruntimeclient.Options{})
	framework.Must(t, err, "create a client with the old token")
	framework.WaitFor(t, syncTimeout, "kcp to refuse the old token", func(ctx context.Context) (bool, error) {
		err := oldToken.Get(ctx, ctrlruntimeclient.ObjectKey{Name: "cluster"}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "core.kcp.io/v1alpha1", Kind: "LogicalCluster"}})
		return apierrors.IsForbidden(err), nil
	})
	syncs("after")
	framework.WaitFor(t, syncTimeout, "a KcpKubeconfigReloaded Event on the PublishedResource", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "things")["KcpKubeconfigReloaded"], nil
	})
	agent.NoErrors(t)

	framework.Must(t, os.WriteFile(f.KcpKubeconfig, []byte("this: is: not a kubeconfig\n"), 0o600), "write a broken kubeconfig")
	framework.WaitFor(t, syncTimeout, "the rejected reload reported", func(ctx context.Context) (bool, error) {
		body := scrape(t, agent)
		return sumSamples(body, "sync_agent_kcp_kubeconfig_reloads_total", `result="failure"`) >= 1 &&
			sumSamples(body, "sync_agent_kcp_kubeconfig_reload_failed") == 1, nil
	})
	syncs("broken")
	framework.WaitFor(t, syncTimeout, "a KcpKubeconfigReloadFailed Event on the PublishedResource", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "things")["KcpKubeconfigReloadFailed"], nil
	})
	for _, line := range agent.ErrorLines() {
		if !strings.Contains(line, "The changed kcp kubeconfig was rejected") && !strings.Contains(line, "The changed kcp kubeconfig cannot be checked") {
			t.Errorf("unexpected ERROR line: %s", line)
		}
	}
}
