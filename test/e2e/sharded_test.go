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

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestMultipleShards runs the agent against a kcp of two shards behind a
// front-proxy: a consumer workspace on each shard binds the export, the
// endpoint slice lists one virtual workspace per shard, and objects of both
// workspaces sync down and their status comes back up; a shard that goes
// away and comes back disturbs neither the agent nor the other shard. Not
// parallel: the second kcp starts while the other tests wait.
func TestMultipleShards(t *testing.T) {
	k := framework.StartShardedKcp(t)
	f := framework.NewFixture(t, k)
	ctx := t.Context()
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, f.Service.Client.Create(ctx, thingsPR()), "create PublishedResource")
	agent := framework.StartAgent(t, f.AgentArgs()...)
	f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)

	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	var consumers []*framework.Workspace
	for _, shard := range []string{framework.RootShard, framework.SecondShard} {
		ws := k.CreateWorkspaceOnShard(t, f.Org.Path, framework.RandomName("consumer"), "universal", shard)
		framework.BindExport(t, ws, f.Org.Path, f.Export.Name, exp.Spec.PermissionClaims)
		consumers = append(consumers, ws)
	}

	// The precondition of this test: one endpoint per shard.
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{}
	framework.WaitFor(t, syncTimeout, "two endpoints in the endpoint slice", func(ctx context.Context) (bool, error) {
		if err := f.Org.Client.Get(ctx, types.NamespacedName{Name: f.Export.Name}, slice); err != nil {
			return false, err
		}
		return len(slice.Status.APIExportEndpoints) == 2, nil
	})
	if a, b := slice.Status.APIExportEndpoints[0].URL, slice.Status.APIExportEndpoints[1].URL; hostOf(a) == hostOf(b) {
		t.Fatalf("both endpoints are on one server: %s, %s", a, b)
	}
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))

	for _, ws := range consumers {
		framework.WaitFor(t, syncTimeout, "a Thing created in "+ws.Path, func(ctx context.Context) (bool, error) {
			// The API is served a moment after the binding turns Bound.
			err := ws.Client.Create(ctx, newObject(kcpThing, "default", "thing", map[string]any{"color": "blue"}))
			return err == nil, ctrlruntimeclient.IgnoreAlreadyExists(err)
		})
	}
	for _, ws := range consumers {
		local := waitCopies(t, f, ws.ClusterName, 1)[0]
		framework.Must(t, unstructured.SetNestedField(local.Object, "Ready", "status", "phase"), "set phase")
		framework.Must(t, f.Service.Client.Status().Update(ctx, &local), "update the local status")
		framework.WaitFor(t, syncTimeout, "the status in "+ws.Path, func(ctx context.Context) (bool, error) {
			thing := newObject(kcpThing, "", "", nil)
			if err := ws.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "thing"}, thing); err != nil {
				return false, err
			}
			phase, _, _ := unstructured.NestedString(thing.Object, "status", "phase")
			return phase == "Ready", nil
		})
	}

	// The second shard goes away: the agent keeps running, and so does an
	// agent started while the shard is down; both sync the workspace of the
	// first shard, and SyncReady names the unreachable endpoint. Once the
	// shard is back, its workspace syncs again and SyncReady recovers,
	// without an agent restart.
	k.StopShard(t, framework.SecondShard)
	time.Sleep(2 * time.Second) // the running agent notices the connection loss
	if agent.Exited() {
		t.Fatalf("the agent exited when a shard went away (code %d)", agent.ExitCode())
	}
	agent.Stop(30 * time.Second)
	agent = framework.StartAgent(t, f.AgentArgs()...)
	// The agent reconnects to a failed endpoint with a backoff of up to a
	// minute, so the shard's workspace may take that long to sync again.
	const reconnectTimeout = 2 * time.Minute
	createAndWaitLocal := func(ws *framework.Workspace, what string) {
		t.Helper()
		framework.WaitFor(t, syncTimeout, "a second Thing created in "+ws.Path, func(ctx context.Context) (bool, error) {
			err := ws.Client.Create(ctx, newObject(kcpThing, "default", "second", map[string]any{"color": "red"}))
			return err == nil, ctrlruntimeclient.IgnoreAlreadyExists(err)
		})
		framework.WaitFor(t, reconnectTimeout, what, func(ctx context.Context) (bool, error) {
			items, err := localCopies(ctx, f.Service.Client, ws.ClusterName)
			return len(items) == 2, err
		})
	}
	createAndWaitLocal(consumers[0], "the first shard's workspace to sync while the second shard is down")
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady EndpointUnreachable",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonEndpointUnreachable))
	if agent.Exited() {
		t.Fatalf("the agent started while a shard is down exited (code %d)", agent.ExitCode())
	}

	k.StartShard(t, framework.SecondShard)
	createAndWaitLocal(consumers[1], "the second shard's workspace to sync after the shard's restart")
	// The endpoints are checked again every minute.
	f.Service.WaitForPublishedResource(t, "things", 2*time.Minute, "SyncReady Running again",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))

	// The PublishedResource is deleted while the second shard is down: the
	// first shard's objects are released at once; the PublishedResource
	// stays, saying why, until the second shard is back and its objects
	// are released too. Then consumers on both shards can delete.
	k.StopShard(t, framework.SecondShard)
	framework.Must(t, f.Service.Client.Delete(ctx, thingsPR()), "delete PublishedResource things")
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady Releasing",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonReleasing))
	waitReleased := func(ws *framework.Workspace, timeout time.Duration) { waitThingsReleased(t, ws, 2, timeout) }
	waitReleased(consumers[0], syncTimeout)
	k.StartShard(t, framework.SecondShard)
	// Releases are retried with backoff, up to 5 minutes apart.
	waitReleased(consumers[1], 6*time.Minute)
	waitGone(t, f.Service.Client, &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things"}}, "the PublishedResource")
	for _, ws := range consumers {
		framework.Must(t, ws.Client.Delete(ctx, newObject(kcpThing, "default", "thing", nil)), "delete a Thing in %s", ws.Path)
	}
}

// hostOf returns the scheme and host of a URL.
func hostOf(url string) string {
	if i := strings.Index(url, "/services/"); i >= 0 {
		return url[:i]
	}
	return url
}

// waitThingsReleased waits until the workspace holds n Things, none with
// a finalizer.
func waitThingsReleased(t *testing.T, ws *framework.Workspace, n int, timeout time.Duration) {
	t.Helper()
	framework.WaitFor(t, timeout, "the Things of "+ws.Path+" to be released", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kcpThing.GroupVersion().WithKind("ThingList"))
		if err := ws.Client.List(ctx, list); err != nil {
			return false, err
		}
		for _, o := range list.Items {
			if len(o.GetFinalizers()) > 0 {
				return false, nil
			}
		}
		return len(list.Items) == n, nil
	})
}
