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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestWatchListStaysOff: an agent started with
// KUBE_FEATURE_WatchListClient=true (client-go's switch for streaming the
// initial list, which kcp 0.32 serves) says it ignores it, lists and
// watches as without it (no informer tries streaming and falls back, which
// logs an ERROR against the service cluster), and syncs.
func TestWatchListStaysOff(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	pr := thingsPR()
	framework.Must(t, f.Service.Client.Create(ctx, pr), "create PublishedResource")
	agent := framework.StartAgentWithEnv(t, []string{"KUBE_FEATURE_WatchListClient=true"}, f.AgentArgs()...)
	f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))

	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "streamed", map[string]any{"color": "blue"})), "create Thing in kcp")
	waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)

	logs := agent.Logs()
	if !strings.Contains(logs, "KUBE_FEATURE_WatchListClient is ignored") {
		t.Error("the agent did not say that it ignores KUBE_FEATURE_WatchListClient")
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(strings.ToLower(line), "watchlist request") {
			t.Errorf("an informer tried watch-list streaming: %s", line)
		}
	}
	agent.NoErrors(t)
}
