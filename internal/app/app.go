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

// Package app wires the agent together: configs, the kcp start-up
// resolution, the manager with leader election and metrics, the health
// endpoints and the controllers enabled on the command line.
package app

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kcp-syncagent/api-syncagent/internal/cacheindex"
	"github.com/kcp-syncagent/api-syncagent/internal/compact"
	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/controller/apiexport"
	"github.com/kcp-syncagent/api-syncagent/internal/controller/apiresourceschema"
	"github.com/kcp-syncagent/api-syncagent/internal/controller/syncmanager"
	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/eventsapi"
	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/health"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/memlimit"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/options"
	"github.com/kcp-syncagent/api-syncagent/internal/publisher"
	"github.com/kcp-syncagent/api-syncagent/internal/selection"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/version"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

const (
	// kcpPingTTL is how long a kcp reachability result is reused by /readyz.
	kcpPingTTL = 10 * time.Second
	// cacheSyncProbeTimeout bounds the cache-sync part of one /readyz call.
	cacheSyncProbeTimeout = time.Second
	// pingQPS and pingBurst are the readiness ping's own rate limit (one
	// request per kcpPingTTL is what it needs).
	pingQPS   = 1
	pingBurst = 2
)

// Deps is what every controller's setup function receives.
type Deps struct {
	Options *options.Options
	Target  *kcp.Target
	// KcpClient is an uncached client for the agent's kcp workspace.
	KcpClient ctrlruntimeclient.Client
	// ExportClient is an uncached client for the APIExport's workspace.
	ExportClient ctrlruntimeclient.Client
	// Resolver finds source types on the service cluster (one shared
	// discovery cache for all controllers).
	Resolver *discovery.Resolver
	// Identity names this replica; Leases reads and writes Leases in the
	// agent's namespace (the endpoints' Leases of an agent of a partition).
	Identity string
	Leases   coordinationv1client.LeasesGetter
	// gate is shared by the apiexport and apiresourceschema controllers;
	// see publisherGate.
	gate *publisher.Gate
}

// publisherGate is the decision whether this agent of a partition
// publishes, which the apiexport controller makes and the
// apiresourceschema controller follows; nil without a partition (one
// Lease, one leader: the schemas are created as always) and with the
// apiexport controller disabled (partitionChecks refuses that with the
// apiresourceschema controller on).
func (d *Deps) publisherGate() *publisher.Gate {
	if d.gate == nil && d.Target.Partition != "" && d.Options.IsControllerEnabled(options.ControllerAPIExport) {
		d.gate = publisher.NewGate()
	}
	return d.gate
}

// Controller is a named controller that --disabled-controllers can switch off.
type Controller struct {
	Name  string
	Setup func(mgr manager.Manager, deps *Deps) error
	// Disabled, if set, is set up instead of Setup when the controller is
	// disabled.
	Disabled func(mgr manager.Manager, deps *Deps) error
}

// controllers lists the controllers in start order. The names are the
// values of --disabled-controllers (options.KnownControllers).
var controllers = []Controller{
	{Name: options.ControllerAPIResourceSchema, Setup: setupAPIResourceSchema},
	{Name: options.ControllerAPIExport, Setup: setupAPIExport},
	{Name: options.ControllerSync, Setup: setupSync, Disabled: setupRelease},
}

func setupSync(mgr manager.Manager, deps *Deps) error {
	return syncmanager.Add(mgr, syncOptions(deps))
}

// setupRelease runs the syncmanager without sync: what an agent of this
// name synced before is released, so that no finalizer of it is left
// without a controller to remove it.
func setupRelease(mgr manager.Manager, deps *Deps) error {
	opts := syncOptions(deps)
	opts.ReleaseOnly = true
	return syncmanager.Add(mgr, opts)
}

func syncOptions(deps *Deps) syncmanager.Options {
	return syncmanager.Options{
		AgentName: deps.Options.AgentName,
		Namespace: deps.Options.Namespace,
		Selector:  deps.Options.PublishedResourceSelector,
		Target:    deps.Target,
		Partition: deps.Target.Partition,
		Resolver:  deps.Resolver,
		Leases:    deps.Leases,
		Identity:  deps.Identity,

		LeaderElection: deps.Options.EnableLeaderElection,

		StateSweepInterval:      deps.Options.StateSweepInterval,
		SweepUnbound:            deps.Options.SweepUnboundWorkspaces,
		DeleteCreatedNamespaces: deps.Options.DeleteCreatedNamespaces,
		EnableImports:           deps.Options.EnableImports,
		NamespaceMetadata:       deps.Options.NamespaceMetadata,
		PatrolInterval:          deps.Options.PatrolInterval,
		PatrolReport:            deps.Options.PatrolMode == options.PatrolModeReport,

		UnusedKcpInformerTimeout: deps.Options.UnusedKcpInformerTimeout,
		SyncWorkers:              deps.Options.SyncWorkers,
		KcpWarningEventsOnly:     deps.Options.EventLevel == options.EventLevelWarning,
	}
}

func setupAPIExport(mgr manager.Manager, deps *Deps) error {
	return apiexport.Add(mgr, apiexport.Options{
		AgentName:    deps.Options.AgentName,
		Selector:     deps.Options.PublishedResourceSelector,
		ExportName:   deps.Target.APIExportName,
		ExportConfig: deps.Target.APIExportConfig,
		Partition:    deps.Target.Partition,
		Gate:         deps.publisherGate(),
	})
}

func setupAPIResourceSchema(mgr manager.Manager, deps *Deps) error {
	return apiresourceschema.Add(mgr, apiresourceschema.Options{
		AgentName: deps.Options.AgentName,
		Selector:  deps.Options.PublishedResourceSelector,
		KcpClient: deps.ExportClient,
		Resolver:  deps.Resolver,
		Gate:      deps.publisherGate(),
	})
}

// NewServiceScheme returns the scheme of the service cluster manager.
func NewServiceScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(syncagentv1alpha1.AddToScheme(s))
	return s
}

// leaderLockInterface avoids a typed-nil interface when leader election is off.
func leaderLockInterface(l *leaderLock) resourcelock.Interface {
	if l == nil {
		return nil
	}
	return l
}

// Run starts the agent and blocks until ctx is cancelled or a component fails.
func Run(ctx context.Context, log logr.Logger, o *options.Options) error {
	log.Info("Starting api-syncagent", "version", version.Version, "agent", o.AgentName)
	pinListAndWatch(log)
	if soft, err := memlimit.Set("/sys/fs/cgroup", "/proc/self/cgroup"); err != nil {
		log.Error(err, "Cannot read the container's memory limit; the Go runtime keeps its own")
	} else if soft > 0 {
		log.Info("Go runtime memory limit set below the container's", "bytes", soft, "share", memlimit.Share)
	}

	kcpCfg, err := kcpConfig(o)
	if err != nil {
		return err
	}
	// A rotated token in the kcp kubeconfig is used without a restart.
	token := useLiveToken(kcpCfg)
	svcCfg, err := serviceConfig(o)
	if err != nil {
		return err
	}

	identity, err := replicaIdentity()
	if err != nil {
		return err
	}
	userAgent := fmt.Sprintf("api-syncagent/%s (%s/%s) %s", version.Version, goruntime.GOOS, goruntime.GOARCH, identity)
	kcpCfg.UserAgent, svcCfg.UserAgent = userAgent, userAgent
	// With leader election, every write to kcp and the service cluster
	// (Events aside) passes the fence: a leader that may have lost the
	// Lease (paused beyond it) writes nothing until it renews or exits.
	// The controllers' passes find the fence in their context: a pass that
	// fails while it is closed reports nothing (see lifecycle.Fenced).
	// The Lease is written through a client that is not fenced.
	leaseCfg := rest.CopyConfig(svcCfg)
	// Without leader election the transport still checks the endpoint
	// fences the passes' requests carry (an agent of a partition serves
	// only the endpoints whose Leases it holds).
	var f *fence.Fence
	if o.EnableLeaderElection {
		f = fence.New(renewDeadline, log.WithName("fence"))
	}
	ctx = fenceWrites(ctx, f, kcpCfg, svcCfg)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The health endpoints come up first, so liveness holds while the agent
	// waits for kcp, and readiness says what it waits for.
	hs := health.NewServer()
	resolved := health.NewFlag("the kcp workspace and APIExport are not resolved yet")
	hs.AddReadyCheck("kcp-workspace", resolved.Check)
	var healthErrs <-chan error
	if o.HealthEnabled() {
		if healthErrs, err = hs.Serve(ctx, o.HealthAddress); err != nil {
			return err
		}
		log.Info("Serving health endpoints", "address", o.HealthAddress)
	}

	ref := kcp.Ref{APIExportEndpointSlice: o.APIExportEndpointSliceRef, APIExport: o.APIExportRef}
	target, err := kcp.Resolve(ctx, log, kcpCfg, ref)
	if target != nil {
		target.EndpointRewrites = o.EndpointRewrites
	}
	if err != nil {
		return err
	}
	log.Info("Resolved kcp workspace",
		"cluster", target.Workspace.Name, "path", target.Workspace.Path,
		"apiexport", target.APIExportName, "apiexportCluster", target.APIExportWorkspace.Name,
		"endpointslice", target.EndpointSliceName, "partition", target.Partition)
	if err := partitionChecks(o, target.Partition, log); err != nil {
		return err
	}

	// The replicas of one partition (or of an agent without one) elect
	// their leader; the partitions' agents each have their own.
	leaseName := keys.LeaderLease(o.AgentName, target.Partition)
	var lock *leaderLock
	if f != nil {
		if lock, err = newLeaderLock(leaseCfg, o.Namespace, leaseName, identity, f); err != nil {
			return err
		}
	}

	kcpClient, err := ctrlruntimeclient.New(target.Config, ctrlruntimeclient.Options{Scheme: kcp.NewScheme()})
	if err != nil {
		return fmt.Errorf("failed to create kcp client: %w", err)
	}
	exportClient, err := ctrlruntimeclient.New(target.APIExportConfig, ctrlruntimeclient.Options{Scheme: kcp.NewScheme()})
	if err != nil {
		return fmt.Errorf("failed to create kcp client: %w", err)
	}

	metricsAddr := o.MetricsAddress
	if !o.MetricsEnabled() {
		metricsAddr = "0"
	}
	// Events in the service cluster go through the events.k8s.io/v1 API.
	svcClientset, err := kubernetes.NewForConfig(svcCfg)
	if err != nil {
		return fmt.Errorf("failed to create the service cluster's Events client: %w", err)
	}
	eventBroadcaster := eventsapi.NewBroadcaster(&eventsapi.Sink{Client: svcClientset.EventsV1(), Core: svcClientset.CoreV1(),
		Controller: "api-syncagent", Instance: eventsapi.ReportingInstance()})
	defer eventBroadcaster.Shutdown()
	mgr, err := manager.New(svcCfg, manager.Options{
		Scheme:           NewServiceScheme(),
		EventBroadcaster: eventBroadcaster, //nolint:staticcheck // its lifetime is the process's: shut down above

		Logger:                              log,
		LeaderElection:                      o.EnableLeaderElection,
		LeaderElectionID:                    leaseName,
		LeaderElectionNamespace:             o.Namespace,
		LeaderElectionReleaseOnCancel:       true,
		LeaderElectionResourceLockInterface: leaderLockInterface(lock),
		LeaseDuration:                       ptr.To(leaseDuration),
		RenewDeadline:                       ptr.To(renewDeadline),
		RetryPeriod:                         ptr.To(retryPeriod),
		Metrics:                             metricsserver.Options{BindAddress: metricsAddr},
		Cache: cache.Options{DefaultTransform: compact.Transform, ByObject: map[ctrlruntimeclient.Object]cache.ByObject{
			// The agent reads Secrets (its sync state) only in its own
			// namespace, and its RBAC allows no more.
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}},
		}},
		HealthProbeBindAddress: "0", // served by our own health server
		PprofBindAddress:       o.PprofAddress,
	})
	if err != nil {
		return fmt.Errorf("failed to create manager: %w", err)
	}

	// The readiness ping has a budget of its own: it must not wait behind
	// the sync's requests (and fail its deadline) when those use up the
	// shared one.
	pingCfg := rest.CopyConfig(target.Config)
	limit(pingCfg, pingQPS, pingBurst)
	pingClient, err := ctrlruntimeclient.New(pingCfg, ctrlruntimeclient.Options{Scheme: kcp.NewScheme()})
	if err != nil {
		return fmt.Errorf("failed to create kcp client: %w", err)
	}
	hs.AddReadyCheck("kcp", health.Cached(kcpPingTTL, func(ctx context.Context) error { return kcp.Ping(ctx, pingClient) }))
	hs.AddReadyCheck("service-cache", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, cacheSyncProbeTimeout)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("service cluster caches are not synced")
		}
		return nil
	})
	resolved.Set()

	// State Secrets are found by the kcp object they belong to (one index
	// key per Secret: lookups never name a namespace, the cache holds only
	// the agent's).
	if err := cacheindex.Add(ctx, mgr.GetCache(), &corev1.Secret{}, objmeta.RemoteIndex, objmeta.RemoteIndexValues); err != nil {
		return fmt.Errorf("failed to index state Secrets: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Secret{}, state.RelatedObjectIndex, state.RelatedObjectIndexValues); err != nil {
		return fmt.Errorf("failed to index related state Secrets: %w", err)
	}
	resolver, err := discovery.NewResolver(mgr.GetConfig(), mgr.GetClient())
	if err != nil {
		return err
	}
	// The endpoints' Leases (an agent of a partition) have a rate limit of
	// their own, as the leader Lease does; their writes pass the leader
	// fence (the config is svcCfg's).
	endpointLeases, err := kubernetes.NewForConfig(ownLimiter(svcCfg))
	if err != nil {
		return fmt.Errorf("failed to create the endpoint Lease client: %w", err)
	}
	deps := &Deps{Options: o, Target: target, KcpClient: kcpClient, ExportClient: exportClient, Resolver: resolver,
		Identity: identity, Leases: endpointLeases.CoordinationV1()}
	for _, c := range controllers {
		if !o.IsControllerEnabled(c.Name) {
			if c.Disabled == nil {
				log.Info("Controller disabled", "controller", c.Name)
				continue
			}
			if err := c.Disabled(mgr, deps); err != nil {
				return fmt.Errorf("failed to set up the release of disabled controller %q: %w", c.Name, err)
			}
			log.Info("Controller disabled; what it synced before is released", "controller", c.Name)
			continue
		}
		if err := c.Setup(mgr, deps); err != nil {
			return fmt.Errorf("failed to set up controller %q: %w", c.Name, err)
		}
		log.Info("Controller enabled", "controller", c.Name)
	}

	metrics.SetReadiness(publishedResourcesReady(mgr.GetClient(), o.PublishedResourceSelector))
	defer metrics.SetReadiness(nil)

	if token != nil {
		reload := &reloader{
			path: o.KcpKubeconfigFile,
			load: func(content []byte) (*rest.Config, error) { return kcpConfigFrom(o, content) },
			check: func(ctx context.Context, cfg *rest.Config) (string, string, error) {
				cfg = rest.CopyConfig(cfg)
				cfg.UserAgent = kcpCfg.UserAgent
				cfg.RateLimiter = kcpCfg.RateLimiter // the agent's kcp budget
				return checkKcpToken(ctx, cfg, ref)
			},
			current: rest.CopyConfig(kcpCfg),
			cluster: target.Workspace.Name,
			token:   token,
			log:     log.WithName("kcp-kubeconfig"),
			event:   publishedResourceEvents(mgr.GetClient(), mgr.GetEventRecorderFor("api-syncagent"), o.PublishedResourceSelector),
		}
		go reload.run(ctx)
	} else {
		log.Info("The kcp kubeconfig authenticates without a bearer token (a client certificate or a token file, which client-go re-reads): it is not reloaded while the agent runs")
	}

	mgrErrs := make(chan error, 1)
	go func() {
		err := mgr.Start(ctx)
		if lock != nil {
			if rerr := lock.release(); rerr != nil {
				log.Info("Could not release the leader Lease; the next leader waits for it to expire", "error", rerr.Error())
			}
		}
		mgrErrs <- err
	}()

	select {
	case err := <-mgrErrs:
		if err != nil {
			return fmt.Errorf("manager failed: %w", err)
		}
		return nil
	case err := <-healthErrs:
		if err == nil {
			// The health server only ends cleanly on shutdown; let the
			// manager finish its own shutdown (and release the Lease).
			if err := <-mgrErrs; err != nil {
				return fmt.Errorf("manager failed: %w", err)
			}
			return nil
		}
		cancel()
		return errors.Join(fmt.Errorf("health server failed: %w", err), <-mgrErrs)
	}
}

// readinessReadTimeout bounds the cache read of a metrics scrape.
const readinessReadTimeout = time.Second

// publishedResourcesReady reads, from the cache, whether each selected
// PublishedResource is Ready (sync_agent_published_resource_ready).
func publishedResourcesReady(c ctrlruntimeclient.Reader, selector labels.Selector) func() map[string]metrics.Readiness {
	return func() map[string]metrics.Readiness {
		ctx, cancel := context.WithTimeout(context.Background(), readinessReadTimeout)
		defer cancel()
		prs, err := selection.List(ctx, c, selector)
		if err != nil {
			return nil
		}
		out := make(map[string]metrics.Readiness, len(prs))
		for i := range prs {
			out[prs[i].Name] = metrics.Readiness{
				Ready:  meta.IsStatusConditionTrue(prs[i].Status.Conditions, syncagentv1alpha1.ConditionReady),
				Reason: conditions.ReadyReason(prs[i].Status.Conditions),
			}
		}
		return out
	}
}

// publishedResourceEvents records an Event on every selected
// PublishedResource (the agent has no object of its own to put it on).
func publishedResourceEvents(c ctrlruntimeclient.Reader, recorder record.EventRecorder, selector labels.Selector) func(eventType, reason, message string) {
	return func(eventType, reason, message string) {
		ctx, cancel := context.WithTimeout(context.Background(), readinessReadTimeout)
		defer cancel()
		prs, err := selection.List(ctx, c, selector)
		if err != nil {
			return
		}
		for i := range prs {
			recorder.Event(&prs[i], eventType, reason, message)
		}
	}
}
