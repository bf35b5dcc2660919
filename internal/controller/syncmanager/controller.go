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
	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	labelselection "k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	"github.com/kcp-syncagent/api-syncagent/internal/compact"
	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	agentdiscovery "github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/emptyns"
	"github.com/kcp-syncagent/api-syncagent/internal/endpointlease"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	"github.com/kcp-syncagent/api-syncagent/internal/selection"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// ControllerName is the controller's name in logs, metrics and as field manager.
const ControllerName = "syncagent-syncmanager"

// ReasonObjectReleased is the Event reason on kcp objects whose finalizer is
// released because their PublishedResource was deleted or deselected.
const ReasonObjectReleased = "ObjectReleased"

// ReasonReleaseFailed is the Warning Event reason on a PublishedResource this
// agent no longer selects whose objects it could not release yet.
const ReasonReleaseFailed = "ReleaseFailed"

// Checking again whether the virtual workspace serves a new type (kcp needs
// a moment after the export changed; nothing sends an event when it is
// done) starts after notServedRetryMin and doubles up to notServedRetryMax,
// so a type that is never served does not cause a steady poll.
const (
	notServedRetryMin = time.Second
	notServedRetryMax = 5 * time.Minute
)

// conflictRetry: a finalizer write that lost an optimistic-lock race (the
// other controllers write the PublishedResource's status) is made again
// after this time, without an error in the log.
const conflictRetry = 100 * time.Millisecond

// endpointRecheckInterval re-checks the endpoints of a PublishedResource
// whose controller runs: an endpoint (a shard) that goes away or comes back
// sends no event, and SyncReady should say so within this time.
const endpointRecheckInterval = time.Minute

// endpointCheckTimeout bounds one discovery request to an endpoint, so a
// shard that does not answer at all cannot hold up the syncmanager; and an
// endpoint that failed is not asked again for endpointFailureMemory (the
// PublishedResources reconciled meanwhile reuse the answer), so one such
// shard costs one timeout, not one per PublishedResource.
const (
	endpointCheckTimeout  = 10 * time.Second
	endpointFailureMemory = 30 * time.Second
)

// Options configure the syncmanager.
type Options struct {
	AgentName string
	// Namespace holds the sync state.
	Namespace string
	Selector  labels.Selector
	Target    *kcp.Target
	Resolver  *agentdiscovery.Resolver
	// StateSweepInterval is the period of the orphaned state sweep.
	StateSweepInterval time.Duration
	// SweepUnbound lets the sweep delete the copies and state of unbound
	// workspaces (see sweeper.goneWorkspaces).
	SweepUnbound bool
	// DeleteCreatedNamespaces lets the sweep delete the namespaces the
	// agent created for workspaces that are gone, once they are empty.
	DeleteCreatedNamespaces bool
	// EnableImports lets the sync controllers import service-cluster
	// objects that ask for it (label syncagent.kcp.io/import-into).
	EnableImports bool
	// NamespaceMetadata is put on the service-cluster namespaces the agent
	// creates, and kept on them (nil: nothing; what an earlier
	// configuration put there is removed).
	NamespaceMetadata *nsmeta.Metadata
	// PatrolInterval and PatrolReport configure the sync controllers'
	// patrollers (see syncctrl.Patrol).
	PatrolInterval time.Duration
	PatrolReport   bool
	// UnusedKcpInformerTimeout: see unusedInformers (0: never remade).
	UnusedKcpInformerTimeout time.Duration
	// SyncWorkers is each sync controller's number of concurrent
	// reconciles of one workspace's objects; it runs twice as many workers (0:
	// the sync controller's default).
	SyncWorkers int
	// KcpWarningEventsOnly records only Warning Events on kcp objects.
	KcpWarningEventsOnly bool
	// Partition is the Partition the endpoint slice names ("" without
	// one): the agent serves only its shards, and the keys it writes on
	// PublishedResources (release finalizer, synced resources, SyncReady)
	// are its partition's, next to the other partitions' agents' (see
	// partition.go).
	Partition string
	// Leases reads and writes the endpoints' Leases in Namespace, and
	// Identity names this replica in them: an agent of a partition serves
	// only the endpoints whose Leases it holds (internal/endpointlease).
	// Required with a Partition. LeaderElection: the replicas elect a
	// leader (an earlier leader's endpoint Leases are taken at once).
	Leases         coordinationv1client.LeasesGetter
	Identity       string
	LeaderElection bool
	// ReleaseOnly: the sync controller is disabled (--disabled-controllers
	// sync). No PublishedResource is synced; each that carries the agent's
	// release finalizer (it synced it before) is released as when
	// deselected, once per agent process; the state sweep and the claims
	// report do not run.
	ReleaseOnly bool
}

// controllerKey holds everything whose change restarts a sync controller.
type controllerKey struct {
	// deletionOnly: synchronization is disabled, but objects that carry our
	// finalizer still have their deletion processed (contract §7 #13).
	deletionOnly      bool
	remoteGVK         schema.GroupVersionKind
	remoteResource    string
	uid               types.UID
	generation        int64
	schemaName        string
	localGVK          schema.GroupVersionKind
	localNamespaced   bool
	statusSubresource bool
	// relatedTypes: what discovery says about the related types (their
	// scope and status subresource); a change restarts the controller.
	relatedTypes string
}

type reconciler struct {
	Options
	client   ctrlruntimeclient.Client
	kcpCache ctrlruntimeclient.Reader
	fleet    *fleet
	mcMgr    mcmanager.Manager
	status   *conditions.Writer
	log      logr.Logger

	// copiesCache holds the local copies; importCache the objects that
	// ask to be imported (nil without EnableImports).
	copiesCache cache.Cache
	importCache cache.Cache
	// releases runs the releases of PublishedResources.
	releases *releaseJobs

	// relatedCache holds the related objects of watched types on the
	// service cluster, in every namespace (the manager's cache has Secrets
	// of one namespace only); relatedClient writes them.
	relatedCache  cache.Cache
	relatedClient ctrlruntimeclient.Client

	// servedMu guards notServed, releasing, conflictReleased, released, earlierDone, warned, failed and listedAs.
	servedMu sync.Mutex
	// listedAs maps an endpoint's URL (rewritten) to the slice's (see
	// partition.go).
	listedAs map[string]string
	// kcpTypes remembers the related types found on an endpoint.
	kcpTypes typeCache
	// notServed counts consecutive "not served" answers per PublishedResource.
	notServed map[string]int
	// prEvents records Events on PublishedResources.
	prEvents record.EventRecorder
	// warned remembers the PublishedResources whose finalizer could not be
	// added for lack of permissions.
	warned map[string]bool
	// releasing counts consecutive failed releases per PublishedResource.
	releasing map[string]int
	// conflictReleased remembers the PublishedResources in SourceConflict
	// whose objects were released (once per agent process).
	conflictReleased map[types.UID]bool
	// released remembers the PublishedResources released in release-only
	// mode (Options.ReleaseOnly).
	released map[types.UID]bool
	// earlierDone remembers, per PublishedResource, what its last finished
	// release of earlier projections released.
	earlierDone map[string]earlierDone
	// endpointClients reaches the workspaces of an endpoint.
	endpointClients endpointClients
	// informers counts the sync controllers' uses of the service-side
	// informers.
	informers *syncctrl.SharedInformers
	// targets are the types the running sync controllers synchronize
	// (spec.references).
	targets *syncer.Targets
	// review checks the agent's permissions on the service cluster.
	review accessReviewer
	// failed remembers endpoints whose discovery failed recently.
	failed map[string]endpointFailure
}

type endpointFailure struct {
	err   error
	until time.Time
}

// notServedBackoff returns the next wait for a PublishedResource whose type
// is not served yet.
func (r *reconciler) notServedBackoff(prName string) time.Duration {
	return r.backoff(r.notServed, prName)
}

// backoff returns the next wait for a PublishedResource that failed the
// same way count[prName] times before, and counts this failure.
func (r *reconciler) backoff(count map[string]int, prName string) time.Duration {
	r.servedMu.Lock()
	defer r.servedMu.Unlock()
	d := backoff.Exponential(notServedRetryMin, notServedRetryMax, count[prName])
	count[prName]++
	return d
}

// Add sets up the syncmanager.
func Add(mgr manager.Manager, opts Options) error {
	if opts.AgentName == "" || opts.Namespace == "" || opts.Selector == nil || opts.Target == nil || opts.Resolver == nil {
		return errors.New("syncmanager: AgentName, Namespace, Selector, Target and Resolver are required")
	}
	log := mgr.GetLogger().WithName(ControllerName)
	metadataClient, err := metadata.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("failed to create the metadata client: %w", err)
	}

	byObject := map[ctrlruntimeclient.Object]cache.ByObject{
		&kcpapisv1alpha1.APIExportEndpointSlice{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.Target.EndpointSliceName)},
	}
	if opts.Target.APIExportMode {
		// The export is in the agent's workspace in this mode.
		byObject[&kcpapisv1alpha2.APIExport{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", opts.Target.APIExportName)}
	}
	kcpCache, err := cache.New(opts.Target.Config, cache.Options{Scheme: kcp.NewScheme(), ByObject: byObject})
	if err != nil {
		return fmt.Errorf("failed to create the endpoint slice cache: %w", err)
	}
	if err := mgr.Add(kcpCache); err != nil {
		return err
	}

	f := newFleet(log, kcp.NewScheme(), opts.Target.Config, opts.UnusedKcpInformerTimeout)
	if opts.Partition != "" {
		if opts.Leases == nil || opts.Identity == "" {
			return errors.New("syncmanager: Leases and Identity are required with a Partition")
		}
		f.claimConfig = &endpointlease.Config{
			Leases: opts.Leases, Namespace: opts.Namespace, AgentName: opts.AgentName,
			Partition: opts.Partition, Identity: opts.Identity,
			Timing: endpointlease.Timing{LeaseDuration: endpointLeaseDuration, TakeoverAfter: endpointTakeoverAfter,
				SamePartitionAtOnce: opts.LeaderElection},
			RenewDeadline: endpointRenewDeadline, RetryPeriod: endpointRetryPeriod,
			Log: log.WithName("endpoint-lease"),
			// An agent that only releases takes only the endpoints whose
			// objects are its partition's (endpointlease.View.Passive).
			Passive: opts.ReleaseOnly,
		}
	}
	f.warningEventsOnly = opts.KcpWarningEventsOnly
	f.state = &state.Store{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Namespace: opts.Namespace, AgentName: opts.AgentName}
	mcMgr, err := mcmanager.WithMultiCluster(mgr, f)
	if err != nil {
		return err
	}
	f.mcMgr = mcMgr
	if err := mcMgr.Add(f); err != nil {
		return err
	}
	if opts.StateSweepInterval > 0 && !opts.ReleaseOnly {
		sw := &sweeper{fleet: f, client: mgr.GetClient(), reader: mgr.GetAPIReader(), clients: endpointClientsFor(opts.Target.Config),
			namespace: opts.Namespace, agentName: opts.AgentName, interval: opts.StateSweepInterval, unbound: opts.SweepUnbound, log: log}
		if opts.DeleteCreatedNamespaces {
			dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
			if err != nil {
				return fmt.Errorf("failed to create the service cluster's discovery client: %w", err)
			}
			cached := memory.NewMemCacheClient(dc)
			sw.discovery, sw.emptyNS = cached, &emptyns.Checker{Discovery: cached, Metadata: metadataClient}
		}
		if err := mgr.Add(sw); err != nil {
			return err
		}
	}

	if !opts.ReleaseOnly {
		if err := addNamespaceMetadata(mgr, opts.AgentName, opts.NamespaceMetadata, log); err != nil {
			return err
		}
		if err := mgr.Add(&claimsReport{fleet: f, clients: endpointClientsFor(opts.Target.Config), client: mgr.GetClient(),
			events: mgr.GetEventRecorderFor(ControllerName), log: log.WithName("claims")}); err != nil {
			return err
		}
	}

	// Local copies: only objects with sync labels are cached (copies of
	// older agents without the agent label included).
	synced, err := labels.NewRequirement(keys.RemoteObjectCluster, labelselection.Exists, nil)
	if err != nil {
		return err
	}

	// Compacted: managedFields are never read and are a third of a cached
	// object; repeated strings are shared.
	copiesCache, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultLabelSelector: labels.NewSelector().Add(*synced), DefaultTransform: compact.Transform})
	if err != nil {
		return fmt.Errorf("failed to create the local copies cache: %w", err)
	}
	if err := mgr.Add(copiesCache); err != nil {
		return err
	}
	var importCache cache.Cache
	if opts.EnableImports {
		asks, err := labels.NewRequirement(keys.ImportInto, labelselection.Exists, nil)
		if err != nil {
			return err
		}
		// A read of a type without an informer fails: only the sync
		// controllers' watches start (and count) the informers.
		importCache, err = cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			DefaultLabelSelector: labels.NewSelector().Add(*asks), DefaultTransform: compact.Transform, ReaderFailOnMissingInformer: true})
		if err != nil {
			return fmt.Errorf("failed to create the cache of import requests: %w", err)
		}
		if err := mgr.Add(importCache); err != nil {
			return err
		}
	}
	// Related objects of watched types only (their watches start the
	// informers); a read of another type fails instead of starting an
	// informer, and the sync controllers read those from the server.
	relatedCache, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: compact.Transform, ReaderFailOnMissingInformer: true})
	if err != nil {
		return fmt.Errorf("failed to create the related objects cache: %w", err)
	}
	if err := mgr.Add(relatedCache); err != nil {
		return err
	}
	relatedClient, err := ctrlruntimeclient.New(mgr.GetConfig(), ctrlruntimeclient.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("failed to create the related objects client: %w", err)
	}

	releases := newReleaseJobs(releaseWorkers, f.changed)
	if err := mgr.Add(releases); err != nil {
		return err
	}

	r := &reconciler{
		Options:       opts,
		releases:      releases,
		client:        mgr.GetClient(),
		kcpCache:      kcpCache,
		copiesCache:   copiesCache,
		importCache:   importCache,
		relatedCache:  relatedCache,
		relatedClient: relatedClient,
		fleet:         f,
		mcMgr:         mcMgr,
		status:        &conditions.Writer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), FieldOwner: ControllerName, Log: log},
		log:           log,
		notServed:     map[string]int{},
		informers:     &syncctrl.SharedInformers{},
		targets:       &syncer.Targets{},
		releasing:     map[string]int{},

		conflictReleased: map[types.UID]bool{},
		earlierDone:      map[string]earlierDone{},
		warned:           map[string]bool{},
		prEvents:         mgr.GetEventRecorderFor(ControllerName),
		review:           requestReviewer(metadataClient),
		failed:           map[string]endpointFailure{},
	}
	if f.claimConfig != nil {
		f.claimConfig.Key, f.claimConfig.Frozen = r.listedURL, r.releaseUnderWay
	}

	r.endpointClients = r.newEndpointClient
	selected := func(ctx context.Context) []reconcile.Request {
		prs, err := selection.List(ctx, r.client, opts.Selector)
		if err != nil {
			log.Error(err, "Failed to list PublishedResources")
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(prs))
		for _, pr := range prs {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: pr.Name}})
		}
		return reqs
	}
	allSelected := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ ctrlruntimeclient.Object) []reconcile.Request {
		return selected(ctx)
	})
	b := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		// Every PublishedResource event is reconciled (deselection must stop
		// controllers); unchanged keys make it a no-op.
		For(&syncagentv1alpha1.PublishedResource{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, statusSchemaChanged(), deletionStarted()))).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, selection.CRDEventHandler(r.client, opts.Selector, opts.Resolver.Invalidate, log)).
		// The other PublishedResources of a source kind learn whether they
		// are the oldest one now (see sourceOwner).
		Watches(&syncagentv1alpha1.PublishedResource{}, handler.EnqueueRequestsFromMapFunc(r.sameSource),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionStarted()))).
		WatchesRawSource(source.Kind(kcpCache, ctrlruntimeclient.Object(&kcpapisv1alpha1.APIExportEndpointSlice{}), allSelected)).
		// The fleet tells when a sync controller runs or stops on its own.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			f.setNotify(func(prName string) {
				if prName != "" {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: prName}})
					return
				}
				// Every selected one: the endpoints served changed. The
				// list reads the manager's cache, which has synced.
				ctx, cancel := context.WithTimeout(context.Background(), listSelectedTimeout)
				defer cancel()
				for _, req := range selected(ctx) {
					q.Add(req)
				}
			})
			return nil
		}))
	if opts.Target.APIExportMode {
		b = b.WatchesRawSource(source.Kind(kcpCache, ctrlruntimeclient.Object(&kcpapisv1alpha2.APIExport{}), allSelected))
	}
	return b.Complete(lifecycle.QuietOnStop[reconcile.Request](r))
}

// sourceOwner returns the name of the PublishedResource that syncs pr's
// source kind, and the other selected ones of that kind (those being
// deleted too: their controller may still run). Local copies record the
// kcp object's workspace, namespace and name but not its kind (contract
// §4.1), so two PublishedResources of one source kind would find, update
// and delete each other's copies of same-named objects (contract §7 #11).
// The owner is, among those not being deleted, an enabled one before a
// disabled one, then the oldest, then (created in the same second) one
// whose status says it owned the kind, then the first by name: an order that the
// stored objects decide, the same after a restart.
func (r *reconciler) sourceOwner(ctx context.Context, pr *syncagentv1alpha1.PublishedResource) (string, []string, error) {
	prs, err := selection.List(ctx, r.client, r.Selector)
	if err != nil {
		return "", nil, fmt.Errorf("failed to list PublishedResources: %w", err)
	}
	owner := pr
	var others []string
	for i := range prs {
		other := &prs[i]
		if other.Name == pr.Name || projection.SourceGK(other) != projection.SourceGK(pr) {
			continue
		}
		others = append(others, other.Name)
		if other.DeletionTimestamp == nil && r.precedes(other, owner) {
			owner = other
		}
	}
	if owner != pr {
		others = slices.DeleteFunc(others, func(n string) bool { return n == owner.Name })
		others = append(others, pr.Name)
	}
	slices.Sort(others)
	return owner.Name, others, nil
}

// precedes orders PublishedResources of one source kind (see sourceOwner).
func (r *reconciler) precedes(a, b *syncagentv1alpha1.PublishedResource) bool {
	if ea, eb := syncEnabled(a), syncEnabled(b); ea != eb {
		return ea
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if ra, rb := r.syncedBefore(a), r.syncedBefore(b); ra != rb {
		return ra
	}
	return a.Name < b.Name
}

// syncedBefore reports whether pr's status says it owned its source kind
// last time: a SyncReady condition other than SourceConflict (while its
// controller starts after a restart it says ControllerStarting, not
// Running).
func (r *reconciler) syncedBefore(pr *syncagentv1alpha1.PublishedResource) bool {
	c := r.syncReadyOf(pr)
	return c != nil && c.Reason != syncagentv1alpha1.ReasonSourceConflict
}

func syncEnabled(pr *syncagentv1alpha1.PublishedResource) bool {
	return pr.Spec.Synchronization == nil || pr.Spec.Synchronization.Enabled
}

// conflicted handles a PublishedResource whose source kind another one
// syncs: no controller (not even for deletions: a deletion here would find
// and delete the owner's copy of a same-named object), one Warning Event,
// and its objects in kcp are released once (as for a deleted
// PublishedResource; their copies stay): they may carry our finalizer from
// when it synced, in this agent or an earlier one, and consumers'
// deletions would otherwise hang.
func (r *reconciler) conflicted(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, owner string, urls []string) (metav1.Condition, reconcile.Result, error) {
	r.fleet.Stop(pr.Name)
	msg := fmt.Sprintf("Not synced: PublishedResource %s publishes the same source kind %s and takes precedence (enabled, then older), and local copies are found by workspace, namespace and name (older ones record no kcp kind), so the two would take each other's copies. Publish the kind once, or delete or deselect one of them.", owner, projection.SourceGK(pr))
	if c := r.syncReadyOf(pr); c == nil || c.Reason != syncagentv1alpha1.ReasonSourceConflict {
		r.prEvents.Event(pr, corev1.EventTypeWarning, syncagentv1alpha1.ReasonSourceConflict, msg)
	}
	r.servedMu.Lock()
	released := r.conflictReleased[pr.UID]
	r.servedMu.Unlock()
	if !released && len(urls) > 0 {
		// The owner's kcp resource must be known first, or a release could
		// take the finalizer off objects the owner syncs (both projected to
		// one resource): see inUseElsewhere.
		ownerPR := &syncagentv1alpha1.PublishedResource{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: owner}, ownerPR); err != nil || ownerPR.Status.ResourceSchemaName == "" {
			return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict, "%s", msg), reconcile.Result{RequeueAfter: r.notServedBackoff(pr.Name)}, ctrlruntimeclient.IgnoreNotFound(err)
		}
		job, done, err := r.releaseAllJob(ctx, pr, urls)
		if err != nil {
			return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict, "%s", msg), reconcile.Result{}, err
		}
		if !done {
			return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict, "%s Releasing its objects in kcp: %d released of the %d found so far.",
				msg, job.progress.released.Load(), job.progress.found.Load()), reconcile.Result{RequeueAfter: releaseProgressInterval}, nil
		}
		if err := job.err; err != nil {
			// Retried with backoff: a resource that no workspace binds
			// yet cannot be listed, which is no failure of the agent.
			r.log.Info("Cannot release the objects of a PublishedResource in SourceConflict yet; retrying", "publishedresource", pr.Name, "error", err.Error())
			return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict, "%s Releasing its objects in kcp failed and is retried: %v", msg, err),
				reconcile.Result{RequeueAfter: r.backoff(r.releasing, pr.Name)}, nil
		}
		r.servedMu.Lock()
		r.conflictReleased[pr.UID] = true
		r.servedMu.Unlock()
	}
	return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict, "%s", msg), reconcile.Result{}, nil
}

// sameSource maps a PublishedResource event to the other selected
// PublishedResources of its source kind.
func (r *reconciler) sameSource(ctx context.Context, obj ctrlruntimeclient.Object) []reconcile.Request {
	pr, ok := obj.(*syncagentv1alpha1.PublishedResource)
	if !ok {
		return nil
	}
	prs, err := selection.List(ctx, r.client, r.Selector)
	if err != nil {
		r.log.Error(err, "Failed to list PublishedResources")
		return nil
	}
	var reqs []reconcile.Request
	for _, other := range prs {
		if other.Name != pr.Name && projection.SourceGK(&other) == projection.SourceGK(pr) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: other.Name}})
		}
	}
	return reqs
}

// deletionStarted passes the update that marks a PublishedResource deleted.
func deletionStarted() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	}}
}

// statusSchemaChanged passes updates that change status.resourceSchemaName.
func statusSchemaChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*syncagentv1alpha1.PublishedResource)
		n, ok2 := e.ObjectNew.(*syncagentv1alpha1.PublishedResource)
		return ok1 && ok2 && o.Status.ResourceSchemaName != n.Status.ResourceSchemaName
	}}
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.fleet.waitStarted(ctx); err != nil {
		return reconcile.Result{}, err
	}
	listed, err := r.endpoints(ctx)
	if errors.Is(err, errPartitionChanged) {
		// Its shards may be another agent's now: serve none until a
		// restart takes the new partition's Lease and keys, and say so.
		return reconcile.Result{}, errors.Join(err, r.fleet.SetEndpoints(nil), r.partitionChanged(ctx, req.Name, err))
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.fleet.SetEndpoints(listed); err != nil {
		return reconcile.Result{}, err
	}

	pr := &syncagentv1alpha1.PublishedResource{}
	if err := r.client.Get(ctx, req.NamespacedName, pr); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: released before (see finalize), or deleted without our
			// finalizer (the agent may not patch PublishedResources): then
			// one pass releases what its controller synced.
			urls, pending := r.servedOf(listed)
			if pending {
				return reconcile.Result{RequeueAfter: endpointLeasePending}, nil
			}
			r.releaseStopped(ctx, req.Name, urls)
			metrics.ForgetPublishedResource(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if r.ReleaseOnly || !selection.Matches(r.Selector, pr) || pr.DeletionTimestamp != nil {
		// Deleted, or not ours any more (its label removed, the agent's
		// selector changed, its sync controller disabled): either way its
		// objects are released before our finalizer on it goes. Another
		// agent that selects it adds its own finalizers and removes none
		// of ours.
		urls, pending := r.servedOf(listed)
		if pending {
			return reconcile.Result{RequeueAfter: endpointLeasePending}, nil
		}
		return r.finalize(ctx, pr, urls)
	}
	if res, err := r.setReleaseFinalizer(ctx, pr, true); err != nil || !res.IsZero() {
		return res, err
	}
	// An agent of a partition syncs only the endpoints whose Leases it
	// holds.
	urls, _ := r.servedOf(listed)

	cond, result, err := r.reconcile(ctx, pr, urls)
	if lifecycle.Fenced(ctx, err) {
		// Not a fact about the PublishedResource: no condition says it.
		return result, err
	}
	if werr := r.status.Update(ctx, pr, func(st *syncagentv1alpha1.PublishedResourceStatus) {
		conditions.Apply(st, r.ownSyncReady(cond), pr.Generation)
	}); werr != nil {
		return reconcile.Result{}, errors.Join(err, werr)
	}
	return result, err
}

// releaseStopped stops a PublishedResource's controller and, if one ran,
// releases the objects of its kcp resource in one best-effort pass, on a
// release worker; the pass's end brings the next call, which logs its
// result.
func (r *reconciler) releaseStopped(ctx context.Context, prName string, urls []string) {
	// A release of earlier projections may run on: it releases what it
	// started with (its end finds the record gone with the
	// PublishedResource) and is forgotten once it ended.
	r.releases.forgetFinished(func(k jobKey) bool { return k.pr == prName && k.earlier() })
	r.servedMu.Lock()
	delete(r.earlierDone, prName)
	r.servedMu.Unlock()
	if job := r.releases.finishedJob(allOf(prName)); job != nil {
		r.logStoppedRelease(ctx, prName, int(job.progress.released.Load()), job.err)
		return
	}
	key, ok := r.fleet.Stop(prName)
	if !ok {
		return
	}
	gr := schema.GroupResource{Group: key.remoteGVK.Group, Resource: key.remoteResource}
	if _, err := r.releases.start(ctx, allOf(prName), func(ctx context.Context, p *releaseProgress) error {
		return r.throughEveryEndpoint(ctx, urls, func(urls []string) error {
			_, err := r.releaseResource(ctx, prName, gr, urls, p)
			return err
		})
	}); err != nil {
		r.logStoppedRelease(ctx, prName, 0, err)
	}
}

// logStoppedRelease logs the end of releaseStopped's pass.
func (r *reconciler) logStoppedRelease(ctx context.Context, prName string, n int, err error) {
	switch {
	case err == nil:
	case lifecycle.Fenced(ctx, err):
		r.log.Info("The release of a PublishedResource deleted without the agent's finalizer was cut off: this replica may no longer lead; its remaining objects keep the finalizer",
			"publishedresource", prName, "released", n)
	case lifecycle.Stopping(ctx, err):
		// One pass only (the PublishedResource is gone): say what is left.
		r.log.Info("The agent stopped during the release of a PublishedResource deleted without the agent's finalizer; its remaining objects keep the finalizer",
			"publishedresource", prName, "released", n)
	default:
		r.log.Error(err, "Failed to release the objects of a PublishedResource deleted without the agent's finalizer", "publishedresource", prName, "released", n)
	}
}

// finalize releases a deleted PublishedResource (contract §7 #14): its
// controller stops, and our finalizer is removed from its objects on every
// endpoint, or consumers' deletions would hang forever. The
// PublishedResource keeps its own finalizer until that is done, so the
// release happens whenever the PublishedResource was deleted (the agent
// down, its controller not running, a shard down), retried with backoff.
func (r *reconciler) finalize(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, urls []string) (reconcile.Result, error) {
	if !r.hasReleaseFinalizer(pr) {
		r.releaseStopped(ctx, pr.Name, urls)
		metrics.ForgetPublishedResource(pr.Name)
		return reconcile.Result{}, nil
	}
	if r.ReleaseOnly && pr.DeletionTimestamp == nil && r.releasedBefore(pr) {
		// Released by this process already, and the release finalizer is
		// back: an agent of the same name syncs it (two agents share the
		// name). Releasing again would fight it over every object.
		r.prEvents.Eventf(pr, corev1.EventTypeWarning, ReasonReleaseFailed,
			"This agent (%s) does not sync (its sync controller is disabled) and released the PublishedResource's objects, "+
				"but another agent of the same name syncs it again; give the two agents different names", r.AgentName)
		return reconcile.Result{}, nil
	}
	r.fleet.Stop(pr.Name)
	job, done, err := r.releaseAllJob(ctx, pr, urls)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !done {
		return r.releaseInFlight(ctx, pr, job)
	}
	if err := job.err; err != nil {
		if lifecycle.Quiet(ctx, err) {
			return reconcile.Result{}, err // the agent stops (or may have lost the lead); the next leader releases
		}
		if pr.DeletionTimestamp == nil {
			// Deselected: the conditions are no longer this agent's to
			// write (another agent may select it); say it on the object.
			r.log.Error(err, "Failed to release the objects of a PublishedResource this agent no longer selects", "publishedresource", pr.Name)
			// One message per agent, so that the Events of the retries
			// aggregate; the log has each error.
			r.prEvents.Eventf(pr, corev1.EventTypeWarning, ReasonReleaseFailed,
				"This agent (%s) no longer selects the PublishedResource; releasing its objects in kcp failed and is retried (the agent's log says why)", r.AgentName)
			return reconcile.Result{RequeueAfter: r.backoff(r.releasing, pr.Name)}, nil
		}
		r.log.Error(err, "Failed to release the objects of a deleted PublishedResource", "publishedresource", pr.Name)
		cond := syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonReleasing,
			"The PublishedResource is deleted; releasing its objects in kcp failed and is retried: %v", err)
		if werr := r.status.Update(ctx, pr, func(st *syncagentv1alpha1.PublishedResourceStatus) {
			conditions.Apply(st, r.ownSyncReady(cond), pr.Generation)
		}); werr != nil {
			return reconcile.Result{}, errors.Join(err, werr)
		}
		return reconcile.Result{RequeueAfter: r.backoff(r.releasing, pr.Name)}, nil
	}
	res, err := r.setReleaseFinalizer(ctx, pr, false)
	if err == nil && res.IsZero() {
		// Released: its series go (another agent that selects it reports
		// its own).
		metrics.ForgetPublishedResource(pr.Name)
	}
	if err == nil && res.IsZero() && r.ReleaseOnly {
		r.servedMu.Lock()
		if r.released == nil {
			r.released = map[types.UID]bool{}
		}
		r.released[pr.UID] = true
		r.servedMu.Unlock()
	}
	return res, err
}

// releaseAllJob starts releaseAll for pr on a release worker (releaseJobs:
// this worker only starts it and reports its progress), or finds the one
// that runs; once it finished, it takes it (done), and the job's err is the
// release's result.
func (r *reconciler) releaseAllJob(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, urls []string) (job *releaseJob, done bool, err error) {
	// It covers the earlier projections too.
	r.forgetEarlier(pr.Name)
	snapshot := pr.DeepCopy()
	job, err = r.releases.start(ctx, allOf(pr.Name), func(ctx context.Context, p *releaseProgress) error {
		return r.releaseAll(ctx, snapshot, urls, p)
	})
	if err != nil || !job.finished() {
		return job, false, err
	}
	r.releases.finishedJob(allOf(pr.Name))
	return job, true, nil
}

// releasedBefore reports whether this process released pr before (in
// release-only mode).
func (r *reconciler) releasedBefore(pr *syncagentv1alpha1.PublishedResource) bool {
	r.servedMu.Lock()
	defer r.servedMu.Unlock()
	return r.released[pr.UID]
}

// releaseInFlight reports a release that runs: in the log, and, for a
// deleted PublishedResource, in SyncReady (Releasing, with the objects
// released so far); it looks again after releaseProgressInterval (the
// release's end reconciles it at once).
func (r *reconciler) releaseInFlight(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, job *releaseJob) (reconcile.Result, error) {
	found, released := job.progress.found.Load(), job.progress.released.Load()
	r.log.V(1).Info("Releasing the objects of a PublishedResource", "publishedresource", pr.Name, "found", found, "released", released)
	if pr.DeletionTimestamp == nil {
		// Deselected: its conditions are no longer this agent's to write.
		return reconcile.Result{RequeueAfter: releaseProgressInterval}, nil
	}
	cond := syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonReleasing,
		"The PublishedResource is deleted; releasing its objects in kcp: %d released of the %d found so far.", released, found)
	if err := r.status.Update(ctx, pr, func(st *syncagentv1alpha1.PublishedResourceStatus) {
		conditions.Apply(st, r.ownSyncReady(cond), pr.Generation)
	}); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: releaseProgressInterval}, nil
}

// releaseAll releases the objects of every kcp resource pr synced (see
// release), counting into progress, and resets the release backoff once
// that worked.
func (r *reconciler) releaseAll(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, urls []string, progress *releaseProgress) error {
	grs := r.syncedResources(pr)
	if gr, ok := projection.SchemaGroupResource(pr.Status.ResourceSchemaName); ok && !slices.Contains(grs, gr) {
		grs = append(grs, gr)
	}
	if err := r.throughEveryEndpoint(ctx, urls, func(urls []string) error {
		for _, gr := range grs {
			n, err := r.releaseResource(ctx, pr.Name, gr, urls, progress)
			if err != nil {
				return fmt.Errorf("released %d object(s) of %s, then: %w", n, gr, err)
			}
			r.log.Info("Released the objects of a PublishedResource that no longer syncs", "publishedresource", pr.Name, "resource", gr.String(), "released", n)
		}
		if err := r.releaseUnrecordedSources(ctx, pr, urls, progress); err != nil {
			return fmt.Errorf("releasing related sources no record names: %w", err)
		}
		return nil
	}); err != nil {
		return err
	}
	r.servedMu.Lock()
	delete(r.releasing, pr.Name)
	r.servedMu.Unlock()
	return nil
}

// setReleaseFinalizer adds or removes our finalizer on the
// PublishedResource, writing only if that changes it. A conflict (another
// controller wrote meanwhile) is tried again shortly, quietly. If the agent
// may not patch PublishedResources (RBAC of the reference's chart), it
// says so once per PublishedResource and syncs on without the durable
// release.
func (r *reconciler) setReleaseFinalizer(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, want bool) (reconcile.Result, error) {
	if r.hasReleaseFinalizer(pr) == want {
		return reconcile.Result{}, nil
	}
	patch := ctrlruntimeclient.MergeFromWithOptions(pr.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
	if want {
		controllerutil.AddFinalizer(pr, r.releaseFinalizer())
	} else {
		controllerutil.RemoveFinalizer(pr, r.releaseFinalizer())
	}
	err := r.client.Patch(ctx, pr, patch)
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	case apierrors.IsForbidden(err) && want:
		if r.warnOnce(pr.Name) {
			r.log.Error(err, "The agent may not patch PublishedResources: deleting one releases its objects only while the agent runs", "publishedresource", pr.Name)
			r.prEvents.Event(pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError,
				"The agent may not patch PublishedResources (grant patch on publishedresources): deleting this one releases its objects in kcp only while the agent runs.")
		}
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, fmt.Errorf("failed to update the finalizers of PublishedResource %s: %w", pr.Name, err)
}

// warnOnce reports whether the PublishedResource's missing patch
// permission was not reported yet.
func (r *reconciler) warnOnce(prName string) bool {
	r.servedMu.Lock()
	defer r.servedMu.Unlock()
	if r.warned[prName] {
		return false
	}
	r.warned[prName] = true
	return true
}

func syncReady(status metav1.ConditionStatus, reason, format string, args ...any) metav1.Condition {
	return conditions.New(syncagentv1alpha1.ConditionSyncReady, status, reason, fmt.Sprintf(format, args...))
}

func (r *reconciler) reconcile(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, urls []string) (metav1.Condition, reconcile.Result, error) {
	owner, others, err := r.sourceOwner(ctx, pr)
	if err != nil {
		// Cannot tell now: the condition stays as it is.
		if c := r.syncReadyOf(pr); c != nil {
			return *c, reconcile.Result{}, err
		}
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonControllerStartFailed, "%v", err), reconcile.Result{}, err
	}
	if owner != pr.Name {
		return r.conflicted(ctx, pr, owner, urls)
	}
	r.servedMu.Lock()
	delete(r.conflictReleased, pr.UID)
	r.servedMu.Unlock()
	// It syncs: a release still running from when it did not (deselected,
	// in SourceConflict) would take its objects' finalizers away.
	r.releases.cancel(allOf(pr.Name))
	// Never two controllers of one source kind, not even for a moment: the
	// former owner's reconcile may come after this one.
	for _, other := range others {
		r.fleet.Stop(other)
	}
	disabled := pr.Spec.Synchronization != nil && !pr.Spec.Synchronization.Enabled
	if disabled && pr.Status.ResourceSchemaName == "" {
		r.fleet.Stop(pr.Name)
		return syncDisabled(), reconcile.Result{}, nil
	}
	if pr.Status.ResourceSchemaName == "" {
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonWaitingForSchema, "The APIResourceSchema does not exist yet."), reconcile.Result{}, nil
	}
	src, err := r.Resolver.Resolve(ctx, projection.SourceGK(pr))
	var projected *apiextensionsv1.CustomResourceDefinition
	if err == nil {
		projected, err = projection.Project(src, pr)
	}
	if err != nil {
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonWaitingForSchema, "The source type cannot be resolved: %v", err), reconcile.Result{}, err
	}
	if disabled && len(urls) == 0 {
		r.fleet.Stop(pr.Name)
		return syncDisabled(), reconcile.Result{}, nil
	}
	if len(urls) == 0 {
		// The endpoint slice is watched: new endpoints trigger a reconcile,
		// and so does a change of the endpoints served.
		if r.fleet != nil && r.fleet.claims != nil && len(r.fleet.claims.States()) > 0 {
			return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonNoEndpoints, "This agent serves none of the endpoints its APIExportEndpointSlice lists: another partition's agent holds their Leases, or they are being handed over."), reconcile.Result{}, nil
		}
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonNoEndpoints, "The APIExportEndpointSlice lists no endpoints yet (no workspace binds the export)."), reconcile.Result{}, nil
	}

	// An unreachable endpoint (a shard that is down) stops neither a running
	// controller nor the start of one: the workspaces of the other endpoints
	// sync, and the unreachable one's connection retries on its own.
	remoteGVK := projection.GVK(projected)
	check := checkEndpoints(urls, func(u string) (bool, error) {
		return r.isServed(u, remoteGVK.GroupVersion(), projected.Spec.Names.Plural)
	})
	switch {
	case len(check.notServing) > 0:
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonResourceNotServed, "Endpoint %s does not serve %s yet.", check.notServing[0], remoteGVK),
			reconcile.Result{RequeueAfter: r.notServedBackoff(pr.Name)}, nil
	case len(check.serving) == 0:
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonEndpointUnreachable, "No endpoint can be reached: %s", check.unreachableList()),
			reconcile.Result{RequeueAfter: min(r.notServedBackoff(pr.Name), endpointRecheckInterval)}, nil
	}
	relatedTypes, err := r.relatedTypes(pr, check.serving)
	if err != nil {
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonResourceNotServed, "%v", err), reconcile.Result{RequeueAfter: r.notServedBackoff(pr.Name)}, nil
	}
	r.servedMu.Lock()
	delete(r.notServed, pr.Name)
	r.servedMu.Unlock()

	localGVK := projection.GVK(src)
	key := controllerKey{
		deletionOnly: disabled, remoteGVK: remoteGVK, remoteResource: projected.Spec.Names.Plural,
		uid: pr.UID, generation: pr.Generation, schemaName: pr.Status.ResourceSchemaName,
		localGVK: localGVK, localNamespaced: src.Spec.Scope == apiextensionsv1.NamespaceScoped,
		statusSubresource: projection.HasStatusSubresource(src, localGVK.Version),
		relatedTypes:      fmt.Sprint(relatedTypes),
	}
	// Recorded before the controller can give any object our finalizer.
	current := schema.GroupResource{Group: remoteGVK.Group, Resource: projected.Spec.Names.Plural}
	if recorded := r.syncedResources(pr); !slices.Contains(recorded, current) {
		// Locked: pr may come from a cache that has not seen the last
		// change of the record (this worker's, or a release's).
		err := r.setSyncedResources(ctx, pr, append(recorded, current), true)
		if apierrors.IsConflict(err) {
			return r.keptSyncReady(pr), reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		if err != nil {
			return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonControllerStartFailed, "%v", err), reconcile.Result{}, err
		}
	}
	// No release of the projections before another one may run on while
	// the controller of this one starts.
	if err := r.stopOtherEarlier(ctx, pr.Name, current); err != nil {
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonControllerStarting, "Waiting for the release of an earlier projection's objects to stop: %v", err),
			reconcile.Result{RequeueAfter: releaseProgressInterval}, nil
	}
	prCopy := pr.DeepCopy()
	localGVR := localGVK.GroupVersion().WithResource(src.Spec.Names.Plural)
	st := r.fleet.Ensure(pr.Name, key, func() (syncController, error) {
		r.log.Info("Starting sync controller", "publishedresource", pr.Name, "local", localGVK, "kcp", remoteGVK)
		local := r.mcMgr.GetLocalManager()
		return syncctrl.New(syncctrl.Options{
			PublishedResource: prCopy,
			NamespaceMetadata: r.NamespaceMetadata,
			DeletionOnly:      key.deletionOnly,
			AgentName:         r.AgentName,
			Namespace:         r.Namespace,
			LocalGVK:          localGVK,
			RemoteGVK:         remoteGVK,
			RemoteResource:    projected.Spec.Names.Plural,
			LocalNamespaced:   key.localNamespaced,
			RemoteNamespaced:  projected.Spec.Scope == apiextensionsv1.NamespaceScoped,
			StatusSubresource: key.statusSubresource,
			Service:           local.GetClient(),
			LocalCache:        r.copiesCache,
			ImportCache:       r.importCache,
			ServiceReader:     local.GetAPIReader(),
			Workers:           r.SyncWorkers,
			RelatedTypes:      relatedTypes,
			RelatedService:    r.relatedClient,
			RelatedCache:      r.relatedCache,
			Log:               local.GetLogger(),
			Events:            local.GetEventRecorderFor(syncctrl.ControllerName),
			KcpEvents: func(workspace string) record.EventRecorder {
				return r.fleet.kcpEvents(workspace, syncctrl.ControllerName)
			},
			Informers: r.informers,
			Patrol:    syncctrl.Patrol{Interval: r.PatrolInterval, Report: r.PatrolReport},
			Targets:   r.targets,
			// Without these permissions the controller's caches of local
			// copies and watched related objects would wait for a sync
			// that never comes.
			Preflight: func(ctx context.Context, watchedRelated []schema.GroupVersionResource) error {
				err := checkAccess(ctx, r.review, serviceGVRs(localGVR, watchedRelated), cacheVerbs)
				if access := (*accessError)(nil); err != nil && !errors.As(err, &access) {
					// Another failure (a conversion webhook down, say): the
					// controller starts anyway; its cache waits are bounded.
					r.log.Info("Cannot check the agent's access to the service-side types; starting the sync controller anyway", "publishedresource", pr.Name, "error", err.Error())
					return nil
				}
				return err
			},
		})
	})
	cond, result := r.syncCondition(pr, st, check, urls, remoteGVK, disabled)
	// The old controller is stopped now: objects of an earlier projection
	// keep our finalizer until released.
	r.earlierRelease(ctx, pr, current, func(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, current schema.GroupResource, p *releaseProgress) error {
		return r.releaseEarlier(ctx, pr, current, urls, p)
	}, &cond, &result)
	return cond, result, nil
}

// keptSyncReady is pr's SyncReady condition as it is (a reconcile that
// decided nothing), or ControllerStarting if it has none.
func (r *reconciler) keptSyncReady(pr *syncagentv1alpha1.PublishedResource) metav1.Condition {
	if c := r.syncReadyOf(pr); c != nil {
		return *c
	}
	return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonControllerStarting, "The sync controller is starting.")
}

// syncCondition is SyncReady for a controller in status st.
func (r *reconciler) syncCondition(pr *syncagentv1alpha1.PublishedResource, st Status, check endpointCheck, urls []string, remoteGVK schema.GroupVersionKind, disabled bool) (metav1.Condition, reconcile.Result) {
	switch st.Phase {
	case PhaseFailed:
		cond := syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonControllerStartFailed, "The sync controller could not be started: %v", st.Err)
		if errors.Is(st.Err, syncctrl.ErrInvalidConfig) {
			// Terminal until the PublishedResource changes (ConfigValid says why).
			return cond, reconcile.Result{}
		}
		// A grant (or a recovering API server) sends no event: try again
		// after the backoff.
		return cond, reconcile.Result{RequeueAfter: st.RetryIn}
	case PhaseStarting:
		// The fleet asks for a reconcile when the controller runs or fails.
		if c := r.syncReadyOf(pr); c != nil &&
			c.Reason == syncagentv1alpha1.ReasonRunning && c.ObservedGeneration == pr.Generation {
			// The agent restarted (or this generation's controller is
			// started again): a start that takes the usual moment does
			// not flap the condition (a restart with everything in sync
			// writes nothing); a start that fails reports it.
			return *c, reconcile.Result{RequeueAfter: endpointRecheckInterval}
		}
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonControllerStarting, "The sync controller for %s is starting: it waits until it has listed the local objects.", remoteGVK),
			reconcile.Result{RequeueAfter: endpointRecheckInterval}
	}
	recheck := reconcile.Result{RequeueAfter: endpointRecheckInterval}
	switch {
	case len(check.unreachable) > 0:
		return syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonEndpointUnreachable, "Synchronizing %s through %d of %d endpoints; cannot reach %s",
			remoteGVK, len(check.serving), len(urls), check.unreachableList()), recheck
	case disabled:
		return syncDisabled(), recheck
	}
	return syncReady(metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning, "Synchronizing %s on %d endpoint(s).", remoteGVK, len(urls)), recheck
}

// serviceGVRs are the service-side types a sync controller lists and
// watches cluster-wide: the local type and the watched related types, once
// each.
func serviceGVRs(local schema.GroupVersionResource, watchedRelated []schema.GroupVersionResource) []schema.GroupVersionResource {
	out := []schema.GroupVersionResource{local}
	for _, gvr := range watchedRelated {
		if !slices.Contains(out, gvr) {
			out = append(out, gvr)
		}
	}
	return out
}

func syncDisabled() metav1.Condition {
	return syncReady(metav1.ConditionTrue, syncagentv1alpha1.ReasonSyncDisabled,
		"Synchronization is disabled: the schema is only published; deletions of objects synced earlier are still processed.")
}

// The endpoints' Leases of an agent of a partition: the same timing as the
// leader Lease (a holder writes within endpointRenewDeadline of its last
// renewal, the home partition takes a Lease left unrenewed for
// endpointLeaseDuration); another partition that lists the endpoint takes
// it only after endpointTakeoverAfter (the home partition's agent is down
// for longer than a restart).
const (
	endpointLeaseDuration = 15 * time.Second
	endpointRenewDeadline = 10 * time.Second
	endpointRetryPeriod   = 2 * time.Second
	endpointTakeoverAfter = time.Minute
	// listSelectedTimeout bounds the cache list of the selected
	// PublishedResources when the endpoints served change.
	listSelectedTimeout = 10 * time.Second
)

// errPartitionChanged: the endpoint slice names another Partition than the
// one the agent read at start (see endpoints).
var errPartitionChanged = errors.New("the endpoint slice's partition changed")

// endpoints returns the sorted virtual workspace URLs of the endpoint slice,
// or in --apiexport-ref mode without a slice those of the export's status
// (kcp fills it only with a deprecated feature gate), rewritten by
// --endpoint-url-rewrite.
func (r *reconciler) endpoints(ctx context.Context) ([]string, error) {
	var urls []string
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{}
	err := r.kcpCache.Get(ctx, types.NamespacedName{Name: r.Target.EndpointSliceName}, slice)
	switch {
	case err == nil && !r.Target.APIExportMode && slice.Spec.Partition != r.Partition:
		return nil, fmt.Errorf("%w: APIExportEndpointSlice %s names Partition %q, this agent serves %q (read at start); restart it", errPartitionChanged, slice.Name, slice.Spec.Partition, r.Partition)
	case err == nil && r.Target.APIExportMode && slice.Spec.Partition != "":
		// Its keys would be those of an agent without a partition.
		return nil, fmt.Errorf("%w: APIExportEndpointSlice %s names Partition %q; an agent of a partition takes its slice with --apiexportendpointslice-ref", errPartitionChanged, slice.Name, slice.Spec.Partition)
	case err == nil:
		for _, e := range slice.Status.APIExportEndpoints {
			u := r.Target.EndpointRewrites.Apply(e.URL)
			urls = append(urls, u)
			if u != e.URL {
				r.servedMu.Lock()
				if r.listedAs == nil {
					r.listedAs = map[string]string{}
				}
				r.listedAs[u] = e.URL
				r.servedMu.Unlock()
			}
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get APIExportEndpointSlice %s: %w", r.Target.EndpointSliceName, err)
	case r.Target.APIExportMode:
		export := &kcpapisv1alpha2.APIExport{}
		if err := r.kcpCache.Get(ctx, types.NamespacedName{Name: r.Target.APIExportName}, export); err != nil {
			return nil, ctrlruntimeclient.IgnoreNotFound(err)
		}
		//nolint:staticcheck // the deprecated field is the documented fallback of --apiexport-ref.
		for _, vw := range export.Status.VirtualWorkspaces {
			urls = append(urls, r.Target.EndpointRewrites.Apply(vw.URL))
		}
	}
	slices.Sort(urls)
	return urls, nil
}

// isServed asks an endpoint's wildcard discovery whether it serves the
// resource; an error means the endpoint cannot be reached.
func (r *reconciler) isServed(url string, gv schema.GroupVersion, plural string) (bool, error) {
	r.servedMu.Lock()
	failure, known := r.failed[url]
	r.servedMu.Unlock()
	if known && time.Now().Before(failure.until) {
		return false, failure.err
	}
	dc, err := r.endpointDiscovery(url)
	if err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(gv.String())
	r.servedMu.Lock()
	if err != nil && !apierrors.IsNotFound(err) {
		r.failed[url] = endpointFailure{err: err, until: time.Now().Add(endpointFailureMemory)}
	} else {
		delete(r.failed, url)
	}
	r.servedMu.Unlock()
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, res := range list.APIResources {
		if res.Name == plural {
			return true, nil
		}
	}
	return false, nil
}

// endpointDiscovery returns a client for an endpoint's wildcard discovery.
func (r *reconciler) endpointDiscovery(url string) (*discovery.DiscoveryClient, error) {
	cfg := rest.CopyConfig(r.Target.Config)
	cfg.Host = url + "/clusters/*"
	cfg.Timeout = endpointCheckTimeout
	return discovery.NewDiscoveryClientForConfig(cfg)
}

// endpointCheck sorts the endpoints by what they say about a type.
type endpointCheck struct {
	serving     []string // reachable and serving the type
	notServing  []string // reachable, not serving it (yet)
	unreachable map[string]error
}

// checkEndpoints asks served about every endpoint, in order.
func checkEndpoints(urls []string, served func(url string) (bool, error)) endpointCheck {
	c := endpointCheck{unreachable: map[string]error{}}
	for _, u := range urls {
		ok, err := served(u)
		switch {
		case err != nil:
			c.unreachable[u] = err
		case ok:
			c.serving = append(c.serving, u)
		default:
			c.notServing = append(c.notServing, u)
		}
	}
	return c
}

// unreachableList names the unreachable endpoints and why, sorted.
func (c endpointCheck) unreachableList() string {
	parts := make([]string, 0, len(c.unreachable))
	for _, u := range slices.Sorted(maps.Keys(c.unreachable)) {
		parts = append(parts, fmt.Sprintf("%s (%v)", u, c.unreachable[u]))
	}
	return strings.Join(parts, ", ")
}
