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
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// patrolFlags starts the patroller every few seconds.
const patrolFlags = "--patrol-interval=4s"

// TestPatrolRepairsDrift: a state Secret deleted while the agent runs
// (nothing watches them) is found by the patroller and written again by
// the object's pass; a kcp-owned field edited on a local copy while the
// agent was down (the event path's three-way merge keeps it, contract
// §6.5) is reported, not changed. The metrics and a PatrolDrift Event say
// so. With --patrol-mode=report the deleted state is counted and stays
// deleted.
func TestPatrolRepairsDrift(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1, "--patrol-interval=0")
	ctx := t.Context()
	cluster := ws[0].ClusterName
	for _, name := range []string{"edited", "stateless"} {
		framework.Must(t, ws[0].Client.Create(ctx, newObject(kcpThing, "default", name, map[string]any{"color": "blue"})), "create Thing %s", name)
	}
	framework.WaitFor(t, syncTimeout, "two local copies", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, cluster)
		return len(items) == 2, err
	})
	colorOfEdited := func(ctx context.Context) (string, error) {
		items, err := localCopies(ctx, f.Service.Client, cluster)
		if err != nil {
			return "", err
		}
		for i := range items {
			if r, ok := objmeta.FromLocal(&items[i]); ok && r.Name == "edited" {
				color, _, _ := unstructured.NestedString(items[i].Object, "spec", "color")
				return color, nil
			}
		}
		return "", nil
	}
	stateOf := func(name string) *corev1.Secret {
		p := state.Primary{Remote: objmeta.Remote{Cluster: cluster, Namespace: "default", Name: name}, APIVersion: kcpThing.GroupVersion().String(), Kind: kcpThing.Kind}
		s := &corev1.Secret{}
		s.SetNamespace(framework.AgentNamespace)
		s.SetName(state.SecretName(p))
		return s
	}
	hasState := func(name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			err := f.Service.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(stateOf(name)), &corev1.Secret{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}
	}
	stateSecret, stateExists := stateOf("stateless"), hasState("stateless")
	deleteState := func() {
		t.Helper()
		framework.WaitFor(t, syncTimeout, "the state Secret of stateless", stateExists)
		framework.Must(t, f.Service.Client.Delete(ctx, stateSecret.DeepCopy()), "delete the state Secret of stateless")
	}

	// Both passes must have ended (a copy appears before its pass writes
	// the state Secret): the copy of an object without state is reapplied
	// from kcp at the restart, and the edit would be gone.
	for _, name := range []string{"edited", "stateless"} {
		framework.WaitFor(t, syncTimeout, "the state Secret of "+name, hasState(name))
	}
	agent.Stop(30 * time.Second)
	items, err := localCopies(ctx, f.Service.Client, cluster)
	framework.Must(t, err, "list the local copies")
	for i := range items {
		if r, ok := objmeta.FromLocal(&items[i]); ok && r.Name == "edited" {
			items[i].Object["spec"] = map[string]any{"color": "tampered"}
			framework.Must(t, f.Service.Client.Update(ctx, &items[i]), "edit the copy's kcp-owned field")
		}
	}
	agent = framework.StartAgent(t, f.AgentArgs(patrolFlags)...)
	framework.WaitFor(t, syncTimeout, "the edited copy reported", func(ctx context.Context) (bool, error) {
		return patrolMetrics(t, agent).found["copy-differs"] >= 1, nil
	})
	deleteState()
	framework.WaitFor(t, syncTimeout, "the state Secret restored and counted", func(ctx context.Context) (bool, error) {
		exists, err := stateExists(ctx)
		m := patrolMetrics(t, agent)
		return exists && m.found["state-missing"] >= 1 && m.repaired["state-missing"] >= 1, err
	})
	if color, err := colorOfEdited(ctx); err != nil || color != "tampered" {
		t.Errorf("the edited copy's color = %q (%v), want the service side's tampered kept (contract §6.5)", color, err)
	}
	if m := patrolMetrics(t, agent); m.repaired["copy-differs"] != 0 {
		t.Errorf("repaired copy-differs = %v, want 0: it is reported only", m.repaired["copy-differs"])
	}
	framework.WaitFor(t, syncTimeout, "a PatrolDrift Event on the PublishedResource", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "things")["PatrolDrift"], nil
	})
	agent.NoErrors(t)

	// Report mode: counted, nothing written.
	agent.Stop(30 * time.Second)
	agent = framework.StartAgent(t, f.AgentArgs(patrolFlags, "--patrol-mode=report")...)
	framework.WaitFor(t, syncTimeout, "a patrol pass of the restarted agent", func(ctx context.Context) (bool, error) {
		return patrolMetrics(t, agent).runs >= 1, nil
	})
	deleteState()
	framework.WaitFor(t, syncTimeout, "the deleted state reported", func(ctx context.Context) (bool, error) {
		return patrolMetrics(t, agent).found["state-missing"] >= 1, nil
	})
	if exists, err := stateExists(ctx); err != nil || exists {
		t.Errorf("report mode: the state Secret exists = %v (%v), want it left deleted", exists, err)
	}
	if m := patrolMetrics(t, agent); len(m.repaired) != 0 {
		t.Errorf("report mode: repaired %v, want nothing", m.repaired)
	}
	agent.NoErrors(t)
}

// patrolSnapshot is what an agent's patrol metrics say.
type patrolSnapshot struct {
	runs            float64
	found, repaired map[string]float64
}

// patrolMetrics reads the things PublishedResource's patrol metrics.
func patrolMetrics(t *testing.T, a *framework.Agent) patrolSnapshot {
	t.Helper()
	s := patrolSnapshot{found: map[string]float64{}, repaired: map[string]float64{}}
	body := scrape(t, a)
	s.runs = sumSamples(body, "sync_agent_patrol_runs_total", `published_resource="things"`)
	for _, kind := range []string{"not-accepted", "missing-copy", "copy-metadata", "copy-differs", "state-missing", "status-behind", "related-missing", "related-differs", "orphan-copy"} {
		if v := sumSamples(body, "sync_agent_patrol_drift_found_total", `published_resource="things"`, fmt.Sprintf("kind=%q", kind)); v > 0 {
			s.found[kind] = v
		}
		if v := sumSamples(body, "sync_agent_patrol_repaired_total", `published_resource="things"`, fmt.Sprintf("kind=%q", kind)); v > 0 {
			s.repaired[kind] = v
		}
	}
	return s
}

// scrape returns the agent's metrics ("" if they cannot be read).
func scrape(t *testing.T, a *framework.Agent) string {
	t.Helper()
	_, body, err := framework.Get(t.Context(), "http://"+a.MetricsAddress+"/metrics")
	if err != nil {
		return ""
	}
	return body
}

var sampleLine = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)

// sumSamples adds the samples of the metric name whose labels contain
// every one of labels (`key="value"`).
func sumSamples(body, name string, labels ...string) float64 {
	sum := 0.0
	for _, m := range sampleLine.FindAllStringSubmatch(body, -1) {
		if m[1] != name {
			continue
		}
		all := true
		for _, l := range labels {
			if !strings.Contains(m[2], l) {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		if v, err := strconv.ParseFloat(m[3], 64); err == nil {
			sum += v
		}
	}
	return sum
}
