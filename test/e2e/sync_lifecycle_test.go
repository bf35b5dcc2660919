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
	"slices"
	"strings"
	"testing"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// metricValue sums the samples of a metric whose label set contains all of
// the given label pairs.
func metricValue(t *testing.T, agent *framework.Agent, name string, labels ...string) float64 {
	t.Helper()
	v, err := scrapeMetric(t.Context(), agent, name, labels...)
	framework.Must(t, err, "scrape metric %s", name)
	return v
}

// scrapeMetric is metricValue that returns the failure.
func scrapeMetric(ctx context.Context, agent *framework.Agent, name string, labels ...string) (float64, error) {
	_, body, err := framework.Get(ctx, "http://"+agent.MetricsAddress+"/metrics")
	if err != nil {
		return 0, err
	}
	return sumSamples(body, name, labels...), nil
}

// writes sums the agent's write requests (both sides).
func writes(t *testing.T, agent *framework.Agent) float64 {
	t.Helper()
	var sum float64
	for _, verb := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		sum += metricValue(t, agent, "rest_client_requests_total", `method="`+verb+`"`)
	}
	return sum
}

// TestSyncRestartZeroWrites restarts the agent with everything in sync and
// counts its write requests: there must be none, with our PublishedResource
// CRD and with the reference's (no status.conditions: the agent must know
// before it writes that they would be pruned).
func TestSyncRestartZeroWrites(t *testing.T) {
	t.Parallel()
	const objects = 20
	t.Run("our CRD", func(t *testing.T) {
		t.Parallel()
		f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
			[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
		restartWritesNothing(t, f, ws[0], agent, objects)
	})
	t.Run("the reference's CRD", func(t *testing.T) {
		t.Parallel()
		f := framework.NewFixture(t, testKcp)
		installReferenceCRD(t, f.Service)
		f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
		framework.Must(t, f.Service.Client.Create(t.Context(), thingsPR()), "create PublishedResource")
		agent := framework.StartAgent(t, f.AgentArgs()...)
		pr := f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "resourceSchemaName", func(pr *syncagentv1alpha1.PublishedResource) bool {
			return pr.Status.ResourceSchemaName != ""
		})
		var exp *kcpapisv1alpha2.APIExport
		framework.WaitFor(t, schemaTimeout, "the export to list the schema", func(ctx context.Context) (bool, error) {
			var err error
			exp, err = getExport(ctx, f.Org, f.Export.Name)
			return err == nil && slices.Contains(exportSchemas(exp), pr.Status.ResourceSchemaName), err
		})
		ws := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
		restartWritesNothing(t, f, ws, agent, objects)
	})
}

// restartWritesNothing syncs n objects of ws, restarts the agent and checks
// that the new process, once it reconciled them all, wrote nothing.
func restartWritesNothing(t *testing.T, f *framework.Fixture, ws *framework.Workspace, agent *framework.Agent, n int) {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		framework.Must(t, ws.Client.Create(ctx, newObject(kcpThing, "default", fmt.Sprintf("thing-%d", i), map[string]any{"color": "blue"})), "create Thing")
	}
	framework.WaitFor(t, syncTimeout, "all local copies", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, ws.ClusterName)
		return len(items) == n, err
	})
	// Let the last requeues settle, then restart.
	time.Sleep(5 * time.Second)
	agent.Stop(30 * time.Second)

	agent = framework.StartAgent(t, f.AgentArgs()...)
	agent.WaitReady(t, agentReadyTimeout)
	framework.WaitFor(t, syncTimeout, "every object to be reconciled after the restart", func(context.Context) (bool, error) {
		return metricValue(t, agent, "controller_runtime_reconcile_total", `controller="syncagent-sync"`, `result="success"`) >= float64(n), nil
	})
	time.Sleep(5 * time.Second)
	if w := writes(t, agent); w != 0 {
		t.Errorf("the restarted agent made %v write requests with everything in sync, want 0; log: %s", w, agent.LogPath)
	}
}

// TestSyncControllerLifecycle: one controller per PublishedResource; an
// update restarts only that one; disabling stops syncing new objects but
// still processes deletions; deleting a PublishedResource releases the
// finalizers of its objects.
func TestSyncControllerLifecycle(t *testing.T) {
	t.Parallel()
	kcpGadget := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"}
	localGadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	gadgets := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1"), framework.TestCRD("example.com", "Gadget", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR(), gadgets}, 1)
	ctx := t.Context()
	kcpc, svc := ws[0].Client, f.Service.Client

	if n := metricValue(t, agent, "sync_agent_sync_controllers"); n != 2 {
		t.Fatalf("running sync controllers = %v, want 2", n)
	}
	starts := func(pr string) int {
		return int(metricValue(t, agent, "sync_agent_sync_controller_starts_total", `published_resource="`+pr+`"`))
	}
	if starts("things") != 1 || starts("gadgets") != 1 {
		t.Fatalf("controller starts: things %d, gadgets %d, want 1 each", starts("things"), starts("gadgets"))
	}

	// Both sync; then updating gadgets restarts only its controller.
	framework.Must(t, kcpc.Create(ctx, newObject(kcpThing, "default", "t1", map[string]any{"color": "x"})), "create Thing")
	framework.Must(t, kcpc.Create(ctx, newObject(kcpGadget, "default", "g1", map[string]any{"color": "x"})), "create Gadget")
	waitLocal(t, svc, localThing, ws[0].ClusterName, sha3short("default")+"-"+sha3short("t1"))
	waitLocal(t, svc, localGadget, ws[0].ClusterName, sha3short("default")+"-"+sha3short("g1"))

	updatePR(t, f, "gadgets", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name }}"}
	})
	framework.WaitFor(t, syncTimeout, "gadgets' controller to restart", func(context.Context) (bool, error) { return starts("gadgets") == 2, nil })
	if starts("things") != 1 {
		t.Errorf("updating gadgets restarted things' controller")
	}
	if n := metricValue(t, agent, "sync_agent_sync_controllers"); n != 2 {
		t.Errorf("running sync controllers after a restart = %v, want 2 (no leak)", n)
	}

	// Disable gadgets: new objects are not synced, deletions still are.
	updatePR(t, f, "gadgets", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Synchronization = &syncagentv1alpha1.SynchronizationSpec{Enabled: false}
	})
	f.Service.WaitForPublishedResource(t, "gadgets", syncTimeout, "SyncDisabled",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSyncDisabled))
	framework.Must(t, kcpc.Create(ctx, newObject(kcpGadget, "default", "g2", map[string]any{"color": "x"})), "create Gadget")
	g1 := newObject(kcpGadget, "default", "g1", nil)
	framework.Must(t, kcpc.Delete(ctx, g1), "delete Gadget g1")
	framework.WaitFor(t, syncTimeout, "g1's deletion to be processed", func(ctx context.Context) (bool, error) {
		err := kcpc.Get(ctx, types.NamespacedName{Namespace: "default", Name: "g1"}, g1)
		return err != nil && ctrlruntimeclient.IgnoreNotFound(err) == nil, nil
	})
	g2 := newObject(kcpGadget, "default", "g2", nil)
	framework.Must(t, kcpc.Get(ctx, types.NamespacedName{Namespace: "default", Name: "g2"}, g2), "get g2")
	if len(g2.GetFinalizers()) != 0 {
		t.Errorf("a disabled PublishedResource accepted a new object: finalizers %v", g2.GetFinalizers())
	}

	// Delete things: its objects' finalizers are released, local copies stay.
	framework.Must(t, svc.Delete(ctx, thingsPR()), "delete PublishedResource things")
	framework.WaitFor(t, syncTimeout, "t1's finalizer to be released", func(ctx context.Context) (bool, error) {
		t1 := newObject(kcpThing, "default", "t1", nil)
		if err := kcpc.Get(ctx, types.NamespacedName{Namespace: "default", Name: "t1"}, t1); err != nil {
			return false, err
		}
		return len(t1.GetFinalizers()) == 0, nil
	})
	// Events are sent asynchronously, after the finalizer is gone.
	framework.WaitFor(t, syncTimeout, "an ObjectReleased Event on t1", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, ws[0], "default", "t1")["ObjectReleased"], nil
	})
	items, err := localCopies(ctx, svc, ws[0].ClusterName)
	framework.Must(t, err, "list local copies")
	if len(items) != 1 {
		t.Errorf("local copies of things = %d after deleting the PublishedResource, want 1 (kept)", len(items))
	}
	framework.WaitFor(t, syncTimeout, "one running controller", func(context.Context) (bool, error) {
		return metricValue(t, agent, "sync_agent_sync_controllers") == 1, nil
	})
}

func updatePR(t *testing.T, f *framework.Fixture, name string, mutate func(*syncagentv1alpha1.PublishedResourceSpec)) {
	t.Helper()
	// The agent writes the PublishedResource too (status, finalizer): on a
	// conflict, read it again, as kubectl edit would have a user do.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pr := &syncagentv1alpha1.PublishedResource{}
		if err := f.Service.Client.Get(t.Context(), types.NamespacedName{Name: name}, pr); err != nil {
			return err
		}
		mutate(&pr.Spec)
		return f.Service.Client.Update(t.Context(), pr)
	})
	framework.Must(t, err, "update PublishedResource %s", name)
}

// TestReleaseWhileAgentStopped: a PublishedResource deleted while the agent
// is down is kept by the agent's finalizer until the agent, back, has
// released its objects in kcp; then it goes, and consumers can delete
// their objects. SyncReady never claims Running for it meanwhile.
func TestReleaseWhileAgentStopped(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	ctx := t.Context()
	kcpc, svc := ws[0].Client, f.Service.Client
	framework.Must(t, kcpc.Create(ctx, newObject(kcpThing, "default", "kept", map[string]any{"color": "x"})), "create Thing")
	waitOnlyCopy(t, svc, ws[0].ClusterName)

	pr := &syncagentv1alpha1.PublishedResource{}
	framework.Must(t, svc.Get(ctx, types.NamespacedName{Name: "things"}, pr), "get PublishedResource")
	if !slices.ContainsFunc(pr.Finalizers, func(f string) bool { return strings.HasPrefix(f, "syncagent.kcp.io/release-") }) {
		t.Fatalf("the PublishedResource lacks the release finalizer: %v", pr.Finalizers)
	}
	agent.Stop(30 * time.Second)
	framework.Must(t, svc.Delete(ctx, pr), "delete PublishedResource things")
	framework.Must(t, svc.Get(ctx, types.NamespacedName{Name: "things"}, pr), "the deleted PublishedResource stays while the agent is down")

	agent = framework.StartAgent(t, f.AgentArgs()...)
	waitGone(t, svc, pr, "the PublishedResource")
	thing := newObject(kcpThing, "default", "kept", nil)
	framework.Must(t, kcpc.Get(ctx, types.NamespacedName{Namespace: "default", Name: "kept"}, thing), "get Thing")
	if len(thing.GetFinalizers()) != 0 {
		t.Fatalf("the Thing still has finalizers %v", thing.GetFinalizers())
	}
	framework.Must(t, kcpc.Delete(ctx, thing), "delete Thing")
	waitGone(t, kcpc, thing, "the consumer's deleted Thing")
	agent.NoErrors(t)
}

// TestProjectionChangeReleasesOldObjects: a PublishedResource whose
// projection moves its objects to another kcp group stops syncing the old
// type; the objects of the old type lose our finalizer (consumers can
// delete them), and objects of the new type sync.
func TestProjectionChangeReleasesOldObjects(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	ctx := t.Context()
	kcpc, svc := ws[0].Client, f.Service.Client
	framework.Must(t, kcpc.Create(ctx, newObject(kcpThing, "default", "old", map[string]any{"color": "x"})), "create Thing")
	waitOnlyCopy(t, svc, ws[0].ClusterName)
	framework.Must(t, kcpc.Create(ctx, newObject(kcpThing, "default", "kept", map[string]any{"color": "keep-me"})), "create Thing")
	waitCopies(t, f, ws[0].ClusterName, 2)

	updatePR(t, f, "things", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection.Group = "kcp2.example.com"
	})
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady for the new group", func(pr *syncagentv1alpha1.PublishedResource) bool {
		c := findCondition(pr, syncagentv1alpha1.ConditionSyncReady)
		return c != nil && c.Reason == syncagentv1alpha1.ReasonRunning && strings.Contains(c.Message, "kcp2.example.com") &&
			pr.Annotations["syncagent.kcp.io/synced-resources"] == "things.kcp2.example.com"
	})
	old := newObject(kcpThing, "default", "old", nil)
	framework.WaitFor(t, syncTimeout, "the old Thing to be released", func(ctx context.Context) (bool, error) {
		if err := kcpc.Get(ctx, types.NamespacedName{Namespace: "default", Name: "old"}, old); err != nil {
			return false, err
		}
		return len(old.GetFinalizers()) == 0, nil
	})
	framework.Must(t, kcpc.Delete(ctx, old), "delete the old Thing")

	newThing := schema.GroupVersionKind{Group: "kcp2.example.com", Version: "v1", Kind: "Thing"}
	framework.WaitFor(t, syncTimeout, "a Thing of the new group to be created", func(ctx context.Context) (bool, error) {
		err := kcpc.Create(ctx, newObject(newThing, "default", "new", map[string]any{"color": "y"}))
		return err == nil, ctrlruntimeclient.IgnoreNotFound(ignoreNoMatch(err))
	})
	framework.WaitFor(t, syncTimeout, "the new Thing's local copy", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, svc, ws[0].ClusterName)
		for _, it := range items {
			if it.GetAnnotations()["syncagent.kcp.io/remote-object-name"] == "new" {
				return true, nil
			}
		}
		return false, err
	})
	agent.NoErrors(t)

	// A Thing of the new kind with the name of an old one that still
	// exists: the old copy, which records its kind, is neither taken over
	// (its name is taken: ObjectConflict) nor deleted with the new Thing.
	keptCopy := func() *unstructured.Unstructured {
		t.Helper()
		items, err := localCopies(ctx, svc, ws[0].ClusterName)
		framework.Must(t, err, "list the local copies")
		for i := range items {
			if items[i].GetAnnotations()["syncagent.kcp.io/remote-object-name"] == "kept" {
				return &items[i]
			}
		}
		t.Fatal("the old kept Thing's copy is gone")
		return nil
	}
	if kind := keptCopy().GetAnnotations()["syncagent.kcp.io/remote-object-kind"]; kind != "Thing.kcp.example.com" {
		t.Errorf("the old copy records kind %q, want Thing.kcp.example.com", kind)
	}
	framework.Must(t, kcpc.Create(ctx, newObject(newThing, "default", "kept", map[string]any{"color": "overwrite"})), "create a new Thing named kept")
	framework.WaitFor(t, syncTimeout, "ObjectConflict on the new kept Thing", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, ws[0], "default", "kept")["ObjectConflict"], nil
	})
	newKept := newObject(newThing, "default", "kept", nil)
	framework.Must(t, kcpc.Delete(ctx, newKept), "delete the new kept Thing")
	waitGone(t, kcpc, newKept, "the new kept Thing")
	if color, _, _ := unstructured.NestedString(keptCopy().Object, "spec", "color"); color != "keep-me" {
		t.Errorf("the old kept Thing's copy has color %q, want keep-me", color)
	}
}

// TestControllerRestartsLeaveNoGoroutines restarts a PublishedResource's
// controller 20 times (each update of its spec does) with three engaged
// workspaces: the agent's goroutines come back to where they were (event
// handlers and their informer listeners are removed with each controller).
func TestControllerRestartsLeaveNoGoroutines(t *testing.T) {
	t.Parallel()
	const restarts = 20
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 3)
	ctx := t.Context()
	for i, w := range ws {
		framework.Must(t, w.Client.Create(ctx, newObject(kcpThing, "default", fmt.Sprintf("t%d", i), map[string]any{"color": "x"})), "create Thing")
		waitOnlyCopy(t, f.Service.Client, w.ClusterName)
	}
	starts := func() int {
		return int(metricValue(t, agent, "sync_agent_sync_controller_starts_total", `published_resource="things"`))
	}
	restart := func(i int) {
		want := starts() + 1
		// A resource filter that every object passes, set or dropped.
		updatePR(t, f, "things", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Filter = nil
			if i%2 == 1 {
				s.Filter = &syncagentv1alpha1.ResourceFilter{Resource: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "never-set", Operator: metav1.LabelSelectorOpDoesNotExist},
				}}}
			}
		})
		framework.WaitFor(t, syncTimeout, "the controller to restart", func(context.Context) (bool, error) { return starts() >= want, nil })
		f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady", func(pr *syncagentv1alpha1.PublishedResource) bool {
			c := findCondition(pr, syncagentv1alpha1.ConditionSyncReady)
			return c != nil && c.Reason == syncagentv1alpha1.ReasonRunning && c.ObservedGeneration == pr.Generation
		})
	}
	// Two restarts first: what the first restarts start once (queue
	// metrics, a second endpoint connection) is part of the baseline.
	restart(1)
	restart(2)
	time.Sleep(5 * time.Second)
	baseline := metricValue(t, agent, "go_goroutines")
	for i := range restarts {
		restart(i + 3)
	}
	// 15 goroutines of slack for connections and timers; a leak of the
	// handlers of one restart would be 8 (a listener is 2 goroutines).
	framework.WaitFor(t, time.Minute, fmt.Sprintf("goroutines back to the baseline of %v", baseline), func(context.Context) (bool, error) {
		return metricValue(t, agent, "go_goroutines") <= baseline+15, nil
	})
	converged(t, f, ws, thingsResource)
	agent.NoErrors(t)
}

// TestCreateThenDeleteLeavesNothing: 200 objects in 10 workspaces, each
// deleted right after its creation (while the agent may be creating its
// copy, which its cache has not seen yet). Every deletion completes and no
// local copy or state Secret stays behind.
func TestCreateThenDeleteLeavesNothing(t *testing.T) {
	t.Parallel()
	const workspaces, perWorkspace = 10, 20
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, workspaces)
	ctx := t.Context()
	var g errgroup.Group
	for _, w := range ws {
		g.Go(func() error {
			for i := range perWorkspace {
				obj := newObject(kcpThing, "default", fmt.Sprintf("short-%d", i), map[string]any{"color": "x"})
				if err := w.Client.Create(ctx, obj); err != nil {
					return err
				}
				if err := w.Client.Delete(ctx, obj); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create and delete: %v", err)
	}
	// What is left is returned as the error, so that a timeout names it.
	framework.WaitFor(t, 2*syncTimeout, "every Thing gone in kcp, no copy and no state left", func(ctx context.Context) (bool, error) {
		var left []string
		for _, w := range ws {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(kcpThing.GroupVersion().WithKind("ThingList"))
			if err := w.Client.List(ctx, list); err != nil {
				return false, err
			}
			for _, item := range list.Items {
				left = append(left, fmt.Sprintf("kcp %s|%s finalizers=%v deleting=%v", w.ClusterName, item.GetName(), item.GetFinalizers(), item.GetDeletionTimestamp() != nil))
			}
			items, err := localCopies(ctx, f.Service.Client, w.ClusterName)
			if err != nil {
				return false, err
			}
			for _, item := range items {
				left = append(left, fmt.Sprintf("copy %s/%s finalizers=%v deleting=%v", item.GetNamespace(), item.GetName(), item.GetFinalizers(), item.GetDeletionTimestamp() != nil))
			}
		}
		secrets := &corev1.SecretList{}
		if err := f.Service.Client.List(ctx, secrets, ctrlruntimeclient.InNamespace(framework.AgentNamespace),
			ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/object-state": "true"}); err != nil {
			return false, err
		}
		for _, s := range secrets.Items {
			left = append(left, "state "+s.Name)
		}
		if len(left) > 0 {
			return false, fmt.Errorf("%d left: %s", len(left), strings.Join(left[:min(len(left), 10)], "; "))
		}
		return true, nil
	})
	converged(t, f, ws, thingsResource)
	agent.NoErrors(t)
}

// TestUnusedKcpInformersAreDropped: once a PublishedResource is deleted,
// the kcp informers only its controller used (its type in every workspace
// of the endpoint) are dropped by making the endpoint's connection again
// after --unused-kcp-informer-timeout; the other PublishedResource keeps
// syncing across the new connection, and nothing is remade again.
func TestUnusedKcpInformersAreDropped(t *testing.T) {
	t.Parallel()
	gadgets := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1"), framework.TestCRD("example.com", "Gadget", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR(), gadgets}, 2, "--unused-kcp-informer-timeout=4s")
	ctx := t.Context()
	svc := f.Service.Client
	framework.Must(t, ws[0].Client.Create(ctx, newObject(kcpThing, "default", "t1", map[string]any{"color": "x"})), "create Thing")
	framework.Must(t, ws[0].Client.Create(ctx, newObject(kcpGadget, "default", "g1", map[string]any{"color": "x"})), "create Gadget")
	waitLocal(t, svc, localThing, ws[0].ClusterName, sha3short("default")+"-"+sha3short("t1"))
	waitLocal(t, svc, localGadget, ws[0].ClusterName, sha3short("default")+"-"+sha3short("g1"))
	remade := func() float64 {
		return metricValue(t, agent, "sync_agent_endpoint_reconnects_total", `reason="unused_informers"`)
	}
	if n, unused := remade(), metricValue(t, agent, "sync_agent_kcp_informers_unused"); n != 0 || unused != 0 {
		t.Fatalf("before any PublishedResource went: %v connections remade, %v unused informers; want 0 and 0", n, unused)
	}

	framework.Must(t, svc.Delete(ctx, gadgets), "delete PublishedResource gadgets")
	framework.WaitFor(t, syncTimeout, "the connection remade without the Gadgets' informer", func(context.Context) (bool, error) {
		return remade() == 1 && metricValue(t, agent, "sync_agent_kcp_informers_unused") == 0, nil
	})
	// Things sync across the new connection: an update of an existing
	// object and a new object in the other workspace.
	framework.Must(t, ws[0].Client.Patch(ctx, newObject(kcpThing, "default", "t1", nil),
		ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"y"}}`))), "update Thing t1")
	framework.Must(t, ws[1].Client.Create(ctx, newObject(kcpThing, "default", "t2", map[string]any{"color": "x"})), "create Thing")
	waitLocal(t, svc, localThing, ws[1].ClusterName, sha3short("default")+"-"+sha3short("t2"))
	// (Not the invariant checker: the Gadget's copy and state stay after its
	// PublishedResource went, as they should, and it would count them.)
	framework.WaitFor(t, syncTimeout, "t1's update in its copy", func(ctx context.Context) (bool, error) {
		local := waitLocal(t, svc, localThing, ws[0].ClusterName, sha3short("default")+"-"+sha3short("t1"))
		color, _, _ := unstructured.NestedString(local.Object, "spec", "color")
		return color == "y", nil
	})
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	// Nothing is left to drop: the connection is not remade again (three
	// more timeouts).
	time.Sleep(12 * time.Second)
	if n := remade(); n != 1 {
		t.Errorf("connections remade for unused informers = %v, want 1 (the informers in use were counted unused)", n)
	}
	agent.NoErrors(t)
}
