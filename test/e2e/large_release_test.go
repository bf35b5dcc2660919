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
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// largeRelease is how many objects the deleted PublishedResource leaves
// holding the agent's finalizer.
const largeRelease = 2000

// largeReleaseTimeout bounds the release of largeRelease objects at full
// speed.
const largeReleaseTimeout = 5 * time.Minute

// releaseProgress matches the progress a deleted PublishedResource's
// SyncReady shows while its objects are released.
var releaseProgress = regexp.MustCompile(`releasing its objects in kcp: (\d+) released of the (\d+) found so far`)

// TestLargeReleaseHoldsUpNoOne: a PublishedResource whose 2000 objects in
// kcp carry the agent's finalizer is deleted, and another one is created,
// while the agent's requests to kcp are slow (a client rate limit of 10
// per second stands in for a slow shard: the release takes minutes). The
// new PublishedResource starts syncing while the release is in flight, and
// the deleted one shows how far its release got. At full speed the release
// ends: every object is free of the finalizer and the PublishedResource is
// gone.
func TestLargeReleaseHoldsUpNoOne(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{
		framework.TestCRD("example.com", "Thing", "v1"), framework.TestCRD("example.com", "Gadget", "v1"),
	}, []*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	consumer := ws[0]
	ctx := t.Context()
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "synced", map[string]any{"color": "blue"})), "create a Thing")
	waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)

	// While the agent is down, the consumer's objects arrive holding the
	// finalizer, as if accepted by the agent (the release takes every
	// object with it, with state or without).
	agent.Stop(30 * time.Second)
	createWithFinalizer(t, consumer.Client, agentFinalizer(f), largeRelease-1)
	framework.Must(t, f.Service.Client.Delete(ctx, thingsPR()), "delete the Things' PublishedResource")
	gadgets := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	framework.Must(t, f.Service.Client.Create(ctx, gadgets), "create the Gadgets' PublishedResource")

	agent = framework.StartAgent(t, f.AgentArgs("--kcp-qps=10", "--kcp-burst=10")...)
	f.Service.WaitForPublishedResource(t, gadgets.Name, 3*syncTimeout, "the Gadgets syncing during the release",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	things := &syncagentv1alpha1.PublishedResource{}
	framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Name: "things"}, things), "get the deleted PublishedResource")
	cond := findCondition(things, syncagentv1alpha1.ConditionSyncReady)
	if cond == nil || cond.Reason != syncagentv1alpha1.ReasonReleasing {
		t.Fatalf("the deleted PublishedResource's SyncReady once the other one syncs: %+v, want Releasing", cond)
	}
	m := releaseProgress.FindStringSubmatch(cond.Message)
	if m == nil {
		t.Fatalf("SyncReady message %q shows no progress", cond.Message)
	}
	if released, _ := strconv.Atoi(m[1]); released >= largeRelease {
		t.Fatalf("the release was done (%s) before the other PublishedResource synced: the test shows nothing", cond.Message)
	}

	agent.Stop(30 * time.Second)
	agent = framework.StartAgent(t, f.AgentArgs()...)
	// 2000 releases, each a patch and an Event in kcp, on a machine shared
	// with other tests: the deadline bounds a hang, not the speed (that is
	// make bench's).
	framework.WaitFor(t, largeReleaseTimeout, "the released PublishedResource to be gone", func(ctx context.Context) (bool, error) {
		err := getObject(ctx, f.Service.Client, things, "", things.Name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kcpThing.GroupVersion().WithKind("ThingList"))
	framework.Must(t, consumer.Client.List(ctx, list, ctrlruntimeclient.InNamespace("default")), "list Things")
	held := 0
	for _, o := range list.Items {
		if slices.Contains(o.GetFinalizers(), agentFinalizer(f)) {
			held++
		}
	}
	if len(list.Items) != largeRelease || held != 0 {
		t.Errorf("Things: %d, %d of them with the agent's finalizer; want %d, none", len(list.Items), held, largeRelease)
	}
	agent.NoErrors(t)
}

// createWithFinalizer creates n Things named bulk-<i> holding finalizer, a
// few at a time.
func createWithFinalizer(t *testing.T, c ctrlruntimeclient.Client, finalizer string, n int) {
	t.Helper()
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				obj := newObject(kcpThing, "default", fmt.Sprintf("bulk-%d", i), map[string]any{"color": "grey"})
				obj.SetFinalizers([]string{finalizer})
				if err := c.Create(t.Context(), obj); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		framework.Must(t, err, "create Things holding the agent's finalizer")
	}
}
