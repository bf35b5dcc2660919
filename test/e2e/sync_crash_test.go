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
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// convergeTimeout bounds the convergence of many objects after a restart.
const convergeTimeout = 3 * time.Minute

// allLocalCopies counts local copies per workspace.
func allLocalCopies(ctx context.Context, c ctrlruntimeclient.Client) (map[string]int, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localThing.GroupVersion().WithKind("ThingList"))
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, item := range list.Items {
		counts[item.GetLabels()["syncagent.kcp.io/remote-object-cluster"]]++
	}
	return counts, nil
}

// TestSyncCrashAndRestart kills the agent with SIGKILL while it syncs 200
// objects in 10 workspaces, restarts it, and checks that it converges:
// every object has exactly one copy, and afterwards updates and deletions
// in every workspace are processed (no stuck finalizers).
func TestSyncCrashAndRestart(t *testing.T) {
	t.Parallel()
	const (
		workspaces = 10
		perWS      = 20
	)
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, workspaces)
	ctx := t.Context()

	var creators errgroup.Group
	for _, w := range ws {
		creators.Go(func() error {
			for i := range perWS {
				if err := w.Client.Create(ctx, newObject(kcpThing, "default", fmt.Sprintf("thing-%d", i), map[string]any{"color": "blue"})); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// Kill the agent in the middle of the sync.
	framework.WaitFor(t, syncTimeout, "the first copies", func(ctx context.Context) (bool, error) {
		counts, err := allLocalCopies(ctx, f.Service.Client)
		total := 0
		for _, n := range counts {
			total += n
		}
		return total >= 20, err
	})
	agent.Kill()
	if err := creators.Wait(); err != nil {
		t.Fatalf("failed to create objects: %v", err)
	}

	framework.StartAgent(t, f.AgentArgs()...).WaitReady(t, agentReadyTimeout)
	framework.WaitFor(t, convergeTimeout, "one copy per object in every workspace", func(ctx context.Context) (bool, error) {
		counts, err := allLocalCopies(ctx, f.Service.Client)
		if err != nil {
			return false, err
		}
		for _, w := range ws {
			if counts[w.ClusterName] != perWS {
				return false, nil
			}
		}
		return len(counts) == workspaces, nil
	})

	// Updates in every workspace are processed after the restart ...
	for _, w := range ws {
		obj := newObject(kcpThing, "default", "thing-0", nil)
		framework.Must(t, w.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "thing-0"}, obj), "get Thing")
		framework.Must(t, unstructured.SetNestedField(obj.Object, "red", "spec", "color"), "set color")
		framework.Must(t, w.Client.Update(ctx, obj), "update Thing")
	}
	framework.WaitFor(t, convergeTimeout, "the updates in every workspace", func(ctx context.Context) (bool, error) {
		for _, w := range ws {
			local := &unstructured.Unstructured{}
			local.SetGroupVersionKind(localThing)
			if err := f.Service.Client.Get(ctx, types.NamespacedName{Namespace: w.ClusterName, Name: sha3short("default") + "-" + sha3short("thing-0")}, local); err != nil {
				return false, err
			}
			if color, _, _ := unstructured.NestedString(local.Object, "spec", "color"); color != "red" {
				return false, nil
			}
		}
		return true, nil
	})

	converged(t, f, ws, thingsResource)

	// ... and so are deletions: nothing stays stuck on its finalizer.
	for _, w := range ws {
		framework.Must(t, w.Client.DeleteAllOf(ctx, newObject(kcpThing, "", "", nil), ctrlruntimeclient.InNamespace("default")), "delete all Things")
	}
	framework.WaitFor(t, convergeTimeout, "every object and copy to be gone", func(ctx context.Context) (bool, error) {
		counts, err := allLocalCopies(ctx, f.Service.Client)
		if err != nil || len(counts) != 0 {
			return false, err
		}
		for _, w := range ws {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(kcpThing.GroupVersion().WithKind("ThingList"))
			if err := w.Client.List(ctx, list); err != nil || len(list.Items) != 0 {
				return false, err
			}
		}
		return true, nil
	})
}
