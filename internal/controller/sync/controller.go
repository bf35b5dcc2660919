package sync

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mchandler "sigs.k8s.io/multicluster-runtime/pkg/handler"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
	mcsource "sigs.k8s.io/multicluster-runtime/pkg/source"

	"github.com/kcp-syncagent/api-syncagent/internal/mutation"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
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
	// DeletionOnly processes only the deletion of objects that carry our
	// finalizer (synchronization disabled).
	DeletionOnly bool
	AgentName    string
	// Namespace holds the state Secrets.
	Namespace string

	LocalGVK, RemoteGVK schema.GroupVersionKind
	LocalNamespaced     bool
	RemoteNamespaced    bool
	StatusSubresource   bool

	// RelatedTypes are the types of spec.related, index by index.
	RelatedTypes []RelatedTypes
	// RelatedService reads related objects through RelatedCache (all
	// namespaces) and writes them.
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
}

// RelatedTypes are the types of one related entry on both sides.
type RelatedTypes struct {
	Kcp, Service related.Type
}

// New creates an unstarted sync controller. The caller engages clusters and
// starts it.
func New(mgr mcmanager.Manager, opts Options) (mccontroller.Controller, error) {
	pr := opts.PublishedResource
	namer, err := naming.NewNamer(pr.Spec.Naming)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	var specRules, statusRules []syncagentv1alpha1.ResourceMutation
	if m := pr.Spec.Mutation; m != nil {
		specRules, statusRules = m.Spec, m.Status
	}
	specMutator, err := mutation.Compile(specRules)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.mutation.spec: %w", ErrInvalidConfig, err)
	}
	statusMutator, err := mutation.Compile(statusRules)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.mutation.status: %w", ErrInvalidConfig, err)
	}
	if len(opts.RelatedTypes) != len(pr.Spec.Related) {
		return nil, fmt.Errorf("the types of %d related entries are needed, got %d", len(pr.Spec.Related), len(opts.RelatedTypes))
	}
	var entries []*related.Entry
	for i := range pr.Spec.Related {
		e, err := related.Compile(&pr.Spec.Related[i], opts.RelatedTypes[i].Kcp, opts.RelatedTypes[i].Service)
		if err != nil {
			return nil, fmt.Errorf("%w: spec.related[%d]: %w", ErrInvalidConfig, i, err)
		}
		entries = append(entries, e)
	}
	var resourceFilter, namespaceFilter labels.Selector
	if f := pr.Spec.Filter; f != nil {
		if f.Resource != nil {
			if resourceFilter, err = metav1.LabelSelectorAsSelector(f.Resource); err != nil {
				return nil, fmt.Errorf("%w: spec.filter.resource: %w", ErrInvalidConfig, err)
			}
		}
		if f.Namespace != nil {
			if namespaceFilter, err = metav1.LabelSelectorAsSelector(f.Namespace); err != nil {
				return nil, fmt.Errorf("%w: spec.filter.namespace: %w", ErrInvalidConfig, err)
			}
		}
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}

	r := &reconciler{
		mgr:             mgr,
		pr:              pr,
		remoteGVK:       opts.RemoteGVK,
		deletionOnly:    opts.DeletionOnly,
		resourceFilter:  resourceFilter,
		namespaceFilter: namespaceFilter,
		log:             mgr.GetLogger().WithName(ControllerName).WithValues("publishedresource", pr.Name),
		prRecorder:      mgr.GetLocalManager().GetEventRecorderFor(ControllerName),
		syncer: &syncer.Syncer{
			AgentName:         opts.AgentName,
			LocalGVK:          opts.LocalGVK,
			LocalNamespaced:   opts.LocalNamespaced,
			StatusSubresource: opts.StatusSubresource,
			Namer:             namer,
			Service:           opts.Service,
			Copies:            opts.LocalCache,
			State:             &state.Store{Client: opts.Service, Live: opts.ServiceReader, Namespace: opts.Namespace, AgentName: opts.AgentName},
			Warned:            syncer.NewWarnedSet(),
			SpecMutator:       specMutator,
			StatusMutator:     statusMutator,
			Related:           entries,
			RelatedService:    opts.RelatedService,
		},
	}

	ctrl, err := mccontroller.NewUnmanaged(ControllerName, mgr, controller.TypedOptions[mcreconcile.Request]{
		Reconciler:              r,
		MaxConcurrentReconciles: opts.Workers,
		// Every PublishedResource has its own controller with the shared name.
		SkipNameValidation: ptr(true),
		LogConstructor: func(req *mcreconcile.Request) logr.Logger {
			l := r.log
			if req != nil {
				l = l.WithValues("cluster", req.ClusterName, "request", req.NamespacedName)
			}
			return l
		},
	})
	if err != nil {
		return nil, err
	}

	// An earlier controller of the same local type may have added the index.
	// Adding it waits for the informer of the local type to sync, which
	// never happens if the agent may not list or watch that type: bounded,
	// so that the syncmanager is not held up.
	indexCtx, cancel := context.WithTimeout(context.Background(), indexSyncTimeout)
	defer cancel()
	if err := opts.LocalCache.IndexField(indexCtx, typed(opts.LocalGVK), objmeta.RemoteIndex, objmeta.RemoteIndexValues); err != nil && !strings.Contains(err.Error(), "indexer conflict") {
		// The informer keeps listing in the background; no controller
		// uses it (a working one would have synced it), so it goes.
		if rerr := opts.LocalCache.RemoveInformer(context.Background(), typed(opts.LocalGVK)); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrLocalTypeNotSynced, opts.LocalGVK, err)
	}
	if err := ctrl.MultiClusterWatch(mcsource.Kind(typed(opts.RemoteGVK), mchandler.TypedEnqueueRequestForObject[*unstructured.Unstructured]())); err != nil {
		return nil, fmt.Errorf("failed to watch kcp objects: %w", err)
	}
	ours := predicate.NewTypedPredicateFuncs(func(o *unstructured.Unstructured) bool { return !objmeta.OwnedByOtherAgent(o, opts.AgentName) })
	if err := ctrl.Watch(source.TypedKind[*unstructured.Unstructured, mcreconcile.Request](opts.LocalCache, typed(opts.LocalGVK),
		handler.TypedEnqueueRequestsFromMapFunc(localToRemote), ours)); err != nil {
		return nil, fmt.Errorf("failed to watch local copies: %w", err)
	}
	for _, e := range entries {
		if err := watchRelated(ctrl, opts, e); err != nil {
			return nil, fmt.Errorf("failed to watch related %q: %w", e.Identifier, err)
		}
	}
	return ctrl, nil
}

func ptr[T any](v T) *T { return &v }

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
	mgr             mcmanager.Manager
	pr              *syncagentv1alpha1.PublishedResource
	remoteGVK       schema.GroupVersionKind
	deletionOnly    bool
	resourceFilter  labels.Selector
	namespaceFilter labels.Selector
	syncer          *syncer.Syncer
	log             logr.Logger
	// prRecorder records Events on the PublishedResource (service cluster).
	prRecorder record.EventRecorder
}

func (r *reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (reconcile.Result, error) {
	cl, err := r.mgr.GetCluster(ctx, req.ClusterName)
	if err != nil {
		// The workspace is gone (unbound); nothing to do.
		return reconcile.Result{}, nil //nolint:nilerr // see comment.
	}
	// Reads come from the workspace's cache (the provider's client reads
	// unstructured objects live), writes go to the workspace.
	kcpClient := cachedReads{Client: cl.GetClient(), cache: cl.GetCache()}
	obj := typed(r.remoteGVK)
	if err := kcpClient.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, ctrlruntimeclient.IgnoreNotFound(err)
	}

	// Objects that do not match the filters are not synced, but the
	// deletion of an object we synced earlier is always processed.
	if obj.GetDeletionTimestamp() == nil {
		if r.deletionOnly {
			return reconcile.Result{}, nil
		}
		matches, err := r.matches(ctx, cl, obj)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !matches {
			return reconcile.Result{}, nil
		}
	}

	recorder := cl.GetEventRecorderFor(ControllerName)
	ws := syncer.Workspace{Client: kcpClient, Cluster: req.ClusterName}
	if r.pr.Spec.EnableWorkspacePaths {
		if ws.Path, err = workspacePath(ctx, cl); err != nil {
			recorder.Event(obj, corev1.EventTypeWarning, syncer.ReasonReconcilingError, "The workspace path could not be determined.")
			r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, failureMessage(r.remoteGVK.Kind, req, err))
			return reconcile.Result{}, err
		}
	}

	s := *r.syncer
	s.Event = func(o ctrlruntimeclient.Object, eventType, reason, message string) {
		recorder.Event(o, eventType, reason, message)
	}
	res, err := s.Process(ctx, ws, obj)
	if err != nil {
		switch {
		case apierrors.IsConflict(err):
			// A write lost an optimistic-lock race (two primaries adding the
			// finalizer to one related object, say): retried with the usual
			// backoff, without an Event for the consumer.
		case errors.Is(err, syncer.ErrConflict):
			Conflicts.WithLabelValues(r.pr.Name).Inc()
			r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, failureMessage(r.remoteGVK.Kind, req, err))
		default:
			recorder.Event(obj, corev1.EventTypeWarning, syncer.ReasonReconcilingError, "The object could not be synchronized; the service provider has been notified.")
			r.prRecorder.Event(r.pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, failureMessage(r.remoteGVK.Kind, req, err))
		}
		return reconcile.Result{}, err
	}
	if res.Requeue {
		return reconcile.Result{RequeueAfter: requeueAfterWrite}, nil
	}
	return reconcile.Result{}, nil
}

// failureMessage is the message of the ReconcilingError Event on the
// PublishedResource: which object failed and the kind of failure (an API
// status reason), never the error text, which can echo object content.
func failureMessage(kind string, req mcreconcile.Request, err error) string {
	cause := "an error; see the agent's log"
	switch reason := apierrors.ReasonForError(err); {
	case errors.Is(err, syncer.ErrConflict):
		cause = "its local object belongs to someone else"
	case reason != metav1.StatusReasonUnknown:
		cause = "an API error: " + string(reason)
	}
	name := req.Name
	if req.Namespace != "" {
		name = req.Namespace + "/" + req.Name
	}
	return fmt.Sprintf("Synchronizing %s %s in workspace %s failed with %s.", kind, name, req.ClusterName, cause)
}

// cachedReads is a client whose Get and List use a workspace cache.
type cachedReads struct {
	ctrlruntimeclient.Client
	cache cache.Cache
}

func (c cachedReads) Get(ctx context.Context, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
	if err := c.ensureInformer(ctx, obj); err != nil {
		return err
	}
	return c.cache.Get(ctx, key, obj, opts...)
}

func (c cachedReads) List(ctx context.Context, list ctrlruntimeclient.ObjectList, opts ...ctrlruntimeclient.ListOption) error {
	if err := c.ensureInformer(ctx, list); err != nil {
		return err
	}
	return c.cache.List(ctx, list, opts...)
}

// ensureInformer starts the informer of an unstructured type explicitly:
// the provider's wildcard cache would otherwise start a typed informer for
// types its scheme knows (ConfigMaps, Secrets) and then not find it.
func (c cachedReads) ensureInformer(ctx context.Context, obj runtime.Object) error {
	if _, ok := obj.(runtime.Unstructured); !ok {
		return nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if _, isList := obj.(*unstructured.UnstructuredList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if _, err := c.cache.GetInformer(ctx, typed(gvk)); err != nil {
		return fmt.Errorf("failed to start the informer for %s: %w", gvk, err)
	}
	return nil
}

// matches applies spec.filter; the namespace filter is skipped for
// cluster-scoped kcp objects.
func (r *reconciler) matches(ctx context.Context, cl cluster.Cluster, obj *unstructured.Unstructured) (bool, error) {
	if r.resourceFilter != nil && !r.resourceFilter.Matches(labels.Set(obj.GetLabels())) {
		return false, nil
	}
	if r.namespaceFilter != nil && obj.GetNamespace() != "" {
		ns := &corev1.Namespace{}
		if err := cl.GetClient().Get(ctx, types.NamespacedName{Name: obj.GetNamespace()}, ns); err != nil {
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
func workspacePath(ctx context.Context, cl cluster.Cluster) (string, error) {
	lc := &kcpcorev1alpha1.LogicalCluster{}
	if err := cl.GetClient().Get(ctx, types.NamespacedName{Name: kcpcorev1alpha1.LogicalClusterName}, lc); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return "", fmt.Errorf("failed to read the LogicalCluster (is the logicalclusters claim accepted?): %w", err)
		}
		return "", fmt.Errorf("failed to read the LogicalCluster: %w", err)
	}
	return lc.Annotations[core.LogicalClusterPathAnnotationKey], nil
}
