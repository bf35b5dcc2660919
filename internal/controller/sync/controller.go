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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/kcp/sdk/apis/core"
	kcpcorev1alpha1 "github.com/kcp-dev/kcp/sdk/apis/core/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	"github.com/kcp-syncagent/api-syncagent/internal/cacheindex"
	"github.com/kcp-syncagent/api-syncagent/internal/fairqueue"
	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// ControllerName is shared by all per-PublishedResource sync controllers
// (the controller label of controller-runtime's metrics).
const ControllerName = "syncagent-sync"

// requeueAfterWrite re-checks an object shortly after a write, and polls
// while a local copy is being deleted by its own finalizers. Watch events
// usually arrive first; this is the safety net.
const requeueAfterWrite = 2 * time.Second

// An object that waits for someone else (Result.Waiting: a local copy held
// by foreign finalizers) is checked again after waitRetryMin, doubling up to
// waitRetryMax; the waitReportAfter-th consecutive wait (about a minute
// in) is reported with ObjectWaiting Events.
const (
	waitRetryMin    = 2 * time.Second
	waitRetryMax    = 5 * time.Minute
	waitReportAfter = 5
)

// notRegisteredRequeue: a request for a workspace whose endpoint's kcp
// handlers are not in place yet is looked at again after this time.
const notRegisteredRequeue = time.Second

// reconcileTimeout bounds one reconcile: every read and write it makes,
// including the first sync of an informer of the workspace cache.
const reconcileTimeout = time.Minute

// indexSyncTimeout bounds the wait for the local copies' informer to sync
// when a controller is built.
const indexSyncTimeout = time.Minute

// Conflicts counts refused adoptions per PublishedResource.
var Conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_object_conflicts_total",
	Help: "Local objects that a kcp object would have taken over but that belong to someone else.",
}, []string{"published_resource"})

func init() { //nolint:gochecknoinits // metrics must be registered once, before the metrics server starts.
	ctrlmetrics.Registry.MustRegister(Conflicts)
	metrics.ForgetWithPublishedResource(Conflicts.MetricVec)
}

// ErrLocalTypeNotSynced means the local copies of the type could not be
// listed in time (the API server, a conversion webhook or the agent's
// permissions); retried with backoff.
var ErrLocalTypeNotSynced = errors.New("the local copies could not be listed")

// ErrInvalidConfig marks errors of New that come from the PublishedResource
// itself (a template, regex, CEL expression or selector that does not
// compile): retrying cannot help until the PublishedResource changes.
var ErrInvalidConfig = errors.New("invalid PublishedResource")

// Options describe one sync controller.
type Options struct {
	// PublishedResource is a private copy; the controller never modifies it.
	PublishedResource *syncagentv1alpha1.PublishedResource
	// NamespaceMetadata is put on the service-cluster namespaces the
	// controller creates (nil: nothing).
	NamespaceMetadata *nsmeta.Metadata
	// DeletionOnly processes only the deletion of objects that carry our
	// finalizer (synchronization disabled).
	DeletionOnly bool
	AgentName    string
	// Namespace holds the state Secrets.
	Namespace string

	LocalGVK, RemoteGVK schema.GroupVersionKind
	// RemoteResource is the plural of RemoteGVK.
	RemoteResource    string
	LocalNamespaced   bool
	RemoteNamespaced  bool
	StatusSubresource bool

	// RelatedTypes are the types of spec.related, index by index.
	RelatedTypes []RelatedTypes
	// RelatedService writes related objects on the service cluster.
	// Related types the controller watches are read from RelatedCache
	// (whose informers the watches start), the others from ServiceReader.
	RelatedService ctrlruntimeclient.Client
	RelatedCache   cache.Cache

	// Service is the service cluster client; LocalCache holds the objects
	// of the local type that carry sync labels (the local copies): they are
	// listed and watched there.
	Service    ctrlruntimeclient.Client
	LocalCache cache.Cache
	// ServiceReader reads from the service cluster's API server (no cache).
	ServiceReader ctrlruntimeclient.Reader
	Workers       int

	Log logr.Logger
	// Events records Events on the PublishedResource.
	Events record.EventRecorder
	// KcpEvents returns the recorder of Events on kcp objects in a
	// workspace (nil: the workspace's own).
	KcpEvents func(workspace string) record.EventRecorder
	// Informers counts the uses of the service-side informers; controllers
	// that share caches share it.
	Informers *SharedInformers
	// Preflight, if set, runs first when the controller starts with the
	// related service-side types the controller lists and watches
	// cluster-wide (besides the local type); its error is the controller's.
	Preflight func(ctx context.Context, watchedRelated []schema.GroupVersionResource) error
	// Patrol configures the patroller (zero: none).
	Patrol Patrol
	// ImportCache holds the service-cluster objects that ask to be
	// imported into kcp (label syncagent.kcp.io/import-into); nil: no
	// imports. (One PublishedResource owns a local type: no other one
	// sees its requests.)
	ImportCache cache.Cache
	// Targets are the types the running sync controllers synchronize, for
	// spec.references; a controller that syncs registers its type there
	// while it runs (nil: references resolve to nothing).
	Targets *syncer.Targets
}

// RelatedTypes are the types of one related entry on both sides.
type RelatedTypes = related.Types

// Controller is one PublishedResource's sync controller.
type Controller struct {
	ctrl  controller.TypedController[mcreconcile.Request]
	hub   *hub
	r     *reconciler
	local []*localSource
	opts  Options
	log   logr.Logger
	// synced is closed when the controller's service-side handlers have
	// seen every object and its workers run.
	synced chan struct{}
	// watchedRelated are the related service-side types the controller
	// lists and watches cluster-wide.
	watchedRelated []schema.GroupVersionResource

	// gaugeMu guards gaugesStopped against the metrics' reads.
	gaugeMu       sync.RWMutex
	gaugesStopped bool
}

// Engage routes the workspace's kcp events to the controller until ctx
// ends; it never waits.
func (c *Controller) Engage(ctx context.Context, ws Workspace) { c.hub.Engage(ctx, ws) }

// Enqueue asks for a pass over one kcp object, for example one that
// vanished while no event could reach the controller; false if the
// controller does not run (yet or any more).
func (c *Controller) Enqueue(req mcreconcile.Request) bool { return c.hub.enqueue(req) }

// Synced is closed once the controller runs its workers.
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Start runs the controller until ctx ends. It returns an error if the
// controller cannot start: the preflight fails, the local copies cannot be
// listed within indexSyncTimeout, or a service-side watch does not sync
// within the cache sync timeout. Every informer it used for the service
// side is released when it returns.
func (c *Controller) Start(ctx context.Context) error {
	// However it ends, the kcp handlers go and the workspaces' contexts no
	// longer hold the controller (a start that failed before the hub was
	// started included).
	defer c.hub.stop()
	var acquired []serviceType
	defer func() {
		// A source still looking up its informer would create it again
		// after its removal, and controller-runtime may start one after
		// its Start returned: no source starts from now on, and the
		// started ones are waited for.
		for _, l := range c.local {
			l.shut()
		}
		for _, t := range acquired {
			if err := c.opts.Informers.release(t.cache, t.obj); err != nil {
				c.log.Error(err, "Failed to release an informer")
			}
		}
	}()
	for _, t := range c.serviceTypes() {
		if err := c.opts.Informers.acquire(ctx, t.cache, t.obj); err != nil {
			// Only a stop ends the wait.
			return nil
		}
		acquired = append(acquired, t)
	}
	if c.opts.Preflight != nil {
		if err := c.opts.Preflight(ctx, c.watchedRelated); err != nil {
			return err
		}
	}
	// An earlier controller of the same local type may have added the
	// index. Adding it waits for the informer of the local type to sync,
	// which never happens if the agent may not list or watch that type.
	indexCtx, cancel := context.WithTimeout(ctx, indexSyncTimeout)
	err := cacheindex.Add(indexCtx, c.opts.LocalCache, typed(c.opts.LocalGVK), objmeta.RemoteIndex, objmeta.RemoteIndexValues)
	cancel()
	if err != nil && !strings.Contains(err.Error(), "indexer conflict") {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: %s: %w", ErrLocalTypeNotSynced, c.opts.LocalGVK, err)
	}
	go func() {
		for _, l := range c.local {
			select {
			case <-l.synced:
			case <-ctx.Done():
				return
			}
		}
		close(c.synced)
	}()
	defer c.stopGauges(metrics.RegisterController(c.opts.PublishedResource.Name, c.gauges()))
	// The patroller ends with the controller, however Start returns.
	patrolCtx, stopPatrol := context.WithCancel(ctx)
	patrolDone := make(chan struct{})
	go c.runPatrol(patrolCtx, patrolDone)
	defer func() {
		stopPatrol()
		<-patrolDone
	}()
	if c.opts.Targets != nil && !c.opts.DeletionOnly {
		defer c.opts.Targets.Register(&syncer.Target{
			Syncer: c.r.syncer, RemoteGVK: c.opts.RemoteGVK, RemoteNamespaced: c.opts.RemoteNamespaced,
			WorkspacePaths: c.opts.PublishedResource.Spec.EnableWorkspacePaths,
		})()
	}
	err = c.ctrl.Start(ctx)
	if ctx.Err() != nil {
		// Stopped (during the start, too): not a failure.
		return nil
	}
	return err
}

type serviceType struct {
	cache cache.Informers
	obj   ctrlruntimeclient.Object
}

// serviceTypes are the service-side informers the controller uses: those
// of its watches (the local copies, and the service-origin related types
// with spec.related[].watch). Other related objects are read from the
// server.
func (c *Controller) serviceTypes() []serviceType {
	out := make([]serviceType, 0, len(c.local))
	for _, l := range c.local {
		out = append(out, serviceType{l.cache, l.obj})
	}
	return out
}

// New creates an unstarted sync controller. The caller engages workspaces
// and starts it.
func New(opts Options) (*Controller, error) {
	pr := opts.PublishedResource
	if len(opts.RelatedTypes) != len(pr.Spec.Related) {
		return nil, fmt.Errorf("the types of %d related entries are needed, got %d", len(pr.Spec.Related), len(opts.RelatedTypes))
	}
	rules, err := syncer.Compile(pr, opts.RelatedTypes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	entries := rules.Related
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Informers == nil {
		opts.Informers = &SharedInformers{}
	}
	log := opts.Log.WithName(ControllerName).WithValues("publishedresource", pr.Name)

	kcpWatches, err := kcpWatches(opts, entries)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	localSources, err := localSources(opts, entries)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c := &Controller{
		hub:    newHub(log, kcpWatches),
		local:  localSources,
		opts:   opts,
		log:    log,
		synced: make(chan struct{}),
	}
	serviceCached := sets.New[schema.GroupVersionKind]()
	for _, t := range serviceWatched(entries) {
		serviceCached.Insert(t.GVK)
		c.watchedRelated = append(c.watchedRelated, t.GVR)
	}
	relatedService := opts.RelatedService
	if relatedService != nil {
		relatedService = routedReads{Client: opts.RelatedService, cache: opts.RelatedCache, live: opts.ServiceReader, cached: serviceCached}
	}
	r := &reconciler{
		workspaces:      c.hub,
		pr:              pr,
		remoteGVK:       opts.RemoteGVK,
		deletionOnly:    opts.DeletionOnly,
		resourceFilter:  rules.ResourceFilter,
		namespaceFilter: rules.NamespaceFilter,
		log:             log,
		prRecorder:      opts.Events,
		kcpEvents:       opts.KcpEvents,
		waits:           newRecords[int](),
		conflicts:       newRecords[int](),
		refusals:        newRecords[int](),
		unresolved:      newRecords[int](),
		overwritten:     newRecords[overwrite](),
		syncer: &syncer.Syncer{
			AgentName:         opts.AgentName,
			LocalGVK:          opts.LocalGVK,
			LocalNamespaced:   opts.LocalNamespaced,
			StatusSubresource: opts.StatusSubresource,
			Namer:             rules.Namer,
			NamespaceMetadata: opts.NamespaceMetadata,
			Service:           opts.Service,
			Copies:            opts.LocalCache,
			State:             &state.Store{Client: opts.Service, Live: opts.ServiceReader, Namespace: opts.Namespace, AgentName: opts.AgentName},
			Warned:            once.NewPerGeneration(),
			WarnedPropagation: once.NewPerValue(),
			SpecMutator:       rules.SpecMutator,
			StatusMutator:     rules.StatusMutator,
			Related:           entries,
			RelatedService:    relatedService,
			References:        rules.References,
			Targets:           opts.Targets,
		},
	}

	if opts.ImportCache != nil && !opts.DeletionOnly {
		localSources = append(localSources, c.setUpImports(opts, r, log))
	}
	c.r = r
	c.hub.disengaged = r.forgetWorkspace
	c.ctrl, err = controller.NewTypedUnmanaged(ControllerName, controller.TypedOptions[mcreconcile.Request]{
		Reconciler: r,
		// Twice what a workspace may hold (the queue's limit): while one
		// workspace has a backlog, the others' objects do not wait for its
		// passes, and a burst of theirs (several workspaces' new objects at
		// once) is taken in one round.
		MaxConcurrentReconciles: 2 * opts.Workers,
		// Every PublishedResource has its own controller with the shared name.
		SkipNameValidation: ptr(true),
		NewQueue: func(name string, rl workqueue.TypedRateLimiter[mcreconcile.Request]) workqueue.TypedRateLimitingInterface[mcreconcile.Request] {
			q := newTimedQueue(newFairQueue(name, rl, opts.Workers), time.Now)
			r.streakMu.Lock()
			r.queue = q
			r.streakMu.Unlock()
			return q
		},
		LogConstructor: func(req *mcreconcile.Request) logr.Logger {
			l := log
			if req != nil {
				l = l.WithValues("cluster", req.ClusterName, "request", req.NamespacedName)
			}
			return l
		},
	})
	if err != nil {
		return nil, err
	}
	if err := c.ctrl.Watch(c.hub); err != nil {
		return nil, err
	}
	for _, l := range localSources {
		if err := c.ctrl.Watch(l); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func ptr[T any](v T) *T { return &v }

// newFairQueue is client-go's rate-limiting queue (de-duplication,
// processing set, delayed and rate-limited retries, metrics under name)
// over a store that takes the workspaces in turn and hands out at most
// perWorkspace passes of one workspace at a time: a workspace with a
// backlog delays another's next object by one pass per busy workspace, and
// with twice perWorkspace workers it holds at most half of them.
func newFairQueue(name string, rl workqueue.TypedRateLimiter[mcreconcile.Request], perWorkspace int) *fairqueue.RateLimiting[mcreconcile.Request] {
	return fairqueue.NewRateLimiting(name, rl, func(r mcreconcile.Request) string { return r.ClusterName }, perWorkspace)
}

func typed(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// localToRemote maps a local copy to its kcp object.
func localToRemote(_ context.Context, obj *unstructured.Unstructured) []mcreconcile.Request {
	r, ok := objmeta.FromLocal(obj)
	if !ok {
		return nil
	}
	return []mcreconcile.Request{{ClusterName: r.Cluster, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}}}}
}

type reconciler struct {
	workspaces      *hub
	pr              *syncagentv1alpha1.PublishedResource
	remoteGVK       schema.GroupVersionKind
	deletionOnly    bool
	resourceFilter  labels.Selector
	namespaceFilter labels.Selector
	syncer          *syncer.Syncer
	log             logr.Logger
	// prRecorder records Events on the PublishedResource (service cluster).
	prRecorder record.EventRecorder
	// kcpEvents: see Options.KcpEvents.
	kcpEvents func(workspace string) record.EventRecorder

	// queue is the controller's (set when it starts).
	queue *timedQueue

	// waits, conflicts, refusals and unresolved count the consecutive
	// waiting passes, lost optimistic-lock races, passes with a related
	// object kcp refused to write and passes with a reference that names
	// nothing the agent can map, of each object; overwritten holds the
	// resourceVersions that the last pass of an object wrote over in kcp
	// (see cacheBehind). A workspace's records go when it disengages, and
	// one that is not engaged gets none.
	streakMu    sync.Mutex
	waits       *records[int]
	conflicts   *records[int]
	refusals    *records[int]
	unresolved  *records[int]
	overwritten *records[overwrite]

	// imports handles import requests (nil: none are).
	imports *importer
}

// overwrite: the resourceVersions a pass wrote over, and when.
type overwrite struct {
	rvs []string
	at  time.Time
}

// cacheBehindMax bounds how long passes wait for the kcp cache to show the
// agent's own write (it arrived within 1.3 s in the noisy benchmark on a
// saturated kcp); after that the pass runs, and the optimistic lock
// decides.
const cacheBehindMax = 30 * time.Second

// cacheBehind reports whether the kcp cache's copy of req, at
// resourceVersion rv, predates a write of this agent's last pass of it: the
// write changed the object from rv, so the cache has not seen it yet (a
// local copy's event arrives before kcp's watch delivers the agent's own
// finalizer). A pass now would repeat the write and lose its
// optimistic-lock race, a write into kcp for nothing. Otherwise, or once
// the record is older than cacheBehindMax, the record is forgotten.
func (r *reconciler) cacheBehind(req mcreconcile.Request, rv string, now time.Time) bool {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	if o, ok := r.overwritten.get(req); ok && slices.Contains(o.rvs, rv) && now.Sub(o.at) < cacheBehindMax {
		return true
	}
	r.overwritten.delete(req)
	return false
}

// wroteOver records the resourceVersions a pass of req wrote over in kcp
// at now (none: forgets them).
func (r *reconciler) wroteOver(req mcreconcile.Request, rvs []string, now time.Time) {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	if len(rvs) == 0 || !r.engaged(req) {
		r.overwritten.delete(req)
		return
	}
	r.overwritten.set(req, overwrite{rvs: rvs, at: now})
}

// engaged reports whether req's workspace is engaged. A record is made
// only then: a workspace that disengaged gets no later pass to end it (its
// events no longer come), and its records went with it. Callers hold
// streakMu (then the hub's lock, never the other way round).
func (r *reconciler) engaged(req mcreconcile.Request) bool {
	_, ok := r.workspaces.workspace(req.ClusterName)
	return ok
}

// forgetWorkspace drops the records of a workspace that disengaged; the
// hub calls it after it removed the workspace. A workspace engaged again
// meanwhile keeps the records its new engagement made.
func (r *reconciler) forgetWorkspace(name string) {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	if _, engaged := r.workspaces.workspace(name); engaged {
		return
	}
	r.waits.dropWorkspace(name)
	r.conflicts.dropWorkspace(name)
	r.refusals.dropWorkspace(name)
	r.unresolved.dropWorkspace(name)
	r.overwritten.dropWorkspace(name)
}

// waited records whether a pass for req waited and returns how many
// consecutive passes did (0: it does not wait).
func (r *reconciler) waited(req mcreconcile.Request, waiting bool) int {
	return r.streak(r.waits, req, waiting)
}

// streak counts consecutive passes of req in m with on set, forgetting req
// when on is not; it returns the count (kept only while req's workspace is
// engaged).
func (r *reconciler) streak(m *records[int], req mcreconcile.Request, on bool) int {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	if !on {
		m.delete(req)
		return 0
	}
	n, _ := m.get(req)
	n++
	if !r.engaged(req) {
		m.delete(req)
		return n
	}
	m.set(req, n)
	return n
}

// conflictRetryMin: a pass that lost an optimistic-lock race is tried
// again after this, doubling per consecutive loss, up to waitRetryMax (the
// cache catches up within milliseconds; two writers fighting back off).
const conflictRetryMin = 200 * time.Millisecond

// conflictBackoff is the wait after the n-th consecutive lost race (n >= 1).
func conflictBackoff(n int) time.Duration {
	return backoff.Exponential(conflictRetryMin, waitRetryMax, n-1)
}

// waitBackoff is the wait before the n-th consecutive check (n >= 1).
func waitBackoff(n int) time.Duration {
	return backoff.Exponential(waitRetryMin, waitRetryMax, n-1)
}

// Reconcile syncs one kcp object. A pass cut off because the controller
// stops (its context ended: the PublishedResource changed, the agent shuts
// down or loses the lead) is no failure of the object: no error, no Event;
// the next controller starts from a full list.
func (r *reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (reconcile.Result, error) {
	var observed time.Time
	timed := false
	if r.queue != nil {
		observed, timed = r.queue.observed(req)
	}
	p := &pass{observed: observed, start: time.Now()}
	res, err := r.reconcile(ctx, req, p)
	if err != nil && !lifecycle.Quiet(ctx, err) {
		metrics.SyncErrors.WithLabelValues(r.pr.Name, errorReason(err)).Inc()
		// A failed pass says nothing about waiting any more.
		r.waited(req, false)
	}
	if timed && !p.timed && (err != nil || res.RequeueAfter > 0) {
		// The event's effect is still to come: its time stays for the
		// pass that writes it.
		r.queue.putBack(req, observed)
	}
	final, finalErr := lifecycle.Result(ctx, res, err)
	cause := err
	if finalErr != nil {
		cause = nil // the same error
	}
	p.trace(ctx, final, finalErr, cause)
	return final, finalErr
}

// pass is what a reconcile pass knows for the metrics and its trace: when
// the event it handles entered the queue (zero for a requeue), when the
// pass started, its writes (nil before the syncer ran), and whether its
// latency was recorded.
type pass struct {
	observed, start time.Time
	ops             *passOps
	timed           bool
	// cacheBehind: the version of the kcp object at which the pass found
	// the cache behind the agent's own write, and waited.
	cacheBehind string
}

// trace logs at debug level where a pass's time went: how long its event
// waited in the queue, how long the pass took, and when each write started
// and how long it took. An operator reads why an object was slow; the
// benchmark splits a quiet workspace's latency with it.
// cause is an error the pass's result no longer carries (a fenced or
// stopped pass is requeued or dropped quietly).
func (p *pass) trace(ctx context.Context, res reconcile.Result, err, cause error) {
	l := log.FromContext(ctx).V(1)
	if !l.Enabled() {
		return
	}
	kv := []any{"took", time.Since(p.start).Round(time.Microsecond).String()}
	if !p.observed.IsZero() {
		kv = append(kv, "queued", p.start.Sub(p.observed).Round(time.Microsecond).String(), "event", p.observed.UTC().Format(time.RFC3339Nano))
	}
	if p.ops != nil {
		kv = append(kv, "writes", p.ops.String())
	}
	if p.cacheBehind != "" {
		kv = append(kv, "cacheBehind", p.cacheBehind)
	}
	if res.RequeueAfter > 0 {
		kv = append(kv, "requeueAfter", res.RequeueAfter.String())
	}
	if err != nil {
		kv = append(kv, "error", err.Error())
	}
	if cause != nil {
		kv = append(kv, "cause", cause.Error())
	}
	l.Info("Sync pass", kv...)
}

func (r *reconciler) reconcile(ctx context.Context, req mcreconcile.Request, p *pass) (reconcile.Result, error) {
	engaged, ok := r.workspaces.workspace(req.ClusterName)
	// The run context carries the endpoint's fence too: a pass that fails
	// while it is closed reports nothing (lifecycle.Quiet).
	run := fence.WithEndpoint(ctx, engaged.Fence)
	if !ok {
		// The workspace is gone (unbound); nothing to do.
		r.imports.notEngaged(ctx, req)
		r.waited(req, false)
		r.streak(r.conflicts, req, false)
		r.streak(r.refusals, req, false)
		r.streak(r.unresolved, req, false)
		r.wroteOver(req, nil, time.Time{})
		return reconcile.Result{}, nil
	}
	if !r.workspaces.registered(req.ClusterName) {
		// A local copy's event can come first; the kcp handlers are added
		// once the endpoint lists the type.
		return reconcile.Result{RequeueAfter: notRegisteredRequeue}, nil
	}
	ctx, cancel := context.WithTimeout(run, reconcileTimeout)
	defer cancel()
	cl := engaged.Cluster
	kcpClient := r.workspaces.reads(engaged)
	obj := typed(r.remoteGVK)
	err := kcpClient.Get(ctx, req.NamespacedName, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if r.imports != nil {
		var existing *unstructured.Unstructured
		if err == nil {
			existing = obj
		}
		created, handled, importErr := r.importPass(ctx, engaged, kcpClient, req, existing, p)
		if handled || importErr != nil {
			return reconcile.Result{}, importErr
		}
		if created != nil {
			obj, err = created, nil
		}
	}
	if err != nil {
		r.wroteOver(req, nil, time.Time{})
		return r.vanished(ctx, kcpClient, cl.GetClient(), req, p)
	}
	if r.cacheBehind(req, obj.GetResourceVersion(), time.Now()) {
		p.cacheBehind = obj.GetResourceVersion()
		// The event of the agent's own write brings the next pass; the
		// requeue is the safety net.
		return reconcile.Result{RequeueAfter: requeueAfterWrite}, nil
	}

	// Objects that do not match the filters are not synced, but the
	// deletion of an object we synced earlier is always processed, and so
	// is that of the related sources it holds.
	synced := true
	if obj.GetDeletionTimestamp() == nil {
		synced = !r.deletionOnly
		if synced {
			matches, err := r.matches(ctx, kcpClient, obj)
			if err != nil {
				return reconcile.Result{}, err
			}
			synced = matches
		}

	}

	recorder := r.kcpRecorder(req.ClusterName, cl)
	// The provider's client reads unstructured objects from the server.
	ws := syncer.Workspace{Client: kcpClient, Live: cl.GetClient(), Cluster: req.ClusterName}
	if r.pr.Spec.EnableWorkspacePaths && synced {
		var err error
		if ws.Path, err = workspacePath(ctx, kcpClient); err != nil {
			if lifecycle.Quiet(run, err) {
				return reconcile.Result{}, err
			}
			recorder.Event(obj, corev1.EventTypeWarning, syncer.ReasonReconcilingError, "The workspace path could not be determined.")
			r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, failureMessage(r.remoteGVK.Kind, req, err))
			return reconcile.Result{}, err
		}
	}

	s := *r.syncer
	events := &passEvents{}
	s.Event = events.record
	r.count(&s, &ws, req, p)
	process := s.Process
	if !synced {
		process = s.ReleaseDeletedSources
	}
	res, err := process(ctx, ws, obj)
	events.flush(run, err, recorder)
	r.record(p)
	if res.Imported != nil {
		r.imported(ctx, req, obj, res.Imported, recorder)
	}
	r.wroteOver(req, p.ops.overwritten(), time.Now())
	if lifecycle.Quiet(run, err) {
		return reconcile.Result{}, err
	}
	if apierrors.IsConflict(err) {
		// A write lost an optimistic-lock race (the cache had not seen a
		// change yet; two primaries adding the finalizer to one related
		// object): the usual case under churn, not an error for the log.
		// Tried again with backoff, without an Event for the consumer.
		return reconcile.Result{RequeueAfter: conflictBackoff(r.streak(r.conflicts, req, true))}, nil
	}
	r.streak(r.conflicts, req, false)
	var refusedAfter time.Duration
	if refusals := syncer.Refusals(err); len(refusals) > 0 {
		// Only the consumer's binding (or the labels of the service-side
		// object) can change this: said on both sides at every attempt
		// (the recorders count repeats), counted as a failed pass, logged
		// with kcp's own words (the provider's log), tried again with a
		// backoff of its own; what else the pass found still counts.
		metrics.SyncErrors.WithLabelValues(r.pr.Name, syncer.ReasonRelatedObjectRefused).Inc()
		log.FromContext(ctx).Info("kcp refused to write related objects", "error", err.Error())
		for _, refused := range refusals {
			recorder.Event(obj, corev1.EventTypeWarning, syncer.ReasonRelatedObjectRefused, refused.ConsumerMessage())
			r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonRelatedObjectRefused, failureMessage(r.remoteGVK.Kind, req, refused))
		}
		refusedAfter = waitBackoff(r.streak(r.refusals, req, true))
		if errors.Is(err, syncer.ErrConflict) {
			metrics.SyncErrors.WithLabelValues(r.pr.Name, syncer.ReasonObjectConflict).Inc()
			r.reportConflict(req, syncer.ErrConflict)
		}
		err = nil
	} else {
		r.streak(r.refusals, req, false)
	}
	if err != nil {
		switch {
		case errors.Is(err, syncer.ErrConflict):
			r.reportConflict(req, err)
		default:
			recorder.Event(obj, corev1.EventTypeWarning, syncer.ReasonReconcilingError, "The object could not be synchronized; the service provider has been notified.")
			r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, failureMessage(r.remoteGVK.Kind, req, err))
		}
		return reconcile.Result{}, err
	}
	var after time.Duration
	if n := r.waited(req, res.Waiting != ""); n > 0 {
		if n == waitReportAfter {
			recorder.Event(obj, corev1.EventTypeWarning, syncer.ReasonObjectWaiting, "The object waits for the service provider, who has been notified.")
			r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonObjectWaiting,
				fmt.Sprintf("%s %s in workspace %s waits: %s.", r.remoteGVK.Kind, objmeta.QualifiedName(req.Namespace, req.Name), req.ClusterName, res.Waiting))
		}
		after = waitBackoff(n)
	}
	if res.Requeue {
		after = requeueAfterWrite
	}
	if refusedAfter > 0 && (after == 0 || refusedAfter < after) {
		after = refusedAfter
	}
	// A reference names an object that may still appear (its creation
	// does not wake this object): checked again with backoff.
	if n := r.streak(r.unresolved, req, res.Unresolved); n > 0 {
		if u := waitBackoff(n); after == 0 || u < after {
			after = u
		}
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// reportConflict counts a refused adoption (err is an ErrConflict) and
// says on the PublishedResource which object it was.
func (r *reconciler) reportConflict(req mcreconcile.Request, err error) {
	Conflicts.WithLabelValues(r.pr.Name).Inc()
	r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, failureMessage(r.remoteGVK.Kind, req, err))
}

// vanished cleans up the local copy and state of a kcp object that is gone
// without its deletion having been processed (see syncer.Vanished). The
// object no longer exists, so there is no Event: the log says it.
func (r *reconciler) vanished(ctx context.Context, kcpClient ctrlruntimeclient.Client, live ctrlruntimeclient.Reader, req mcreconcile.Request, p *pass) (reconcile.Result, error) {
	s := *r.syncer
	s.Event = func(ctrlruntimeclient.Object, string, string, string) {}
	ws := syncer.Workspace{Client: kcpClient, Live: live, Cluster: req.ClusterName}
	ref := typed(r.remoteGVK)
	ref.SetNamespace(req.Namespace)
	ref.SetName(req.Name)
	r.count(&s, &ws, req, p)
	res, err := s.Vanished(ctx, ws, ref)
	r.record(p)
	if apierrors.IsConflict(err) {
		// As in Reconcile: a lost optimistic-lock race, retried quietly.
		return reconcile.Result{RequeueAfter: conflictBackoff(r.streak(r.conflicts, req, true))}, nil
	}
	r.streak(r.conflicts, req, false)
	r.streak(r.refusals, req, false)
	r.streak(r.unresolved, req, false)
	n := r.waited(req, res.Waiting != "")
	switch {
	case err != nil:
		return reconcile.Result{}, err
	case res.Requeue:
		return reconcile.Result{RequeueAfter: requeueAfterWrite}, nil
	case n > 0:
		return reconcile.Result{RequeueAfter: waitBackoff(n)}, nil
	}
	return reconcile.Result{}, nil
}

// failureMessage is the message of the ReconcilingError Event on the
// PublishedResource: which object failed and the kind of failure (an API
// status reason), never the error text, which can echo object content.
func failureMessage(kind string, req mcreconcile.Request, err error) string {
	cause := "an error; see the agent's log"
	var notAllowed *related.NamespaceNotAllowedError
	var refused *syncer.RefusedError
	switch reason := apierrors.ReasonForError(err); {
	case errors.Is(err, syncer.ErrConflict):
		cause = "its local object belongs to someone else"
	case errors.As(err, &notAllowed):
		cause = fmt.Sprintf("a related object in service namespace %q, which is neither the workspace's own, nor fixed by the PublishedResource, nor in spec.related[].allowedNamespaces", notAllowed.Namespace)
	case errors.As(err, &refused):
		cause = fmt.Sprintf("kcp refusing to write related object %q (%s) into the workspace: the consumer's APIBinding does not allow it "+
			"(its permission claim not accepted, accepted with fewer verbs, or with a label selector the object does not match)", refused.Identifier, refused.Kind)
	case errors.Is(err, related.ErrEmptySelector):
		cause = "a related label selector whose templated keys all rendered empty (nothing is selected)"
	case reason != metav1.StatusReasonUnknown:
		cause = "an API error: " + string(reason)
	}
	return fmt.Sprintf("Synchronizing %s %s in workspace %s failed with %s.", kind, objmeta.QualifiedName(req.Namespace, req.Name), req.ClusterName, cause)
}

// matches applies spec.filter; the namespace filter is skipped for
// cluster-scoped kcp objects.
func (r *reconciler) matches(ctx context.Context, c ctrlruntimeclient.Reader, obj *unstructured.Unstructured) (bool, error) {
	if r.resourceFilter != nil && !r.resourceFilter.Matches(labels.Set(obj.GetLabels())) {
		return false, nil
	}
	if r.namespaceFilter != nil && obj.GetNamespace() != "" {
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, types.NamespacedName{Name: obj.GetNamespace()}, ns); err != nil {
			return false, fmt.Errorf("failed to get namespace %s (needs the namespaces permission claim): %w", obj.GetNamespace(), err)
		}
		if !r.namespaceFilter.Matches(labels.Set(ns.Labels)) {
			return false, nil
		}
	}
	return true, nil
}

// workspacePath reads the workspace path from the workspace's LogicalCluster
// (needs the core.kcp.io logicalclusters claim).
func workspacePath(ctx context.Context, c ctrlruntimeclient.Reader) (string, error) {
	lc := &kcpcorev1alpha1.LogicalCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: kcpcorev1alpha1.LogicalClusterName}, lc); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return "", fmt.Errorf("failed to read the LogicalCluster (is the logicalclusters claim accepted?): %w", err)
		}
		return "", fmt.Errorf("failed to read the LogicalCluster: %w", err)
	}
	return lc.Annotations[core.LogicalClusterPathAnnotationKey], nil
}

// count makes the writes of pass p of req (through s and ws) recorded in
// p.ops.
func (r *reconciler) count(s *syncer.Syncer, ws *syncer.Workspace, req mcreconcile.Request, p *pass) {
	ops := &passOps{start: p.start}
	p.ops = ops
	service := side{localGVK: r.syncer.LocalGVK, namespace: r.syncer.State.Namespace}
	s.Service = ops.counted(s.Service, service)
	s.RelatedService = ops.counted(s.RelatedService, service)
	st := *s.State
	st.Client = ops.counted(st.Client, service)
	s.State = &st
	ws.Client = ops.counted(ws.Client, side{kcp: true, remoteGVK: r.remoteGVK, primary: req.NamespacedName})
}

// record counts a pass's writes and, for a pass that handled an event
// and wrote its effect, its latency.
func (r *reconciler) record(p *pass) {
	ops := p.ops
	ops.mu.Lock()
	for _, o := range ops.ops {
		metrics.SyncOperations.WithLabelValues(r.pr.Name, o.op, o.result).Inc()
	}
	ops.mu.Unlock()
	if p.observed.IsZero() {
		return
	}
	if ops.wrote(opCreate, opUpdate, opDelete) {
		metrics.SyncLatency.WithLabelValues(r.pr.Name, "down").Observe(time.Since(p.observed).Seconds())
		p.timed = true
	}
	if ops.wrote(opStatus) {
		metrics.SyncLatency.WithLabelValues(r.pr.Name, "up").Observe(time.Since(p.observed).Seconds())
		p.timed = true
	}
}

// errorReason is the reason label of sync_agent_sync_errors_total.
func errorReason(err error) string {
	var notAllowed *related.NamespaceNotAllowedError
	switch reason := apierrors.ReasonForError(err); {
	case errors.Is(err, syncer.ErrConflict):
		return syncer.ReasonObjectConflict
	case errors.As(err, &notAllowed):
		return "NamespaceNotAllowed"
	case errors.Is(err, related.ErrEmptySelector):
		return "EmptySelector"
	case knownReasons.Has(reason):
		return string(reason)
	case reason != metav1.StatusReasonUnknown:
		return "Other" // a reason a webhook made up: the label stays bounded
	case strings.Contains(err.Error(), "mutation:"):
		return "Mutation"
	}
	return "Unknown"
}

// knownReasons are the API status reasons that errorReason reports as
// they are.
var knownReasons = sets.New(
	metav1.StatusReasonUnauthorized, metav1.StatusReasonForbidden, metav1.StatusReasonNotFound,
	metav1.StatusReasonAlreadyExists, metav1.StatusReasonConflict, metav1.StatusReasonGone,
	metav1.StatusReasonInvalid, metav1.StatusReasonServerTimeout, metav1.StatusReasonTimeout,
	metav1.StatusReasonTooManyRequests, metav1.StatusReasonBadRequest, metav1.StatusReasonMethodNotAllowed,
	metav1.StatusReasonNotAcceptable, metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonUnsupportedMediaType,
	metav1.StatusReasonInternalError, metav1.StatusReasonExpired, metav1.StatusReasonServiceUnavailable,
)

// gaugeReadTimeout bounds the read of the copies cache for a scrape.
const gaugeReadTimeout = time.Second

// stopGauges unregisters the controller's gauges and waits for a scrape
// that is reading them: a read of the copies cache after the controller
// released its informer would start a new one nobody removes.
func (c *Controller) stopGauges(unregister func()) {
	unregister()
	c.gaugeMu.Lock()
	c.gaugesStopped = true
	c.gaugeMu.Unlock()
}

// gauges are the controller's gauges for the metrics (read at scrape).
func (c *Controller) gauges() metrics.ControllerGauges {
	queue := func() *timedQueue {
		c.r.streakMu.Lock()
		defer c.r.streakMu.Unlock()
		return c.r.queue
	}
	return metrics.ControllerGauges{
		Copies: func() float64 {
			c.gaugeMu.RLock()
			defer c.gaugeMu.RUnlock()
			if c.gaugesStopped {
				return 0
			}
			ctx, cancel := context.WithTimeout(context.Background(), gaugeReadTimeout)
			defer cancel()
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(c.opts.LocalGVK.GroupVersion().WithKind(c.opts.LocalGVK.Kind + "List"))
			if err := c.opts.LocalCache.List(ctx, list, ctrlruntimeclient.MatchingLabels{keys.AgentName: c.opts.AgentName}, ctrlruntimeclient.UnsafeDisableDeepCopy); err != nil {
				return 0
			}
			return float64(len(list.Items))
		},
		Waiting: func() float64 {
			c.r.streakMu.Lock()
			defer c.r.streakMu.Unlock()
			return float64(c.r.waits.len())
		},
		QueueDepth: func() float64 {
			if q := queue(); q != nil {
				return float64(q.depth())
			}
			return 0
		},
		OldestAge: func() float64 {
			if q := queue(); q != nil {
				return q.oldestAge()
			}
			return 0
		},
	}
}

// kcpRecorder records Events on kcp objects in a workspace.
func (r *reconciler) kcpRecorder(workspace string, cl cluster.Cluster) record.EventRecorder {
	if r.kcpEvents != nil {
		return r.kcpEvents(workspace)
	}
	return cl.GetEventRecorderFor(ControllerName)
}
