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
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// isSubset: every key of a is in b.
func isSubset(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// partitionAgent is the agent name both partitions' agents share: their
// objects, state and finalizers are one agent's, split by shard.
const partitionAgent = "things"

// TestPartitions: two agents of one agent name, each with an endpoint
// slice of its own whose Partition selects one of kcp's two shards, serve
// one export from one service cluster and namespace. The eu agent
// publishes (and records itself as the publisher), the us agent runs with
// the publishing controllers off. Objects in workspaces on both shards
// sync, each written only by its shard's agent (the service cluster's
// audit log); each agent elects its leader on a Lease of its own and
// reports SyncReady.<partition>; Ready counts both. A third agent of the
// name with publishing on, leading the us partition, publishes nothing
// and says why. The second shard then moves to the eu partition under load
// (moveShardUnderLoad), and the root shard to the us partition while the
// eu agent is dead (moveFromKilledAgent): every object keeps one copy,
// untouched copies are not rewritten. Deleting the PublishedResource
// releases both shards' objects (each agent those of the endpoints it
// serves) before it goes. Not parallel: it starts a sharded kcp.
func TestPartitions(t *testing.T) {
	t.Setenv(framework.EnvServiceAudit, "1")
	k := framework.StartShardedKcp(t)
	f := framework.NewFixture(t, k)
	ctx := t.Context()
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, f.Service.Client.Create(ctx, thingsPR()), "create PublishedResource")

	// The kcp side: shards labelled by region, a Partition per region and
	// an endpoint slice per Partition, which the agent may read.
	for shard, region := range map[string]string{framework.RootShard: "eu", framework.SecondShard: "us"} {
		framework.LabelShard(t, k, shard, region)
	}
	sliceNames := framework.CreatePartitions(t, f.Org, f.Export.Name, "eu", "us")

	args := func(region string, extra ...string) []string {
		return f.AgentArgs(append([]string{"--apiexportendpointslice-ref=" + f.Export.Name + "-" + region, "--agent-name=" + partitionAgent, "--enable-leader-election=true"}, extra...)...)
	}
	eu := framework.StartAgent(t, args("eu")...)
	us := framework.StartAgent(t, args("us", "--disabled-controllers=apiresourceschema,apiexport")...)
	f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady",
		framework.HasCondition(syncagentv1alpha1.ConditionExportReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSchemaExported))

	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	if got := exp.Annotations[keys.PublisherOf(partitionAgent)]; got != "syncagent.things.eu" {
		t.Errorf("the export records publisher %q, want the eu agent's Lease syncagent.things.eu", got)
	}
	consumers := map[string]*framework.Workspace{}
	for region, shard := range map[string]string{"eu": framework.RootShard, "us": framework.SecondShard} {
		ws := k.CreateWorkspaceOnShard(t, f.Org.Path, framework.RandomName("consumer-"+region), "universal", shard)
		framework.BindExport(t, ws, f.Org.Path, f.Export.Name, exp.Spec.PermissionClaims)
		consumers[region] = ws
	}
	// Each slice lists its shard's endpoint once a workspace there binds.
	for _, name := range sliceNames {
		framework.WaitFor(t, syncTimeout, "one endpoint in "+name, func(ctx context.Context) (bool, error) {
			s := &kcpapisv1alpha1.APIExportEndpointSlice{}
			if err := f.Org.Client.Get(ctx, types.NamespacedName{Name: name}, s); err != nil {
				return false, err
			}
			return len(s.Status.APIExportEndpoints) == 1, nil
		})
	}
	for _, region := range []string{"eu", "us"} {
		f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady."+region+" Running",
			framework.HasCondition("SyncReady."+region, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	}
	pr := f.Service.WaitForPublishedResource(t, "things", syncTimeout, "Ready",
		framework.HasCondition(syncagentv1alpha1.ConditionReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonReady))
	for _, region := range []string{"eu", "us"} {
		if want := keys.ReleaseFinalizerIn(partitionAgent, region); !slices.Contains(pr.Finalizers, want) {
			t.Errorf("PublishedResource finalizers %v lack %s", pr.Finalizers, want)
		}
	}
	if c := apimeta.FindStatusCondition(pr.Status.Conditions, syncagentv1alpha1.ConditionSyncReady); c != nil {
		t.Errorf("an unpartitioned SyncReady condition was written: %+v", c)
	}

	for region, ws := range consumers {
		framework.WaitFor(t, syncTimeout, "Things created in "+ws.Path, func(ctx context.Context) (bool, error) {
			for _, name := range []string{"one", "two"} {
				err := ws.Client.Create(ctx, newObject(kcpThing, "default", region+"-"+name, map[string]any{"color": region}))
				if err != nil && ctrlruntimeclient.IgnoreAlreadyExists(err) != nil {
					return false, nil // the API is served a moment after the binding turns Bound
				}
			}
			return true, nil
		})
	}
	for _, ws := range consumers {
		waitCopies(t, f, ws.ClusterName, 2)
	}

	// Each partition has its own leader.
	for _, region := range []string{"eu", "us"} {
		lease := &coordinationv1.Lease{}
		framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Namespace: framework.AgentNamespace, Name: "syncagent.things." + region}, lease), "get the %s Lease", region)
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			t.Errorf("the %s Lease has no holder", region)
		}
	}

	// A third agent of the name with publishing on takes the us partition
	// over: it publishes nothing, says why, and the export and the
	// PublishedResource's schema and export conditions stay the eu agent's.
	us.Stop(30 * time.Second)
	usPublishing := framework.StartAgent(t, args("us")...)
	framework.WaitFor(t, syncTimeout, "the PublisherConflict Event", func(ctx context.Context) (bool, error) {
		return len(prEventMessages(ctx, f, "things", "PublisherConflict")) > 0, nil
	})
	exp, err = getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	if exp.Annotations[keys.PublisherOf(partitionAgent)] != "syncagent.things.eu" {
		t.Errorf("the refused agent changed the publisher record: %v", exp.Annotations)
	}
	framework.WaitFor(t, syncTimeout, "sync_agent_publisher_refused 1 on the refused agent", func(ctx context.Context) (bool, error) {
		code, body, err := framework.Get(ctx, "http://"+usPublishing.MetricsAddress+"/metrics")
		return err == nil && code == 200 && strings.Contains(body, "\nsync_agent_publisher_refused 1\n"), nil
	})
	// It syncs its partition all the same: a new Thing of the us workspace.
	framework.Must(t, consumers["us"].Client.Create(ctx, newObject(kcpThing, "default", "us-three", map[string]any{"color": "us"})), "create a Thing in the us workspace")
	waitCopies(t, f, consumers["us"].ClusterName, 3)
	for _, c := range []string{syncagentv1alpha1.ConditionSchemaReady, syncagentv1alpha1.ConditionExportReady} {
		pr := &syncagentv1alpha1.PublishedResource{}
		framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Name: "things"}, pr), "get PublishedResource things")
		if got := apimeta.FindStatusCondition(pr.Status.Conditions, c); got == nil || got.Status != metav1.ConditionTrue {
			t.Errorf("%s after the refused publisher started: %+v", c, got)
		}
	}

	// The second shard moves to the eu partition while both run; then the
	// eu agent is killed and the root shard moves to the us partition.
	moved := moveShardUnderLoad(t, f, k, consumers["us"], 3)
	eu = moveFromKilledAgent(t, f, k, consumers["eu"], eu, args("eu"))

	// Deleting the PublishedResource: each agent releases the objects of
	// the shards whose endpoints it serves (the eu agent both now) and
	// removes its own finalizer; then it goes.
	framework.Must(t, f.Service.Client.Delete(ctx, thingsPR()), "delete PublishedResource things")
	for region, ws := range consumers {
		waitThingsReleased(t, ws, map[string]int{"eu": 3, "us": 3 + len(moved)}[region], 2*syncTimeout)
	}
	waitGone(t, f.Service.Client, &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things"}}, "the PublishedResource")

	// Every copy was written by its own shard's agent only.
	for _, a := range []*framework.Agent{eu, usPublishing} {
		a.Stop(30 * time.Second)
	}
	audit, err := os.Open(filepath.Join(framework.ArtifactsDir(t), "service-audit.log"))
	framework.Must(t, err, "open the audit log")
	defer audit.Close()
	writers, err := invariant.LeasesOfWriters(audit, framework.AgentNamespace, "example.com")
	framework.Must(t, err, "read the audit log")
	copies := 0
	afterMove := map[string]bool{}
	for _, name := range moved {
		afterMove[name] = true
	}
	for region, ws := range consumers {
		items, err := localCopies(ctx, f.Service.Client, ws.ClusterName)
		framework.Must(t, err, "list the copies of %s", ws.Path)
		for _, c := range items {
			copies++
			object := "things.example.com " + c.GetNamespace() + "/" + c.GetName()
			// Both shards moved: each copy was written by one partition's
			// agent, then by the other's; none by any other replica (no
			// write without a Lease).
			want := map[string]bool{"syncagent.things.eu": true, "syncagent.things.us": true}
			if got := writers[object]; !isSubset(got, want) || len(got) == 0 {
				t.Errorf("%s (workspace of the %s shard) was written by the replicas of %v, want some of %v", object, region, got, want)
			}
		}
	}
	if want := 6 + len(moved); copies != want {
		t.Errorf("%d local copies after the release, want the %d (a release keeps them)", copies, want)
	}
}
