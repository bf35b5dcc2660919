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

package syncmanager

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
)

// fakeController is a sync controller whose start the test decides.
type fakeController struct {
	mu      sync.Mutex
	engaged []string
	synced  chan struct{}
	// startErr, if set, is returned by Start at once.
	startErr error
	// stopped is closed when Start has returned.
	stopped chan struct{}
	// kcpTypes are the kcp informers it reports.
	kcpTypes map[string]sets.Set[schema.GroupVersionKind]
	// enqueued are the requests it was handed.
	enqueued []mcreconcile.Request
}

func newFakeController() *fakeController {
	return &fakeController{synced: make(chan struct{}), stopped: make(chan struct{})}
}

func (c *fakeController) Engage(_ context.Context, ws syncctrl.Workspace) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.engaged = append(c.engaged, ws.Name)
}

func (c *fakeController) Start(ctx context.Context) error {
	defer close(c.stopped)
	if c.startErr != nil {
		return c.startErr
	}
	<-ctx.Done()
	// Workers finishing their reconciles.
	time.Sleep(20 * time.Millisecond)
	return nil
}

func (c *fakeController) Synced() <-chan struct{} { return c.synced }

func (c *fakeController) Enqueue(req mcreconcile.Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enqueued = append(c.enqueued, req)
	return true
}

func (c *fakeController) KcpInformers() map[string]sets.Set[schema.GroupVersionKind] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kcpTypes
}

func (c *fakeController) workspaces() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.engaged...)
}

type fleetHarness struct {
	t        *testing.T
	fleet    *fleet
	clock    time.Time
	notified chan string
	stop     context.CancelFunc
	stopped  chan struct{}
}

func newFleetHarness(t *testing.T) *fleetHarness {
	t.Helper()
	h := &fleetHarness{t: t, clock: time.Unix(1000, 0), notified: make(chan string, 100), stopped: make(chan struct{})}
	h.fleet = newFleet(logr.Discard(), nil, nil, 0)
	h.fleet.now = func() time.Time { return h.clock }
	h.fleet.setNotify(func(pr string) { h.notified <- pr })
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() {
		_ = h.fleet.Start(ctx)
		close(h.stopped)
	}()
	if err := h.fleet.waitStarted(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-h.stopped
	})
	return h
}

func (h *fleetHarness) ensure(key controllerKey, c *fakeController) Status {
	return h.fleet.Ensure("pr", key, func() (syncController, error) { return c, nil })
}

func (h *fleetHarness) waitNotified() {
	h.t.Helper()
	select {
	case pr := <-h.notified:
		if pr != "pr" {
			h.t.Fatalf("notified for %q", pr)
		}
	case <-time.After(5 * time.Second):
		h.t.Fatal("the fleet did not ask for a reconcile")
	}
}

func key(generation int64) controllerKey {
	return controllerKey{generation: generation, remoteGVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}}
}

func TestFleetControllerLifecycle(t *testing.T) {
	failing := errors.New("cache did not sync")
	testcases := []struct {
		name string
		run  func(h *fleetHarness)
	}{
		{
			name: "starting, then running once synced",
			run: func(h *fleetHarness) {
				t := h.t
				c := newFakeController()
				if st := h.ensure(key(1), c); st.Phase != PhaseStarting {
					t.Fatalf("got %+v, want starting", st)
				}
				if st := h.ensure(key(1), newFakeController()); st.Phase != PhaseStarting {
					t.Fatalf("same key: got %+v, want starting (kept)", st)
				}
				close(c.synced)
				h.waitNotified()
				if st := h.ensure(key(1), newFakeController()); st.Phase != PhaseRunning {
					t.Fatalf("got %+v, want running", st)
				}
			},
		},
		{
			name: "a controller that stops on its own is dropped, reported and restarted after a growing backoff",
			run: func(h *fleetHarness) {
				t := h.t
				c := newFakeController()
				c.startErr = failing
				h.ensure(key(1), c)
				h.waitNotified()
				st := h.ensure(key(1), newFakeController())
				if st.Phase != PhaseFailed || !errors.Is(st.Err, failing) || st.RetryIn != time.Second {
					t.Fatalf("got %+v, want failed, retry in 1s", st)
				}
				h.clock = h.clock.Add(time.Second)
				again := newFakeController()
				again.startErr = failing
				if st := h.ensure(key(1), again); st.Phase != PhaseStarting {
					t.Fatalf("after the backoff: got %+v, want starting", st)
				}
				h.waitNotified()
				if st := h.ensure(key(1), newFakeController()); st.Phase != PhaseFailed || st.RetryIn != 2*time.Second {
					t.Fatalf("second failure: got %+v, want retry in 2s", st)
				}
			},
		},
		{
			name: "a changed configuration starts at once, whatever the backoff",
			run: func(h *fleetHarness) {
				t := h.t
				c := newFakeController()
				c.startErr = failing
				h.ensure(key(1), c)
				h.waitNotified()
				if st := h.ensure(key(2), newFakeController()); st.Phase != PhaseStarting {
					t.Fatalf("got %+v, want starting", st)
				}
			},
		},
		{
			name: "a build that fails is a failure with backoff",
			run: func(h *fleetHarness) {
				t := h.t
				build := func() (syncController, error) { return nil, failing }
				if st := h.fleet.Ensure("pr", key(1), build); st.Phase != PhaseFailed || st.RetryIn != time.Second {
					t.Fatalf("got %+v", st)
				}
				built := false
				st := h.fleet.Ensure("pr", key(1), func() (syncController, error) { built = true; return newFakeController(), nil })
				if built || st.Phase != PhaseFailed {
					t.Fatalf("within the backoff: built %v, %+v", built, st)
				}
			},
		},
		{
			name: "running resets the backoff",
			run: func(h *fleetHarness) {
				t := h.t
				for range 3 {
					c := newFakeController()
					c.startErr = failing
					h.clock = h.clock.Add(time.Hour)
					h.ensure(key(1), c)
					h.waitNotified()
				}
				h.clock = h.clock.Add(time.Hour)
				ok := newFakeController()
				h.ensure(key(1), ok)
				close(ok.synced)
				h.waitNotified()
				h.fleet.Stop("pr")
				bad := newFakeController()
				bad.startErr = failing
				h.ensure(key(1), bad)
				h.waitNotified()
				if st := h.ensure(key(1), newFakeController()); st.RetryIn != time.Second {
					t.Fatalf("got %+v, want retry in 1s", st)
				}
			},
		},
		{
			name: "a new key stops the old controller before the new one starts",
			run: func(h *fleetHarness) {
				t := h.t
				old := newFakeController()
				h.ensure(key(1), old)
				h.fleet.Ensure("pr", key(2), func() (syncController, error) {
					select {
					case <-old.stopped:
					default:
						t.Error("the new controller was built while the old one ran")
					}
					return newFakeController(), nil
				})
			},
		},
		{
			name: "workspaces are engaged into controllers whatever the order",
			run: func(h *fleetHarness) {
				t := h.t
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if err := h.fleet.Engage(ctx, "ws1", fakeCluster{}); err != nil {
					t.Fatal(err)
				}
				c := newFakeController()
				h.ensure(key(1), c)
				if err := h.fleet.Engage(ctx, "ws2", fakeCluster{}); err != nil {
					t.Fatal(err)
				}
				if got := c.workspaces(); len(got) != 2 {
					t.Fatalf("engaged %v, want ws1 and ws2", got)
				}
			},
		},
		{
			name: "the fleet returns from Start only after its controllers stopped",
			run: func(h *fleetHarness) {
				t := h.t
				c := newFakeController()
				h.ensure(key(1), c)
				h.stop()
				<-h.stopped
				select {
				case <-c.stopped:
				default:
					t.Fatal("Start returned while a controller still ran")
				}
			},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(newFleetHarness(t))
		})
	}
}

// fakeCluster is a workspace no provider knows.
type fakeCluster struct{ cluster.Cluster }

func (fakeCluster) GetCache() cache.Cache { return nil }

// TestFleetStats: a PublishedResource whose controller is retried after a
// failure counts once (starting), not also as failed; an endpoint whose
// connection failed does not count as connected.
func TestFleetStats(t *testing.T) {
	f := newFleet(logr.Discard(), nil, nil, 0)
	f.controllers["running"] = &running{synced: true}
	f.controllers["retrying"] = &running{}
	f.controllers["disabled"] = &running{key: controllerKey{deletionOnly: true}, synced: true}
	f.failures["retrying"] = &failure{}
	f.failures["failed"] = &failure{}
	f.clusters["ws1"], f.clusters["ws2"] = engaged{}, engaged{}
	// Two endpoints listed; one's connection failed and waits to be made
	// again: one is connected.
	f.providers["https://a"], f.providers["https://b"] = &endpoint{}, &endpoint{failed: true}
	got := f.stats()
	want := metrics.FleetStats{Controllers: map[string]int{"running": 1, "starting": 1, "disabled": 1, "failed": 1}, Workspaces: 2, Endpoints: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

// TestStoppedControllersInformersAreHeld: the kcp informers a controller
// used are held once it stopped or failed, and only those no running
// controller uses count as unused; the sweeper's reads are held too; a
// connection the fleet does not have holds none.
func TestStoppedControllersInformersAreHeld(t *testing.T) {
	h := newFleetHarness(t)
	thing, gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	old := newFakeController()
	old.kcpTypes = map[string]sets.Set[schema.GroupVersionKind]{"a#0": sets.New(thing, gadget)}
	h.ensure(key(1), old)
	next := newFakeController()
	next.kcpTypes = map[string]sets.Set[schema.GroupVersionKind]{"a#0": sets.New(thing)}
	h.ensure(key(2), next) // stops old
	<-old.stopped
	// A controller that fails (another PublishedResource).
	failing := newFakeController()
	failing.startErr = errors.New("boom")
	failing.kcpTypes = map[string]sets.Set[schema.GroupVersionKind]{"a#0": sets.New(secret)}
	h.fleet.Ensure("other", key(1), func() (syncController, error) { return failing, nil })
	<-failing.stopped

	f := h.fleet
	held := func() []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		inUse := map[string]sets.Set[schema.GroupVersionKind]{}
		for _, r := range f.controllers {
			for ep, types := range r.ctrl.KcpInformers() {
				inUse[ep] = types.Union(inUse[ep])
			}
		}
		_, unused := f.unused.check(h.clock, sets.New("a#0"), inUse)
		var kinds []string
		for gvk := range f.unused.held["a#0"] {
			kinds = append(kinds, gvk.Kind)
		}
		slices.Sort(kinds)
		if unused != len(kinds) {
			t.Errorf("%d unused for %v", unused, kinds)
		}
		return kinds
	}
	eventually(t, "the failed controller's types held", func() bool { return len(held()) == 2 })
	if diff := cmp.Diff([]string{"Gadget", "Secret"}, held()); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	// The sweeper read ConfigMaps through ws1's connection.
	f.mu.Lock()
	f.clusters["ws1"] = engaged{ws: syncctrl.Workspace{Name: "ws1", EndpointID: "a#0"}}
	f.mu.Unlock()
	f.usedBy("ws1", schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if diff := cmp.Diff([]string{"ConfigMap", "Gadget", "Secret"}, held()); diff != "" {
		t.Errorf("held after the sweep (-want +got):\n%s", diff)
	}
	// The fleet is connected to no endpoint: a check forgets them all.
	f.checkUnusedInformers()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.unused.held) != 0 || f.unusedCount != 0 {
		t.Errorf("held %v (%d unused) for a connection the fleet does not have", f.unused.held, f.unusedCount)
	}
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
