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

package sync

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

var thingGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}

func thing(cluster, name string) *unstructured.Unstructured {
	o := typed(thingGVK)
	o.SetName(name)
	o.SetAnnotations(map[string]string{"kcp.io/cluster": cluster})
	return o
}

// hubHarness drives a hub with two endpoints.
type hubHarness struct {
	t         *testing.T
	hub       *hub
	queue     workqueue.TypedRateLimitingInterface[mcreconcile.Request]
	endpoints map[string]*fakeInformers
	// cancel disengages a workspace.
	cancel  map[string]context.CancelFunc
	stopHub context.CancelFunc
}

func newHubHarness(t *testing.T) *hubHarness {
	t.Helper()
	primary := kcpWatch{obj: typed(thingGVK), keys: func(_ Workspace, _, obj *unstructured.Unstructured) []types.NamespacedName {
		return []types.NamespacedName{{Name: obj.GetName()}}
	}}
	h := &hubHarness{
		t:         t,
		hub:       newHub(logr.Discard(), []kcpWatch{primary}),
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]()),
		endpoints: map[string]*fakeInformers{"a": newFakeInformers(), "b": newFakeInformers()},
		cancel:    map[string]context.CancelFunc{},
	}
	t.Cleanup(h.queue.ShutDown)
	return h
}

func (h *hubHarness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.stopHub = cancel
	h.t.Cleanup(cancel)
	if err := h.hub.Start(ctx, h.queue); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hubHarness) engage(name, endpoint string) {
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	h.cancel[name] = cancel
	ep := h.endpoints[endpoint]
	h.hub.Engage(ctx, Workspace{Name: name, Cluster: &fakeCluster{name: name, endpoint: ep}, Endpoint: ep, EndpointID: endpoint})
}

// engageOn engages a workspace through an endpoint of the test's own
// (whose objects live in objects).
func (h *hubHarness) engageOn(name, endpointID string, ep cache.Informers, objects *fakeInformers) {
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	h.hub.Engage(ctx, Workspace{Name: name, Cluster: &fakeCluster{name: name, endpoint: objects}, Endpoint: ep, EndpointID: endpointID})
}

// stopInBackground stops the hub; the channel closes once stop returned.
func (h *hubHarness) stopInBackground() <-chan struct{} {
	stopped := make(chan struct{})
	go func() {
		h.hub.stop()
		close(stopped)
	}()
	return stopped
}

func (h *hubHarness) add(endpoint, cluster, name string) {
	h.endpoints[endpoint].informer(thingGVK).add(thing(cluster, name))
}

// drain returns the queued requests as "cluster/name", sorted, once the
// queue has been quiet for a moment.
func (h *hubHarness) drain() []string {
	var got []string
	for {
		if h.queue.Len() == 0 {
			time.Sleep(50 * time.Millisecond)
			if h.queue.Len() == 0 {
				break
			}
		}
		req, _ := h.queue.Get()
		got = append(got, req.ClusterName+"/"+req.Name)
		h.queue.Done(req)
		h.queue.Forget(req)
	}
	slices.Sort(got)
	return got
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *hubHarness) handlers(endpoint string) int { return h.endpoints[endpoint].handlerCount() }

func TestHubStateTransitions(t *testing.T) {
	type step struct {
		do func(h *hubHarness)
		// handlers per endpoint after the step (checked with a wait).
		handlersA, handlersB int
		// queued requests after the step.
		queued []string
	}
	testcases := []struct {
		name  string
		steps []step
	}{
		{
			name: "workspaces engaged before start share one handler per endpoint",
			steps: []step{
				{do: func(h *hubHarness) { h.engage("ws1", "a"); h.engage("ws2", "a"); h.engage("ws3", "b") }},
				{do: func(h *hubHarness) { h.start() }, handlersA: 1, handlersB: 1},
			},
		},
		{
			name: "an event is enqueued once, for its own workspace",
			steps: []step{
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a"); h.engage("ws2", "a"); h.engage("ws3", "a") }, handlersA: 1},
				{do: func(h *hubHarness) { h.add("a", "ws2", "x") }, handlersA: 1, queued: []string{"ws2/x"}},
			},
		},
		{
			name: "events of workspaces that are not engaged, or engaged through another endpoint, are dropped",
			steps: []step{
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a"); h.engage("ws2", "b") }, handlersA: 1, handlersB: 1},
				{do: func(h *hubHarness) { h.add("a", "other", "x"); h.add("a", "ws2", "y") }, handlersA: 1, handlersB: 1},
			},
		},
		{
			name: "a workspace engaged later gets its existing objects, and only those",
			steps: []step{
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a") }, handlersA: 1},
				{do: func(h *hubHarness) { h.add("a", "ws2", "x"); h.add("a", "ws1", "y") }, handlersA: 1, queued: []string{"ws1/y"}},
				{do: func(h *hubHarness) { h.engage("ws2", "a") }, handlersA: 1, queued: []string{"ws2/x"}},
			},
		},
		{
			name: "the new handler of an endpoint lists the objects of its engaged workspaces",
			steps: []step{
				{do: func(h *hubHarness) { h.add("a", "ws1", "x"); h.add("a", "ws9", "z") }},
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a") }, handlersA: 1, queued: []string{"ws1/x"}},
			},
		},
		{
			name: "disengaging the last workspace of an endpoint removes its handler; events are dropped",
			steps: []step{
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a"); h.engage("ws2", "a") }, handlersA: 1},
				{do: func(h *hubHarness) { h.cancel["ws1"]() }, handlersA: 1},
				{do: func(h *hubHarness) { h.add("a", "ws1", "x") }, handlersA: 1},
				{do: func(h *hubHarness) { h.cancel["ws2"]() }},
				{do: func(h *hubHarness) { h.add("a", "ws2", "y") }},
			},
		},
		{
			name: "a workspace engaged again after it left gets a handler again",
			steps: []step{
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a") }, handlersA: 1},
				{do: func(h *hubHarness) { h.cancel["ws1"]() }},
				{do: func(h *hubHarness) { h.add("a", "ws1", "x"); h.engage("ws1", "a") }, handlersA: 1, queued: []string{"ws1/x"}},
			},
		},
		{
			name: "a workspace that moves to another endpoint follows it",
			steps: []step{
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a") }, handlersA: 1},
				{do: func(h *hubHarness) { h.engage("ws1", "b") }, handlersB: 1},
				{do: func(h *hubHarness) { h.add("a", "ws1", "old"); h.add("b", "ws1", "new") }, handlersB: 1, queued: []string{"ws1/new"}},
			},
		},
		{
			name: "stopping removes every handler and ignores later engagements",
			steps: []step{
				{do: func(h *hubHarness) { h.start(); h.engage("ws1", "a"); h.engage("ws2", "b") }, handlersA: 1, handlersB: 1},
				{do: func(h *hubHarness) { h.stopHub() }},
				{do: func(h *hubHarness) { h.engage("ws3", "a"); h.add("a", "ws3", "x") }},
			},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHubHarness(t)
			for i, s := range tc.steps {
				s.do(h)
				eventually(t, fmt.Sprintf("step %d: %d handler(s) on endpoint a, %d on b", i, s.handlersA, s.handlersB), func() bool {
					return h.handlers("a") == s.handlersA && h.handlers("b") == s.handlersB
				})
				if got := h.drain(); !slices.Equal(got, s.queued) {
					t.Fatalf("step %d: queued %v, want %v", i, got, s.queued)
				}
			}
		})
	}
}

// TestHubRouting100Workspaces: one kcp event is one reconcile, whatever
// the number of engaged workspaces (the provider's scoped informers gave
// one per workspace).
func TestHubRouting100Workspaces(t *testing.T) {
	h := newHubHarness(t)
	h.start()
	for i := range 100 {
		h.engage(fmt.Sprintf("ws%d", i), "a")
	}
	eventually(t, "one handler", func() bool { return h.handlers("a") == 1 })
	if got := h.drain(); len(got) != 0 {
		t.Fatalf("queued before any event: %v", got)
	}
	for i := range 100 {
		h.add("a", fmt.Sprintf("ws%d", i), "x")
	}
	if got := h.drain(); len(got) != 100 {
		t.Fatalf("100 events gave %d requests, want 100", len(got))
	}
}

// TestControllerRestartsLeaveNothing starts and stops a sync controller 100
// times with engaged workspaces: no handler stays registered on any
// informer, the service-side informers are removed (and none is created for
// a related type without a watch), and the number of goroutines returns to
// where it was.
func TestControllerRestartsLeaveNothing(t *testing.T) {
	endpoint, local, relatedCache := newFakeInformers(), newFakeInformers(), newFakeInformers()
	secretGVK := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	configMapGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	opts := testOptions(t)
	opts.LocalCache, opts.RelatedCache = local, relatedCache
	opts.PublishedResource.Spec.Related = relatedSpecs()
	opts.RelatedTypes = []RelatedTypes{
		{Kcp: relatedType(secretGVK, "secrets"), Service: relatedType(secretGVK, "secrets")},
		{Kcp: relatedType(configMapGVK, "configmaps"), Service: relatedType(configMapGVK, "configmaps")},
	}
	wsCtx, disengage := context.WithCancel(context.Background())
	defer disengage()

	run := func() {
		stop := startSynced(t, opts, func(c *Controller) {
			for i := range 3 {
				name := fmt.Sprintf("ws%d", i)
				c.Engage(wsCtx, Workspace{Name: name, Cluster: &fakeCluster{name: name, endpoint: endpoint}, Endpoint: endpoint})
			}
		})
		// kcp: the primaries and the kcp-origin Secrets; service: the
		// copies and the service-origin ConfigMaps.
		eventually(t, "the handlers of a running controller", func() bool {
			return endpoint.handlerCount() == 2 && local.handlerCount() == 1 && relatedCache.handlerCount() == 1
		})
		// The service-side copies of the kcp-origin Secrets are not
		// watched: they are read from the server, with no informer.
		if relatedCache.has(secretGVK) {
			t.Fatal("the related cache has an informer of the unwatched Secrets")
		}
		stop()
	}

	run() // warm up: the first run starts goroutines that live on (queue metrics, for one)
	baseline := runtime.NumGoroutine()
	for range 100 {
		run()
	}
	eventually(t, "no handlers left", func() bool {
		return endpoint.handlerCount() == 0 && local.handlerCount() == 0 && relatedCache.handlerCount() == 0
	})
	if local.removed != 101 || relatedCache.removed != 101 {
		t.Errorf("informers removed: %d local (want 101), %d related (want 101: the watched ConfigMaps)", local.removed, relatedCache.removed)
	}
	eventually(t, fmt.Sprintf("goroutines back to %d", baseline), func() bool { return runtime.NumGoroutine() <= baseline+2 })
}

// TestHubWaitsUntilTheEndpointLists: kcp's wildcard list of a new type
// lags its discovery; the handler (whose informer would log failed
// watches meanwhile) is added once the endpoint lists the type.
func TestHubWaitsUntilTheEndpointLists(t *testing.T) {
	h := newHubHarness(t)
	h.hub.watches[0].gvr = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	var mu sync.Mutex
	calls := 0
	lists := func(_ context.Context, gvr schema.GroupVersionResource) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls < 3 {
			return apierrors.NewNotFound(gvr.GroupResource(), "")
		}
		return nil
	}
	h.start()
	ep := h.endpoints["a"]
	h.hub.Engage(context.Background(), Workspace{Name: "ws1", Cluster: &fakeCluster{name: "ws1", endpoint: ep}, Endpoint: ep, Lists: lists})
	eventually(t, "the handler", func() bool { return h.handlers("a") == 1 })
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Errorf("listed %d times, want 3 (two not found, then found)", calls)
	}
}

// TestFailedStartsReleaseTheirWorkspaces: a start that fails before the
// controller runs (here the preflight) stops its hub, so the workspaces'
// contexts do not keep every failed controller alive (one per retry).
func TestFailedStartsReleaseTheirWorkspaces(t *testing.T) {
	endpoint := newFakeInformers()
	opts := testOptions(t)
	opts.LocalCache, opts.RelatedCache = newFakeInformers(), newFakeInformers()
	opts.Preflight = func(context.Context, []schema.GroupVersionResource) error { return errors.New("forbidden") }
	wsCtx, disengage := context.WithCancel(context.Background())
	defer disengage()
	for range 10 {
		c, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			name := fmt.Sprintf("ws%d", i)
			c.Engage(wsCtx, Workspace{Name: name, Cluster: &fakeCluster{name: name, endpoint: endpoint}, Endpoint: endpoint})
		}
		if err := c.Start(context.Background()); err == nil {
			t.Fatal("want the preflight's error")
		}
		c.hub.mu.Lock()
		held := len(c.hub.workspaces)
		c.hub.mu.Unlock()
		if held != 0 {
			t.Fatalf("a failed start still holds %d workspaces", held)
		}
	}
}

// slowInformers makes the lookup of one type's informer wait (a discovery
// request of the REST mapper) until unblocked.
type slowInformers struct {
	*fakeInformers
	slow    schema.GroupVersionKind
	entered chan struct{}
	unblock chan struct{}
}

func (s *slowInformers) GetInformer(ctx context.Context, obj ctrlruntimeclient.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if obj.GetObjectKind().GroupVersionKind() == s.slow {
		close(s.entered)
		<-s.unblock
	}
	return s.fakeInformers.GetInformer(ctx, obj, opts...)
}

// TestStopWhileASourceStartsLeavesNoInformer: a controller stopped while a
// service-side source still looks up its informer does not release the
// informer before the source is done (which would create it again, with
// nobody left to remove it).
func TestStopWhileASourceStartsLeavesNoInformer(t *testing.T) {
	configMapGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretGVK := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	slow := &slowInformers{fakeInformers: newFakeInformers(), slow: configMapGVK, entered: make(chan struct{}), unblock: make(chan struct{})}
	opts := testOptions(t)
	opts.LocalCache, opts.RelatedCache = newFakeInformers(), slow
	opts.PublishedResource.Spec.Related = relatedSpecs()
	opts.RelatedTypes = []RelatedTypes{
		{Kcp: relatedType(secretGVK, "secrets"), Service: relatedType(secretGVK, "secrets")},
		{Kcp: relatedType(configMapGVK, "configmaps"), Service: relatedType(configMapGVK, "configmaps")},
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	<-slow.entered
	cancel()
	time.AfterFunc(100*time.Millisecond, func() { close(slow.unblock) })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a stopped controller's Start returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return")
	}
	<-slow.unblock
	time.Sleep(100 * time.Millisecond) // a source that went on would have created it by now
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if _, exists := slow.informers[configMapGVK]; exists {
		t.Error("the informer exists after its last user stopped")
	}
}

// TestSourceStartedAfterTheStopAddsNothing: controller-runtime may start a
// source after the controller's Start returned (its start goroutine
// outlives a timed-out wait); such a source must not create the informer
// that the stop has already released.
func TestSourceStartedAfterTheStopAddsNothing(t *testing.T) {
	informers := newFakeInformers()
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	s := newLocalSource(informers, obj, func(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) []mcreconcile.Request {
		return nil
	})
	s.shut()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]())
	defer queue.ShutDown()
	if err := s.Start(context.Background(), queue); err == nil {
		t.Error("a shut source started")
	}
	time.Sleep(100 * time.Millisecond)
	if informers.has(gvk) {
		t.Error("a source started after the stop created an informer")
	}
}

// TestKcpInformersAreRecordedPerEndpoint: the kcp types whose informers a
// controller used (its handlers', its reads') are recorded per endpoint
// cache, for the fleet to tell which informers nobody uses any more.
func TestKcpInformersAreRecordedPerEndpoint(t *testing.T) {
	h := newHubHarness(t)
	h.start()
	h.engage("ws1", "a")
	h.engage("ws2", "b")
	eventually(t, "both handlers", func() bool { return h.handlers("a") == 1 && h.handlers("b") == 1 })
	secretGVK := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	ws2, _ := h.hub.workspace("ws2")
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(secretGVK.GroupVersion().WithKind("SecretList"))
	if err := h.hub.reads(ws2).List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for ep, types := range h.hub.informers.snapshot() {
		for _, gvk := range types.UnsortedList() {
			got[ep] = append(got[ep], gvk.Kind)
		}
		slices.Sort(got[ep])
	}
	want := map[string][]string{"a": {"Thing"}, "b": {"Secret", "Thing"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded informers (-want +got):\n%s", diff)
	}
}

// TestHubStopWaitsForRegistrations: a registration under way when the hub
// stops is waited for, so that once the controller's Start returned its
// record of kcp informers is complete and no handler is left behind.
func TestHubStopWaitsForRegistrations(t *testing.T) {
	h := newHubHarness(t)
	ep := &slowInformers{fakeInformers: newFakeInformers(), slow: thingGVK, entered: make(chan struct{}), unblock: make(chan struct{})}
	h.start()
	h.engageOn("ws1", "slow", ep, ep.fakeInformers)
	<-ep.entered
	stopped := h.stopInBackground()
	select {
	case <-stopped:
		t.Fatal("stop returned while a registration was under way")
	case <-time.After(100 * time.Millisecond):
	}
	close(ep.unblock)
	<-stopped
	if n := ep.handlerCount(); n != 0 {
		t.Errorf("%d handlers left after the stop", n)
	}
	if got := h.hub.informers.snapshot()["slow"]; !got.Has(thingGVK) {
		t.Errorf("the informer the registration got is not recorded: %v", got)
	}
}

// failingInformers is an endpoint whose informers cannot be found (a type
// with no REST mapping yet): registrations retry with backoff.
type failingInformers struct{ *fakeInformers }

func (failingInformers) GetInformer(context.Context, ctrlruntimeclient.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return nil, errors.New("no matches for kind")
}

// TestHubStopEndsItsRegistrations: a controller that stops with an error
// while its run context lives on (a service-side source that did not sync)
// stops its hub, whose registrations in backoff end at once instead of
// holding the stop for their next retry.
func TestHubStopEndsItsRegistrations(t *testing.T) {
	h := newHubHarness(t)
	ep := failingInformers{newFakeInformers()}
	h.start() // the run context is never cancelled here
	h.engageOn("ws1", "a", ep, ep.fakeInformers)
	time.Sleep(1500 * time.Millisecond) // in the registration's backoff (1 s, then 2 s)
	stopped := h.stopInBackground()
	select {
	case <-stopped:
	case <-time.After(time.Second):
		t.Fatal("stop waited for a registration's backoff")
	}
}

// Two controllers of one local type (two PublishedResources onto one
// CRD) both start: the second finds the copies index the first added.
func TestControllersShareTheCopiesIndex(t *testing.T) {
	local := newFakeInformers()
	for _, name := range []string{"first", "second"} {
		opts := testOptions(t)
		opts.PublishedResource.Name = name
		opts.LocalCache = local
		defer startSynced(t, opts, nil)()
	}
}

// startSynced starts a controller of opts (after before, if any, has run
// with it) and waits until it has synced; stop stops it and fails the
// test if it returned an error.
func startSynced(t *testing.T, opts Options, before func(*Controller)) (stop func()) {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	select {
	case <-c.Synced():
	case err := <-done:
		cancel()
		t.Fatalf("controller %s stopped: %v", opts.PublishedResource.Name, err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("controller %s did not sync", opts.PublishedResource.Name)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller %s: %v", opts.PublishedResource.Name, err)
		}
	}
}
