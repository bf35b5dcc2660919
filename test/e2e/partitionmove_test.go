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
	"strings"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// moveShardUnderLoad moves the second shard from the us partition to the
// eu partition while both agents run and Things are created in the us
// workspace: kcp lists the shard in both slices from then on, the eu agent
// (the endpoint's new home) asks for the endpoint's Lease, the us agent
// gives it up and the eu agent serves it. Every Thing, created before,
// during or after the move, has exactly one copy; a copy nothing changed
// is not rewritten (adopted as after a restart); a spec change made in kcp
// after the move reaches its copy. It returns the names of the Things
// created during and after the move.
func moveShardUnderLoad(t *testing.T, f *framework.Fixture, k *framework.Kcp, ws *framework.Workspace, before int) []string {
	t.Helper()
	ctx := t.Context()
	untouched := waitCopies(t, f, ws.ClusterName, before)[0]
	if untouched.GetResourceVersion() == "" {
		t.Fatal("a copy without a resourceVersion")
	}

	// Load: a Thing every 300 ms through the move.
	load, stopLoad := context.WithCancel(ctx)
	created := make(chan []string, 1)
	go func() {
		var names []string
		defer func() { created <- names }()
		for i := 0; load.Err() == nil; i++ {
			name := fmt.Sprintf("moving-%d", i)
			if err := ws.Client.Create(ctx, newObject(kcpThing, "default", name, map[string]any{"color": "moving"})); err != nil {
				t.Errorf("create Thing %s during the move: %v", name, err)
				return
			}
			names = append(names, name)
			select {
			case <-load.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()

	relabelShard(t, f, k, framework.SecondShard, "eu")

	waitEndpointsHeldBy(t, f, "eu", 2*syncTimeout)
	time.Sleep(3 * time.Second) // a few more Things under the eu agent
	stopLoad()
	names := <-created
	if len(names) == 0 {
		t.Fatal("no Thing was created during the move")
	}
	// A Thing after the move, and a spec change of one from before.
	framework.Must(t, ws.Client.Create(ctx, newObject(kcpThing, "default", "after-move", map[string]any{"color": "eu"})), "create a Thing after the move")
	names = append(names, "after-move")
	copies := waitCopies(t, f, ws.ClusterName, before+len(names))
	seen := map[string]int{}
	for _, c := range copies {
		seen[c.GetLabels()[keys.RemoteObjectNameHash]]++
	}
	for hash, n := range seen {
		if n != 1 {
			t.Errorf("%d copies of the Thing whose name hashes to %s", n, hash)
		}
	}
	// A spec change in kcp after the move reaches the copy.
	thing := &unstructured.Unstructured{}
	thing.SetGroupVersionKind(kcpThing)
	framework.Must(t, ws.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: names[0]}, thing), "get Thing %s", names[0])
	framework.Must(t, unstructured.SetNestedField(thing.Object, "changed", "spec", "color"), "set color")
	framework.Must(t, ws.Client.Update(ctx, thing), "update Thing %s", names[0])
	framework.WaitFor(t, syncTimeout, "the spec change on the copy", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, ws.ClusterName)
		for _, c := range items {
			if color, _, _ := unstructured.NestedString(c.Object, "spec", "color"); color == "changed" {
				return true, err
			}
		}
		return false, err
	})

	// The copy nothing changed was adopted, not rewritten.
	again := &unstructured.Unstructured{}
	again.SetGroupVersionKind(localThing)
	framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Namespace: untouched.GetNamespace(), Name: untouched.GetName()}, again), "get copy %s", untouched.GetName())
	if again.GetResourceVersion() != untouched.GetResourceVersion() {
		t.Errorf("the copy %s was rewritten by the move (resourceVersion %s, was %s)", untouched.GetName(), again.GetResourceVersion(), untouched.GetResourceVersion())
	}
	return names
}

// relabelShard moves a shard to the partition of region: kcp's slice
// controller does not watch shards, so the receiving slice is touched to
// make kcp list the shard there; kcp keeps it in the giving slice.
func relabelShard(t *testing.T, f *framework.Fixture, k *framework.Kcp, shard, region string) {
	t.Helper()
	ctx := t.Context()
	framework.LabelShard(t, k, shard, region)
	name := f.Export.Name + "-" + region
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{}
	framework.Must(t, f.Org.Client.Get(ctx, types.NamespacedName{Name: name}, slice), "get slice %s", name)
	touch := ctrlruntimeclient.MergeFrom(slice.DeepCopy())
	slice.Annotations = map[string]string{"e2e.syncagent.kcp.io/touched": time.Now().Format(time.RFC3339Nano)}
	framework.Must(t, f.Org.Client.Patch(ctx, slice, touch), "touch slice %s", name)
	framework.WaitFor(t, syncTimeout, "both shards in slice "+name, func(ctx context.Context) (bool, error) {
		s := &kcpapisv1alpha1.APIExportEndpointSlice{}
		err := f.Org.Client.Get(ctx, types.NamespacedName{Name: name}, s)
		return err == nil && len(s.Status.APIExportEndpoints) == 2, err
	})
}

// waitEndpointsHeldBy waits until the agent of partition holds both
// shards' endpoint Leases.
func waitEndpointsHeldBy(t *testing.T, f *framework.Fixture, partition string, timeout time.Duration) {
	t.Helper()
	framework.WaitFor(t, timeout, "the "+partition+" partition holds every endpoint's Lease", func(ctx context.Context) (bool, error) {
		leases := &coordinationv1.LeaseList{}
		if err := f.Service.Client.List(ctx, leases, ctrlruntimeclient.InNamespace(framework.AgentNamespace)); err != nil {
			return false, err
		}
		held := 0
		for _, l := range leases.Items {
			if !strings.HasPrefix(l.Name, "endpoint.") {
				continue
			}
			if l.Annotations[keys.HolderPartitionAnnotation] != partition {
				return false, nil
			}
			held++
		}
		return held == 2, nil
	})
}

// moveFromKilledAgent kills the eu agent (which serves both shards after
// moveShardUnderLoad) and moves the root shard to the us partition: the us
// agent takes the root shard's endpoint once the dead agent's Lease ran
// out (the us slice lists it last), and the second shard's after the
// takeover time (the us slice still lists it, but not as its home). The eu
// workspace's copies survive unchanged and a new Thing there syncs. It
// returns the eu agent, started again (its finalizer on the
// PublishedResource is released by it alone).
func moveFromKilledAgent(t *testing.T, f *framework.Fixture, k *framework.Kcp, ws *framework.Workspace, eu *framework.Agent, euArgs []string) *framework.Agent {
	t.Helper()
	ctx := t.Context()
	before := waitCopies(t, f, ws.ClusterName, 2)
	eu.Kill()
	relabelShard(t, f, k, framework.RootShard, "us")
	waitEndpointsHeldBy(t, f, "us", 3*syncTimeout)
	framework.Must(t, ws.Client.Create(ctx, newObject(kcpThing, "default", "eu-after-kill", map[string]any{"color": "us"})), "create a Thing after the eu agent was killed")
	after := waitCopies(t, f, ws.ClusterName, 3)
	rv := map[string]string{}
	for _, c := range after {
		rv[c.GetName()] = c.GetResourceVersion()
	}
	for _, c := range before {
		if rv[c.GetName()] != c.GetResourceVersion() {
			t.Errorf("the copy %s was rewritten when the us agent took its shard over (resourceVersion %s, was %s)", c.GetName(), rv[c.GetName()], c.GetResourceVersion())
		}
	}
	return framework.StartAgent(t, euArgs...)
}
