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
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/multicluster-provider/apiexport"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	"github.com/kcp-syncagent/api-syncagent/internal/endpointlease"
	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/kcpevents"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// fleet keeps the connections to the virtual workspace endpoints (one kcp
// apiexport provider per endpoint, i.e. per shard), the consumer workspaces
// they engage, and the running sync controllers.
//
// It is the multicluster provider of the agent's multicluster manager
// (lookups go to whichever endpoint knows the workspace) and a
// cluster-aware runnable: every workspace an endpoint engages is recorded
// and engaged into every running sync controller, and a newly started
// controller is engaged with every recorded workspace before it starts. So
// no workspace is missed, whatever the order in which workspaces appear and
// controllers start (the reference lost workspaces this way after restarts).
type fleet struct {
	log    logr.Logger
	scheme *runtime.Scheme
	// base is the kcp config whose credentials reach the endpoints.
	base  *rest.Config
	mcMgr mcmanager.Manager

	started chan struct{}
	ctx     context.Context //nolint:containedctx // the run context of the leader, set once by Start.

	provMu    sync.RWMutex
	providers map[string]*endpoint
	// claims: an agent of a partition serves the endpoints whose Leases
	// it holds (set by Start from claimConfig; nil without a partition).
	claims      *endpointlease.Claims
	claimConfig *endpointlease.Config

	mu          sync.Mutex
	clusters    map[string]engaged
	controllers map[string]*running
	// failures are the last start failures of PublishedResources whose
	// controller is not running, with their backoff.
	failures map[string]*failure
	// notify asks the syncmanager to reconcile a PublishedResource (its
	// controller synced or stopped); set when the syncmanager starts.
	notify func(prName string)
	// wg counts the goroutines of controllers and endpoints: Start returns
	// only after all of them ended, so that the leader lease is released
	// only when nothing writes any more. stopping (set when the run
	// context ends) refuses new ones, so wg.Add never races with wg.Wait.
	wg       sync.WaitGroup
	stopping bool
	// now is the clock of the backoff.
	now func() time.Time

	// state reads and deletes the related state of released primaries.
	state *state.Store

	// unused holds the kcp informers of stopped controllers (guarded by
	// mu); unusedCount is the number of unused types after the last check.
	unused      *unusedInformers
	unusedCount int

	// events records Events on kcp objects (set by Start, shut down when
	// everything else has stopped).
	events *kcpevents.Recorder
	// warningEventsOnly: see Options.KcpWarningEventsOnly (set before Start).
	warningEventsOnly bool
}

type endpoint struct {
	provider *apiexport.Provider
	cancel   context.CancelFunc
	// lists lists objects across the endpoint's workspaces.
	lists metadata.Interface
	// generation counts the providers of the endpoint: url#generation
	// names the current connection (endpointID). endAttempt ends the
	// current provider's run with a cause. Both guarded by fleet.provMu.
	generation int
	endAttempt context.CancelCauseFunc
	// failed: the last connection failed and the next one has not started
	// yet (guarded by fleet.provMu); it does not count as connected.
	failed bool
	// fence: the writes of the passes over the endpoint's workspaces
	// pass it (an agent of a partition: its Lease; else nil).
	fence *fence.Fence
}

// endpointID names the connection of an endpoint: each fresh provider is a
// new connection, with new informers.
func endpointID(url string, generation int) string { return fmt.Sprintf("%s#%d", url, generation) }

// errRemake ends a provider's run to connect again without its informers.
var errRemake = errors.New("made again to drop unused informers")

type engaged struct {
	ctx context.Context //nolint:containedctx // ends when the workspace is disengaged.
	ws  syncctrl.Workspace
}

// syncController is what the fleet needs of a sync controller.
type syncController interface {
	Engage(ctx context.Context, ws syncctrl.Workspace)
	Start(ctx context.Context) error
	Synced() <-chan struct{}
	// Enqueue asks for a pass over one kcp object; false if the
	// controller does not run.
	Enqueue(req mcreconcile.Request) bool
	// KcpInformers are the kcp types whose informers the controller used,
	// by endpoint cache.
	KcpInformers() map[string]sets.Set[schema.GroupVersionKind]
}

type running struct {
	key    controllerKey
	ctrl   syncController
	cancel context.CancelFunc
	done   chan struct{}
	// synced: the controller runs its workers (guarded by fleet.mu).
	synced bool
}

// failure is the last start failure of a PublishedResource's controller.
type failure struct {
	key     controllerKey
	err     error
	count   int
	retryAt time.Time
}

// Restarting a controller that failed waits startRetryMin, doubling with
// each consecutive failure up to startRetryMax.
const (
	startRetryMin = time.Second
	startRetryMax = 5 * time.Minute
)

// Phase is where a PublishedResource's controller is.
type Phase int

const (
	// PhaseStopped: no controller runs and none failed.
	PhaseStopped Phase = iota
	// PhaseStarting: the controller was started and waits for its caches.
	PhaseStarting
	// PhaseRunning: the controller runs its workers.
	PhaseRunning
	// PhaseFailed: the controller could not start or stopped on its own;
	// it is started again after the backoff.
	PhaseFailed
)

// Status is the state of a PublishedResource's controller.
type Status struct {
	Phase Phase
	// Err and RetryIn are set in PhaseFailed.
	Err     error
	RetryIn time.Duration
}

var (
	_ multicluster.Provider = &fleet{}
	_ mcmanager.Runnable    = &fleet{}
)

func newFleet(log logr.Logger, scheme *runtime.Scheme, base *rest.Config, unusedInformerTimeout time.Duration) *fleet {
	return &fleet{
		unused:      newUnusedInformers(unusedInformerTimeout),
		log:         log,
		scheme:      scheme,
		base:        base,
		started:     make(chan struct{}),
		providers:   map[string]*endpoint{},
		clusters:    map[string]engaged{},
		controllers: map[string]*running{},
		failures:    map[string]*failure{},
		now:         time.Now,
	}
}

// Start records the leader's run context and blocks until it ends and
// every controller and endpoint connection has stopped.
func (f *fleet) Start(ctx context.Context) error {
	f.ctx = ctx
	if f.claimConfig != nil {
		cfg := *f.claimConfig
		cfg.Serve, cfg.Stop = f.serveEndpoint, f.stopServingEndpoint
		// The list of every PublishedResource must not hold up the claim
		// (its next renewal).
		cfg.Changed = func() { go f.changed("") }
		f.claims = endpointlease.New(ctx, cfg)
	}
	f.events = kcpevents.New(f.scheme, func(workspace string) ctrlruntimeclient.Client {
		if cl := f.engagedCluster(workspace); cl != nil {
			return cl.GetClient()
		}
		return nil
	}, f.log.WithName("kcp-events"), func(reason string) { metrics.KcpEventsDropped.WithLabelValues(reason).Inc() }, f.warningEventsOnly)
	close(f.started)
	metrics.SetFleet(f.stats)
	defer metrics.SetFleet(nil)
	f.mu.Lock()
	f.goroutine(func() { f.dropUnusedInformers(ctx) })
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	f.stopping = true
	f.mu.Unlock()
	f.wg.Wait()
	f.events.Shutdown()
	return nil
}

// kcpEvents returns the recorder of component's Events on kcp objects in a
// workspace (broadcasters shared by the workspaces of an endpoint: see
// kcpevents); one that records nothing if the workspace is not engaged.
func (f *fleet) kcpEvents(workspace, component string) record.EventRecorder {
	select {
	case <-f.started:
	default:
		return &record.FakeRecorder{} // not started: nothing is engaged
	}
	f.mu.Lock()
	id := f.clusters[workspace].ws.EndpointID
	f.mu.Unlock()
	if id == "" {
		return &record.FakeRecorder{}
	}
	endpoint, _, _ := strings.Cut(id, "#")
	return f.events.For(endpoint, workspace, component)
}

// goroutine runs fn on a goroutine that Start waits for, unless the fleet
// is stopping; callers hold f.mu.
func (f *fleet) goroutine(fn func()) bool {
	if f.stopping {
		return false
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
	return true
}

// setNotify sets the function that asks for a PublishedResource's
// reconcile.
func (f *fleet) setNotify(fn func(prName string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notify = fn
}

func (f *fleet) changed(prName string) {
	f.mu.Lock()
	fn := f.notify
	f.mu.Unlock()
	if fn != nil {
		fn(prName)
	}
}

// NeedLeaderElection: only the leader connects to kcp and syncs.
func (f *fleet) NeedLeaderElection() bool { return true }

// waitStarted blocks until Start ran (or ctx ends).
func (f *fleet) waitStarted(ctx context.Context) error {
	select {
	case <-f.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get implements multicluster.Provider.
func (f *fleet) Get(ctx context.Context, name string) (cluster.Cluster, error) {
	f.provMu.RLock()
	defer f.provMu.RUnlock()
	for _, ep := range f.providers {
		if cl, err := ep.provider.Get(ctx, name); err == nil {
			return cl, nil
		}
	}
	return nil, multicluster.ErrClusterNotFound
}

// IndexField implements multicluster.Provider.
func (f *fleet) IndexField(ctx context.Context, obj ctrlruntimeclient.Object, field string, extract ctrlruntimeclient.IndexerFunc) error {
	f.provMu.RLock()
	defer f.provMu.RUnlock()
	var errs []error
	for _, ep := range f.providers {
		errs = append(errs, ep.provider.IndexField(ctx, obj, field, extract))
	}
	return errors.Join(errs...)
}

// SetEndpoints connects to new endpoint URLs and disconnects from removed
// ones (their workspaces are disengaged with them). An agent of a
// partition claims the endpoints instead and connects to those whose
// Leases it holds (serveEndpoint), under their fences.
func (f *fleet) SetEndpoints(urls []string) error {
	if f.claims != nil {
		f.claims.Set(urls)
		return nil
	}
	f.provMu.Lock()
	defer f.provMu.Unlock()
	want := map[string]bool{}
	for _, u := range urls {
		want[u] = true
	}
	for u := range f.providers {
		if !want[u] {
			f.disconnect(u)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(want)) {
		if err := f.connect(u, nil); err != nil {
			return err
		}
	}
	return nil
}

// serveEndpoint connects to an endpoint whose Lease this agent holds; the
// passes over its workspaces write under fe (endpointlease.Config.Serve).
func (f *fleet) serveEndpoint(u string, fe *fence.Fence) {
	f.provMu.Lock()
	defer f.provMu.Unlock()
	if err := f.connect(u, fe); err != nil {
		// Connecting only builds clients: this fails on a malformed URL,
		// which no retry mends; the endpoint stays unserved and unreachable
		// in the SyncReady condition.
		f.log.Error(err, "Failed to connect to a virtual workspace endpoint", "url", u)
	}
}

// stopServingEndpoint disconnects from an endpoint whose Lease this agent
// gave up (its fence is closed already).
func (f *fleet) stopServingEndpoint(u string) {
	f.provMu.Lock()
	defer f.provMu.Unlock()
	f.disconnect(u)
}

// endpointFence is the fence of the writes for an endpoint's workspaces:
// nil without a partition; for an endpoint this agent does not serve, one
// that refuses every write.
func (f *fleet) endpointFence(u string) *fence.Fence {
	if f.claimConfig == nil {
		return nil
	}
	f.provMu.RLock()
	defer f.provMu.RUnlock()
	if ep, ok := f.providers[u]; ok && ep.fence != nil {
		return ep.fence
	}
	return fence.Refusing()
}

// servesWorkspace is nil without a partition; with one, it tells the
// workspaces engaged by the endpoints this agent serves.
func (f *fleet) servesWorkspace() func(cluster string) bool {
	if f.claimConfig == nil {
		return nil
	}
	return func(cluster string) bool { return f.engagedCluster(cluster) != nil }
}

// disconnect ends the connection to an endpoint (f.provMu held).
func (f *fleet) disconnect(u string) {
	ep, ok := f.providers[u]
	if !ok {
		return
	}
	f.log.Info("Disconnecting from virtual workspace endpoint", "url", u)
	ep.cancel()
	delete(f.providers, u)
}

// connect connects to an endpoint unless it is connected (f.provMu held);
// fe (nil without a partition) is the fence of its writes.
func (f *fleet) connect(u string, fe *fence.Fence) error {
	if _, ok := f.providers[u]; ok {
		return nil
	}
	cfg := rest.CopyConfig(f.base)
	cfg.Host = u
	p, err := f.newProvider(cfg)
	if err != nil {
		return fmt.Errorf("failed to connect to endpoint %s: %w", u, err)
	}
	wildcard := rest.CopyConfig(cfg)
	wildcard.Host = strings.TrimSuffix(u, "/") + "/clusters/*"
	wildcard.Timeout = endpointCheckTimeout
	lists, err := metadata.NewForConfig(wildcard)
	if err != nil {
		return fmt.Errorf("failed to connect to endpoint %s: %w", u, err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	ep := &endpoint{provider: p, cancel: cancel, lists: lists, fence: fe}
	f.providers[u] = ep
	f.log.Info("Connecting to virtual workspace endpoint", "url", u)
	f.mu.Lock()
	f.goroutine(func() { f.runEndpoint(ctx, u, cfg, ep) })
	f.mu.Unlock()
	return nil
}

// endpointRetryMin and endpointRetryMax bound the wait before a failed
// endpoint connection is made again (doubling in between): an endpoint that
// cannot be reached when the agent connects (its shard is down) fails at
// once, and only a fresh connection recovers.
const (
	endpointRetryMin = time.Second
	endpointRetryMax = time.Minute
)

// runEndpoint runs the endpoint's provider until ctx ends, replacing it
// with a fresh one after each failure (with backoff) and at once when the
// run was ended to drop unused informers.
func (f *fleet) runEndpoint(ctx context.Context, u string, cfg *rest.Config, ep *endpoint) {
	wait := endpointRetryMin
	for {
		// Each attempt has its own context: a failed Run can leave its
		// cache running, which must end with the attempt.
		attempt, cancel := context.WithCancelCause(ctx)
		f.provMu.Lock()
		p := ep.provider
		ep.endAttempt = cancel
		ep.failed = false
		f.provMu.Unlock()
		started := time.Now()
		err := p.Run(attempt, f.mcMgr)
		remade := errors.Is(context.Cause(attempt), errRemake)
		cancel(context.Canceled)
		if ctx.Err() != nil {
			return
		}
		if remade {
			metrics.EndpointReconnects.WithLabelValues(metrics.ReconnectUnusedInformers).Inc()
			f.log.Info("Connecting again to a virtual workspace endpoint to drop informers no sync controller uses", "url", u)
		} else {
			metrics.EndpointReconnects.WithLabelValues(metrics.ReconnectFailed).Inc()
			f.provMu.Lock()
			ep.failed = true
			f.provMu.Unlock()
			if time.Since(started) > endpointRetryMax {
				wait = endpointRetryMin // it worked for a while: a new failure starts over
			}
			f.log.Info("Virtual workspace endpoint failed, reconnecting", "url", u, "after", wait, "error", fmt.Sprint(err))
			if !backoff.Sleep(ctx, wait) {
				return
			}
			wait = min(2*wait, endpointRetryMax)
		}
		// The provider that ran cannot run again (its cache was started
		// and stopped): only a fresh one.
		for {
			fresh, err := f.newProvider(cfg)
			if err == nil {
				f.provMu.Lock()
				ep.provider = fresh
				ep.generation++
				f.provMu.Unlock()
				break
			}
			f.log.Error(err, "Failed to create the connection to a virtual workspace endpoint", "url", u, "retry after", wait)
			if !backoff.Sleep(ctx, wait) {
				return
			}
			wait = min(2*wait, endpointRetryMax)
		}
	}
}

// newProvider returns a kcp provider for the endpoint cfg.Host whose
// caches hold compacted objects (kcp.WildcardCache).
func (f *fleet) newProvider(cfg *rest.Config) (*apiexport.Provider, error) {
	wildcard, err := kcp.NewWildcardCache(cfg, f.scheme)
	if err != nil {
		return nil, err
	}
	return apiexport.New(cfg, apiexport.Options{Scheme: f.scheme, WildcardCache: wildcard})
}

// Engage implements multicluster.Aware: record the workspace and engage it
// into every running controller. Nothing here waits: controllers engage
// in the background.
func (f *fleet) Engage(ctx context.Context, name string, cl cluster.Cluster) error {
	ws := f.workspace(ctx, name, cl)
	f.mu.Lock()
	f.clusters[name] = engaged{ctx: ctx, ws: ws}
	ctrls := make([]syncController, 0, len(f.controllers))
	for _, r := range f.controllers {
		ctrls = append(ctrls, r.ctrl)
	}
	f.mu.Unlock()
	for _, c := range ctrls {
		c.Engage(ctx, ws)
	}
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.clusters[name].ws.Cluster == cl {
			delete(f.clusters, name)
		}
	})
	return nil
}

// workspace describes an engaged workspace with the informers of the
// endpoint whose provider engaged it; with the workspace's own cache (its
// events filtered the same way, with one handler per workspace) if no
// provider knows it.
func (f *fleet) workspace(ctx context.Context, name string, cl cluster.Cluster) syncctrl.Workspace {
	f.provMu.RLock()
	defer f.provMu.RUnlock()
	for u, ep := range f.providers {
		if c, err := ep.provider.Get(ctx, name); err == nil && c == cl {
			lists := ep.lists
			return syncctrl.Workspace{Name: name, Cluster: cl, Endpoint: ep.provider.GetWildcard(), EndpointID: endpointID(u, ep.generation), Fence: ep.fence,
				Lists: func(ctx context.Context, gvr schema.GroupVersionResource) error {
					_, err := lists.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
					return err
				}}
		}
	}
	ws := syncctrl.Workspace{Name: name, Cluster: cl, Endpoint: cl.GetCache()}
	if f.claimConfig != nil {
		// No endpoint this agent serves knows it (it was disconnected
		// meanwhile): nothing may be written for it.
		ws.Fence = fence.Refusing()
	}
	return ws
}

// Ensure runs exactly one controller for the PublishedResource and returns
// its status: it keeps a controller with the same key, otherwise stops the
// old one (and waits for it) before it builds, engages and starts the new
// one. A controller that failed is started again only after its backoff;
// a build that fails counts as a failure. build must not wait on anything.
func (f *fleet) Ensure(prName string, key controllerKey, build func() (syncController, error)) Status {
	f.mu.Lock()
	old := f.controllers[prName]
	if old != nil && old.key == key {
		st := old.status()
		f.mu.Unlock()
		return st
	}
	if fl := f.failures[prName]; fl != nil {
		if fl.key != key {
			// The configuration changed: a fresh start.
			delete(f.failures, prName)
		} else if wait := fl.retryAt.Sub(f.now()); wait > 0 {
			f.mu.Unlock()
			return Status{Phase: PhaseFailed, Err: fl.err, RetryIn: wait}
		}
	}
	delete(f.controllers, prName)
	f.mu.Unlock()
	if old != nil {
		old.stop()
	}

	ctrl, err := build()
	if err != nil {
		f.mu.Lock()
		st := f.failed(prName, key, err)
		f.mu.Unlock()
		metrics.SyncControllers.Set(float64(f.count()))
		return st
	}
	ctx, cancel := context.WithCancel(f.ctx)
	r := &running{key: key, ctrl: ctrl, cancel: cancel, done: make(chan struct{})}

	watchSynced := func() {
		select {
		case <-ctrl.Synced():
			f.mu.Lock()
			r.synced = true
			if f.controllers[prName] == r {
				delete(f.failures, prName)
			}
			f.mu.Unlock()
			f.changed(prName)
		case <-ctx.Done():
		}
	}
	run := func() {
		defer close(r.done)
		err := ctrl.Start(ctx)
		stopped := ctx.Err() != nil
		cancel()
		if !stopped && err == nil {
			err = errors.New("the sync controller stopped unexpectedly")
		}
		// One critical section: a check in between would count the
		// types as in use by a controller that no longer runs.
		f.mu.Lock()
		f.unused.retired(f.now(), ctrl.KcpInformers())
		if !stopped && f.controllers[prName] == r {
			delete(f.controllers, prName)
			f.failed(prName, key, err)
		}
		f.mu.Unlock()
		if stopped {
			return
		}
		f.log.Error(err, "Sync controller failed", "publishedresource", prName)
		metrics.SyncControllers.Set(float64(f.count()))
		f.changed(prName)
	}

	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		cancel()
		return Status{Phase: PhaseStopped}
	}
	clusters := slices.Collect(maps.Values(f.clusters))
	f.controllers[prName] = r
	n := len(f.controllers)
	f.goroutine(watchSynced)
	f.goroutine(run)
	f.mu.Unlock()
	for _, e := range clusters {
		ctrl.Engage(e.ctx, e.ws)
	}
	metrics.SyncControllers.Set(float64(n))
	metrics.SyncControllerStarts.WithLabelValues(prName).Inc()
	return Status{Phase: PhaseStarting}
}

// failed records a start failure and returns the status it gives.
// Callers hold f.mu.
func (f *fleet) failed(prName string, key controllerKey, err error) Status {
	fl := f.failures[prName]
	if fl == nil || fl.key != key {
		fl = &failure{key: key}
		f.failures[prName] = fl
	}
	wait := backoff.Exponential(startRetryMin, startRetryMax, fl.count)
	fl.count++
	fl.err = err
	fl.retryAt = f.now().Add(wait)
	return Status{Phase: PhaseFailed, Err: err, RetryIn: wait}
}

// status of a running controller. Callers hold f.mu.
func (r *running) status() Status {
	if r.synced {
		return Status{Phase: PhaseRunning}
	}
	return Status{Phase: PhaseStarting}
}

// Stop stops the PublishedResource's controller, if any, and forgets its
// failures; it returns the key of the controller it stopped.
func (f *fleet) Stop(prName string) (controllerKey, bool) {
	f.mu.Lock()
	old := f.controllers[prName]
	delete(f.controllers, prName)
	delete(f.failures, prName)
	n := len(f.controllers)
	f.mu.Unlock()
	metrics.SyncControllers.Set(float64(n))
	if old == nil {
		return controllerKey{}, false
	}
	old.stop()
	return old.key, true
}

// engagedCluster returns an engaged workspace, nil if it is not engaged.
func (f *fleet) engagedCluster(name string) cluster.Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clusters[name].ws.Cluster
}

// endpointURLs returns the endpoints the fleet is connected to.
func (f *fleet) endpointURLs() []string {
	f.provMu.Lock()
	defer f.provMu.Unlock()
	return slices.Sorted(maps.Keys(f.providers))
}

// localGVKs returns the local types of the running controllers.
func (f *fleet) localGVKs() []schema.GroupVersionKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[schema.GroupVersionKind]bool{}
	for _, r := range f.controllers {
		seen[r.key.localGVK] = true
	}
	return slices.SortedFunc(maps.Keys(seen), func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
}

// syncedGVK returns the kcp GVK of a running controller for gk.
func (f *fleet) syncedGVK(gk schema.GroupKind) (schema.GroupVersionKind, bool) {
	key, _, ok := f.syncing(gk)
	return key.remoteGVK, ok
}

// syncing returns the running controller that syncs the kcp kind gk, and
// its types: that of the first PublishedResource by name, should two
// sync the same kind.
func (f *fleet) syncing(gk schema.GroupKind) (controllerKey, syncController, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(f.controllers)) {
		if r := f.controllers[name]; r.key.remoteGVK.GroupKind() == gk {
			return r.key, r.ctrl, true
		}
	}
	return controllerKey{}, nil, false
}

// stats are the fleet's metrics (see metrics.FleetStats).
func (f *fleet) stats() metrics.FleetStats {
	f.provMu.RLock()
	endpoints := 0
	for _, ep := range f.providers {
		if !ep.failed {
			endpoints++
		}
	}
	f.provMu.RUnlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := metrics.FleetStats{Controllers: map[string]int{}, Workspaces: len(f.clusters), Endpoints: endpoints, UnusedKcpInformers: f.unusedCount}
	for _, r := range f.controllers {
		switch {
		case r.key.deletionOnly:
			s.Controllers["disabled"]++
		case r.synced:
			s.Controllers["running"]++
		default:
			s.Controllers["starting"]++
		}
	}
	for name := range f.failures {
		if _, retrying := f.controllers[name]; !retrying {
			s.Controllers["failed"]++
		}
	}
	return s
}

func (f *fleet) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.controllers)
}

func (r *running) stop() {
	r.cancel()
	<-r.done
}

// unusedInformerCheckMax bounds the period of the check for unused kcp
// informers (half the timeout, if shorter).
const unusedInformerCheckMax = time.Minute

// dropUnusedInformers checks for unused kcp informers until ctx ends (see
// unusedInformers); with a timeout of 0 it only counts them.
func (f *fleet) dropUnusedInformers(ctx context.Context) {
	period := unusedInformerCheckMax
	if t := f.unused.timeout; t > 0 {
		period = max(min(t/2, unusedInformerCheckMax), time.Second)
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.checkUnusedInformers()
	}
}

// checkUnusedInformers runs one check of unused kcp informers and ends the
// current run of the endpoints to connect again.
func (f *fleet) checkUnusedInformers() {
	f.provMu.RLock()
	current := sets.New[string]()
	for u, ep := range f.providers {
		current.Insert(endpointID(u, ep.generation))
	}
	f.provMu.RUnlock()

	f.mu.Lock()
	inUse := map[string]sets.Set[schema.GroupVersionKind]{}
	for _, r := range f.controllers {
		for ep, types := range r.ctrl.KcpInformers() {
			inUse[ep] = types.Union(inUse[ep])
		}
	}
	remake, unused := f.unused.check(f.now(), current, inUse)
	f.unusedCount = unused
	f.mu.Unlock()

	f.provMu.Lock()
	defer f.provMu.Unlock()
	for _, id := range remake {
		for u, ep := range f.providers {
			// A connection replaced meanwhile has lost its informers.
			if endpointID(u, ep.generation) == id && ep.endAttempt != nil {
				ep.endAttempt(errRemake)
			}
		}
	}
}

// usedBy records that something other than a controller (the sweeper)
// used the kcp informer of gvk through a workspace's connection: it is held
// like those of stopped controllers.
func (f *fleet) usedBy(workspace string, gvk schema.GroupVersionKind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id := f.clusters[workspace].ws.EndpointID; id != "" {
		f.unused.retired(f.now(), map[string]sets.Set[schema.GroupVersionKind]{id: sets.New(gvk)})
	}
}
