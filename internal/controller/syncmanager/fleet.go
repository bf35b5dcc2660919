package syncmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/multicluster-provider/apiexport"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
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

	mu          sync.Mutex
	clusters    map[string]engaged
	controllers map[string]*running

	// state reads and deletes the related state of released primaries.
	state *state.Store
}

type endpoint struct {
	provider *apiexport.Provider
	cancel   context.CancelFunc
}

type engaged struct {
	ctx     context.Context //nolint:containedctx // ends when the workspace is disengaged.
	cluster cluster.Cluster
}

type running struct {
	key    controllerKey
	ctrl   mccontroller.Controller
	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ multicluster.Provider = &fleet{}
	_ mcmanager.Runnable    = &fleet{}
)

func newFleet(log logr.Logger, scheme *runtime.Scheme, base *rest.Config) *fleet {
	return &fleet{
		log:         log,
		scheme:      scheme,
		base:        base,
		started:     make(chan struct{}),
		providers:   map[string]*endpoint{},
		clusters:    map[string]engaged{},
		controllers: map[string]*running{},
	}
}

// Start records the leader's run context and blocks until it ends.
func (f *fleet) Start(ctx context.Context) error {
	f.ctx = ctx
	close(f.started)
	<-ctx.Done()
	return nil
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
// ones (their workspaces are disengaged with them).
func (f *fleet) SetEndpoints(urls []string) error {
	f.provMu.Lock()
	defer f.provMu.Unlock()

	want := map[string]bool{}
	for _, u := range urls {
		want[u] = true
	}
	for u, ep := range f.providers {
		if !want[u] {
			f.log.Info("Disconnecting from virtual workspace endpoint", "url", u)
			ep.cancel()
			delete(f.providers, u)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(want)) {
		if _, ok := f.providers[u]; ok {
			continue
		}
		cfg := rest.CopyConfig(f.base)
		cfg.Host = u
		p, err := apiexport.New(cfg, apiexport.Options{Scheme: f.scheme})
		if err != nil {
			return fmt.Errorf("failed to connect to endpoint %s: %w", u, err)
		}
		ctx, cancel := context.WithCancel(f.ctx)
		ep := &endpoint{provider: p, cancel: cancel}
		f.providers[u] = ep
		f.log.Info("Connecting to virtual workspace endpoint", "url", u)
		go f.runEndpoint(ctx, u, cfg, ep)
	}
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
// with a fresh one after each failure.
func (f *fleet) runEndpoint(ctx context.Context, u string, cfg *rest.Config, ep *endpoint) {
	wait := endpointRetryMin
	for {
		f.provMu.RLock()
		p := ep.provider
		f.provMu.RUnlock()
		// Each attempt has its own context: a failed Run can leave its
		// cache running, which must end with the attempt.
		attempt, cancel := context.WithCancel(ctx)
		started := time.Now()
		err := p.Run(attempt, f.mcMgr)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > endpointRetryMax {
			wait = endpointRetryMin // it worked for a while: a new failure starts over
		}
		f.log.Info("Virtual workspace endpoint failed, reconnecting", "url", u, "after", wait, "error", fmt.Sprint(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, endpointRetryMax)
		fresh, err := apiexport.New(cfg, apiexport.Options{Scheme: f.scheme})
		if err != nil {
			f.log.Error(err, "Failed to create the connection to a virtual workspace endpoint", "url", u)
			continue
		}
		f.provMu.Lock()
		ep.provider = fresh
		f.provMu.Unlock()
	}
}

// Engage implements multicluster.Aware: record the workspace and engage it
// into every running controller.
func (f *fleet) Engage(ctx context.Context, name string, cl cluster.Cluster) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters[name] = engaged{ctx: ctx, cluster: cl}
	for prName, r := range f.controllers {
		if err := r.ctrl.Engage(ctx, name, cl); err != nil {
			f.log.Error(err, "Failed to engage workspace", "cluster", name, "publishedresource", prName)
		}
	}
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.clusters[name].cluster == cl {
			delete(f.clusters, name)
		}
	}()
	return nil
}

// Ensure runs exactly one controller for the PublishedResource: it keeps a
// running controller with the same key, otherwise stops the old one (and
// waits for it) before it builds, engages and starts the new one.
func (f *fleet) Ensure(prName string, key controllerKey, build func() (mccontroller.Controller, error)) error {
	f.mu.Lock()
	old := f.controllers[prName]
	if old != nil && old.key == key {
		f.mu.Unlock()
		return nil
	}
	delete(f.controllers, prName)
	f.mu.Unlock()
	if old != nil {
		old.stop()
	}

	ctrl, err := build()
	if err != nil {
		metrics.SyncControllers.Set(float64(f.count()))
		return err
	}
	ctx, cancel := context.WithCancel(f.ctx)
	r := &running{key: key, ctrl: ctrl, cancel: cancel, done: make(chan struct{})}

	f.mu.Lock()
	for name, e := range f.clusters {
		if err := ctrl.Engage(e.ctx, name, e.cluster); err != nil {
			f.log.Error(err, "Failed to engage workspace", "cluster", name, "publishedresource", prName)
		}
	}
	f.controllers[prName] = r
	n := len(f.controllers)
	f.mu.Unlock()
	metrics.SyncControllers.Set(float64(n))
	metrics.SyncControllerStarts.WithLabelValues(prName).Inc()

	go func() {
		defer close(r.done)
		if err := ctrl.Start(ctx); err != nil && ctx.Err() == nil {
			f.log.Error(err, "Sync controller failed", "publishedresource", prName)
		}
	}()
	return nil
}

// Stop stops the PublishedResource's controller, if any.
func (f *fleet) Stop(prName string) {
	f.mu.Lock()
	old := f.controllers[prName]
	delete(f.controllers, prName)
	n := len(f.controllers)
	f.mu.Unlock()
	if old != nil {
		old.stop()
	}
	metrics.SyncControllers.Set(float64(n))
}

// Release stops the PublishedResource's controller and, best effort,
// removes our finalizer from its objects in every engaged workspace, so
// that consumers' deletions do not hang once the PublishedResource is gone.
// Local copies are left alone.
func (f *fleet) Release(ctx context.Context, prName string) {
	f.mu.Lock()
	old := f.controllers[prName]
	clusters := maps.Clone(f.clusters)
	f.mu.Unlock()
	f.Stop(prName)
	if old == nil {
		return
	}
	for name, e := range clusters {
		if err := releaseFinalizers(ctx, e.cluster, old.key.remoteGVK); err != nil {
			f.log.Error(err, "Failed to release finalizers", "cluster", name, "publishedresource", prName)
		}
	}
	if err := f.releaseRelated(ctx, old.key.remoteGVK.GroupKind(), clusters); err != nil {
		f.log.Error(err, "Failed to release related objects", "publishedresource", prName)
	}
}

// releaseRelated removes our finalizer from the kcp-origin related objects
// that primaries of group/kind gk hold (their records name them), unless a
// primary of another kind holds them too, and deletes those primaries'
// related records: with their PublishedResource gone, nothing would release
// the sources later. Records of workspaces that are not engaged stay.
func (f *fleet) releaseRelated(ctx context.Context, gk schema.GroupKind, clusters map[string]engaged) error {
	records, err := f.state.RelatedRecordsOf(ctx, gk)
	if err != nil {
		return err
	}
	var errs []error
	for _, rec := range records {
		e, ok := clusters[rec.Cluster]
		if !ok {
			continue
		}
		if err := f.releaseSource(ctx, gk, e.cluster, rec); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := f.state.DeleteRelated(ctx, rec.SecretName); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// releaseSource removes our finalizer from a record's kcp-origin source,
// unless the record of a primary of another kind than gk names it as its
// kcp origin too.
func (f *fleet) releaseSource(ctx context.Context, gk schema.GroupKind, cl cluster.Cluster, rec state.StoredRelated) error {
	if rec.OriginSide != string(related.SideKcp) || rec.Origin.Name == "" {
		return nil
	}
	holders, err := f.state.SourceHolders(ctx, rec.PrimaryOf(), rec.Origin)
	if err != nil {
		return err
	}
	for _, o := range holders {
		if o.Primary.GroupKind() != gk {
			return nil
		}
	}
	obj := rec.Origin.Unstructured()
	if err := cl.GetClient().Get(ctx, types.NamespacedName{Namespace: rec.Origin.Namespace, Name: rec.Origin.Name}, obj); err != nil {
		return ctrlruntimeclient.IgnoreNotFound(err)
	}
	return releaseObject(ctx, cl, obj)
}

func releaseFinalizers(ctx context.Context, cl cluster.Cluster, gvk schema.GroupVersionKind) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := cl.GetClient().List(ctx, list); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		errs = append(errs, releaseObject(ctx, cl, &list.Items[i]))
	}
	return errors.Join(errs...)
}

// releaseObject removes our finalizer from obj, if it has it, with an
// ObjectReleased Event.
func releaseObject(ctx context.Context, cl cluster.Cluster, obj *unstructured.Unstructured) error {
	if !controllerutil.ContainsFinalizer(obj, keys.CleanupFinalizer) {
		return nil
	}
	patch := ctrlruntimeclient.MergeFrom(obj.DeepCopy())
	controllerutil.RemoveFinalizer(obj, keys.CleanupFinalizer)
	if err := cl.GetClient().Patch(ctx, obj, patch); ctrlruntimeclient.IgnoreNotFound(err) != nil {
		return err
	}
	cl.GetEventRecorderFor(ControllerName).Event(obj, corev1.EventTypeNormal, ReasonObjectReleased, "The service no longer synchronizes this object; it was released.")
	return nil
}

// engagedCluster returns an engaged workspace, nil if it is not engaged.
func (f *fleet) engagedCluster(name string) cluster.Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clusters[name].cluster
}

// syncedGVK returns the kcp GVK of a running controller for gk.
func (f *fleet) syncedGVK(gk schema.GroupKind) (schema.GroupVersionKind, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.controllers {
		if r.key.remoteGVK.GroupKind() == gk {
			return r.key.remoteGVK, true
		}
	}
	return schema.GroupVersionKind{}, false
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
