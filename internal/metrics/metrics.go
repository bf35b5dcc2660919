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

// Package metrics defines the agent's own Prometheus metrics, registered
// with controller-runtime's registry (served on --metrics-address).
package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kcp-syncagent/api-syncagent/internal/version"
)

// PublishedResources is the number of PublishedResources selected by this
// agent (reference metric name).
var PublishedResources = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "sync_agent_published_resource",
	Help: "Number of PublishedResources selected by this agent.",
})

func init() { //nolint:gochecknoinits // metrics must be registered once, before the metrics server starts.
	ctrlmetrics.Registry.MustRegister(PublishedResources)
}

// PublisherRefused is 1 while the APIExport records another agent of this
// agent's name as its publisher, so this one publishes nothing.
var PublisherRefused = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "sync_agent_publisher_refused",
	Help: "1 while the APIExport records another agent of this agent's name as its publisher (annotation syncagent.kcp.io/publisher-<agent name>), so this one publishes no schema and writes nothing into the export.",
})

func init() { //nolint:gochecknoinits // metrics must be registered once, before the metrics server starts.
	ctrlmetrics.Registry.MustRegister(PublisherRefused)
}

// SyncControllers is the number of running per-PublishedResource sync controllers.
var SyncControllers = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "sync_agent_sync_controllers",
	Help: "Number of running sync controllers (one per synchronized PublishedResource).",
})

// SyncControllerStarts counts sync controller starts per PublishedResource
// (a restart after a PublishedResource change counts again).
var SyncControllerStarts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_sync_controller_starts_total",
	Help: "Sync controller starts per PublishedResource.",
}, []string{"published_resource"})

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(SyncControllers, SyncControllerStarts)
}

// CreatedNamespacesDeleted counts the service-cluster namespaces the
// sweep deleted: created by the agent for a workspace that is gone, and
// empty.
var CreatedNamespacesDeleted = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "sync_agent_created_namespaces_deleted_total",
	Help: "Service-cluster namespaces the agent created for a workspace and deleted once the workspace was gone and nothing lived in them.",
})

// GoneWorkspaceObjectsDeleted counts local copies and state Secrets the
// sweep deleted because their workspace no longer binds the export.
var GoneWorkspaceObjectsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_gone_workspace_objects_deleted_total",
	Help: "Local copies (kind=copy) and state Secrets (kind=state) deleted because their kcp workspace no longer binds the export.",
}, []string{"kind"})

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(GoneWorkspaceObjectsDeleted, CreatedNamespacesDeleted)
}

// EndpointReconnects counts the connections to a virtual workspace
// endpoint that were made again, by reason.
var EndpointReconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_endpoint_reconnects_total",
	Help: "Connections to a virtual workspace endpoint made again: reason=failed (the connection failed) or unused_informers (to drop kcp informers no sync controller uses).",
}, []string{"reason"})

// KcpEventsDropped counts Events on kcp objects that were not written.
var KcpEventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_kcp_events_dropped_total",
	Help: "Events on kcp objects that were dropped, by reason: workspace_gone (no longer engaged), rejected (kcp refused it, e.g. the events permission claim is not accepted), unreachable (the write failed or timed out), throttled (the agent's kcp request budget, --kcp-qps, would not let it start in time).",
}, []string{"reason"})

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(KcpEventsDropped)
}

// The reasons of EndpointReconnects.
const (
	ReconnectFailed          = "failed"
	ReconnectUnusedInformers = "unused_informers"
)

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(EndpointReconnects)
}

// The patroller's metrics (see internal/controller/sync/patrol.go).
var (
	PatrolRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sync_agent_patrol_runs_total",
		Help: "Completed patrol passes per PublishedResource.",
	}, []string{"published_resource"})
	PatrolDriftFound = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sync_agent_patrol_drift_found_total",
		Help: "Objects the patroller found drifted, by PublishedResource and kind of drift.",
	}, []string{"published_resource", "kind"})
	PatrolRepaired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sync_agent_patrol_repaired_total",
		Help: "Drifted objects the patroller saw repaired (checked again after the repair), by PublishedResource and kind of drift.",
	}, []string{"published_resource", "kind"})
	PatrolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sync_agent_patrol_duration_seconds",
		Help:    "Duration of a patrol pass (checks, repairs and their re-checks) per PublishedResource.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 14), // 0.1 s … about 14 min
	}, []string{"published_resource"})
)

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(PatrolRuns, PatrolDriftFound, PatrolRepaired, PatrolDuration)
}

// BuildInfo is 1, labelled with the agent's version.
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "sync_agent_build_info",
	Help: "Always 1; the version label is the agent's version.",
}, []string{"version"})

// The sync controllers' operations, errors and latencies.
var (
	SyncOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sync_agent_sync_operations_total",
		Help: "API writes of the sync per PublishedResource, by operation (create, update, delete: local copies; status, metadata: kcp objects; related; state; namespace) and result (success, conflict, error).",
	}, []string{"published_resource", "operation", "result"})
	SyncErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sync_agent_sync_errors_total",
		Help: "Sync passes that failed per PublishedResource, by reason (ObjectConflict, NamespaceNotAllowed, Mutation, or the API status reason such as Forbidden; Unknown otherwise).",
	}, []string{"published_resource", "reason"})
	SyncLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sync_agent_sync_latency_seconds",
		Help:    "From an event entering the sync's queue to the end of the pass that wrote its effect, per PublishedResource and direction (down: a local copy written; up: a status written to kcp).",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"published_resource", "direction"})
)

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(BuildInfo, SyncOperations, SyncErrors, SyncLatency, controllers)
	BuildInfo.WithLabelValues(version.Version).Set(1)
}

// ControllerGauges are read from a running sync controller when the
// metrics are scraped.
type ControllerGauges struct {
	// Copies counts the local copies (this agent's) of the controller's type.
	Copies func() float64
	// Waiting counts the objects waiting for someone else (a copy held by
	// foreign finalizers).
	Waiting func() float64
	// QueueDepth and OldestAge: the requests in the queue, and how long
	// the oldest event there has waited (seconds; 0 if none).
	QueueDepth func() float64
	OldestAge  func() float64
}

var (
	descCopies = prometheus.NewDesc("sync_agent_objects_synced",
		"Local copies of the PublishedResource's kcp objects (this agent's).", []string{"published_resource"}, nil)
	descWaiting = prometheus.NewDesc("sync_agent_objects_waiting",
		"Objects whose sync waits for someone else (a local copy being deleted and held by foreign finalizers).", []string{"published_resource"}, nil)
	descDepth = prometheus.NewDesc("sync_agent_queue_depth",
		"Requests in the PublishedResource's sync queue.", []string{"published_resource"}, nil)
	descOldest = prometheus.NewDesc("sync_agent_queue_oldest_item_age_seconds",
		"How long the oldest event in the PublishedResource's sync queue has waited (0: none).", []string{"published_resource"}, nil)
)

// controllerCollector reports the ControllerGauges of the running sync
// controllers.
type controllerCollector struct {
	mu   sync.Mutex
	next int
	// byPR holds the registrations of each PublishedResource in order; a
	// controller being replaced and its successor can overlap, the last
	// one is reported.
	byPR map[string][]registration
}

type registration struct {
	id int
	g  ControllerGauges
}

var controllers = &controllerCollector{byPR: map[string][]registration{}}

// RegisterController reports g under the PublishedResource's name until
// the returned function is called.
func RegisterController(pr string, g ControllerGauges) (unregister func()) {
	c := controllers
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	id := c.next
	c.byPR[pr] = append(c.byPR[pr], registration{id, g})
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.byPR[pr] = slices.DeleteFunc(c.byPR[pr], func(r registration) bool { return r.id == id })
		if len(c.byPR[pr]) == 0 {
			delete(c.byPR, pr)
		}
	}
}

func (c *controllerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCopies
	ch <- descWaiting
	ch <- descDepth
	ch <- descOldest
}

func (c *controllerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	current := map[string]ControllerGauges{}
	for pr, regs := range c.byPR {
		current[pr] = regs[len(regs)-1].g
	}
	c.mu.Unlock()
	// Read outside the lock: the functions take the controllers' own.
	for pr, g := range current {
		for desc, f := range map[*prometheus.Desc]func() float64{descCopies: g.Copies, descWaiting: g.Waiting, descDepth: g.QueueDepth, descOldest: g.OldestAge} {
			if f != nil {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, f(), pr)
			}
		}
	}
}

// FleetStats is what the sync's fleet reports at scrape time.
type FleetStats struct {
	// Controllers counts the sync controllers by state: running (workers
	// run), starting, failed (waiting to retry), disabled (running for
	// deletions only).
	Controllers map[string]int
	// Workspaces engaged, and endpoints (shards) connected.
	Workspaces, Endpoints int
	// UnusedKcpInformers: kcp types whose endpoint informers no running
	// sync controller uses (summed over endpoints).
	UnusedKcpInformers int
}

var (
	descControllers = prometheus.NewDesc("sync_agent_sync_controllers_by_state",
		"Sync controllers by state: running, starting, failed (retried with backoff), disabled (synchronization off; deletions only).", []string{"state"}, nil)
	descWorkspaces = prometheus.NewDesc("sync_agent_workspaces_engaged",
		"Consumer workspaces the sync is engaged with.", nil, nil)
	descEndpoints = prometheus.NewDesc("sync_agent_endpoints_connected",
		"Endpoints (virtual workspace URLs, one per shard) of the APIExportEndpointSlice the agent is connected to.", nil, nil)
	descUnusedInformers = prometheus.NewDesc("sync_agent_kcp_informers_unused",
		"kcp types (summed over endpoints) whose informers no running sync controller uses; the endpoint's connection is remade to drop them after --unused-kcp-informer-timeout.", nil, nil)
)

// fleetCollector reports the FleetStats of the source set by SetFleet.
type fleetCollector struct {
	mu     sync.Mutex
	source func() FleetStats
}

var fleet = &fleetCollector{}

// SetFleet makes the fleet metrics come from source (nil: none).
func SetFleet(source func() FleetStats) {
	fleet.mu.Lock()
	defer fleet.mu.Unlock()
	fleet.source = source
}

func (f *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descControllers
	ch <- descWorkspaces
	ch <- descEndpoints
	ch <- descUnusedInformers
}

func (f *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	source := f.source
	f.mu.Unlock()
	if source == nil {
		return
	}
	s := source()
	for _, state := range []string{"running", "starting", "failed", "disabled"} {
		ch <- prometheus.MustNewConstMetric(descControllers, prometheus.GaugeValue, float64(s.Controllers[state]), state)
	}
	ch <- prometheus.MustNewConstMetric(descWorkspaces, prometheus.GaugeValue, float64(s.Workspaces))
	ch <- prometheus.MustNewConstMetric(descEndpoints, prometheus.GaugeValue, float64(s.Endpoints))
	ch <- prometheus.MustNewConstMetric(descUnusedInformers, prometheus.GaugeValue, float64(s.UnusedKcpInformers))
}

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(fleet)
}

var descReady = prometheus.NewDesc("sync_agent_published_resource_ready",
	"1 when the PublishedResource's Ready condition is True, else 0 (every selected PublishedResource; every replica reports it); reason is the condition's reason (Unknown without one, Other for a reason this agent does not write).",
	[]string{"published_resource", "reason"}, nil)

// Readiness is what sync_agent_published_resource_ready says of one
// PublishedResource.
type Readiness struct {
	Ready bool
	// Reason is the Ready condition's reason, from a bounded set.
	Reason string
}

// readinessCollector reports the readiness of the selected
// PublishedResources, read at scrape time from the source set by
// SetReadiness: the series of a PublishedResource that is gone or no
// longer selected go with it.
type readinessCollector struct {
	mu     sync.Mutex
	source func() map[string]Readiness
}

var readiness = &readinessCollector{}

// SetReadiness makes sync_agent_published_resource_ready come from source
// (nil: none).
func SetReadiness(source func() map[string]Readiness) {
	readiness.mu.Lock()
	defer readiness.mu.Unlock()
	readiness.source = source
}

func (r *readinessCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descReady }

func (r *readinessCollector) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	source := r.source
	r.mu.Unlock()
	if source == nil {
		return
	}
	for name, st := range source() {
		v := 0.0
		if st.Ready {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, v, name, st.Reason)
	}
}

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(readiness)
}

// The kcp kubeconfig's reloads (internal/app/reload.go).
var (
	KubeconfigReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sync_agent_kcp_kubeconfig_reloads_total",
		Help: "Changes of the kcp kubeconfig file the agent applied (result=success) or rejected (result=failure).",
	}, []string{"result"})
	KubeconfigReloadFailed = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sync_agent_kcp_kubeconfig_reload_failed",
		Help: "1 while the kcp kubeconfig file holds a change the agent rejected (it goes on with the previous one).",
	})
)

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(KubeconfigReloads, KubeconfigReloadFailed)
}

// APIBindingClaims counts the export's bindings by how they grant its
// permission claims (internal/claims), as of the last complete check of
// every endpoint (internal/controller/syncmanager/claims.go).
var APIBindingClaims = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "sync_agent_apibindings",
	Help: "The export's APIBindings by how they grant its permission claims (claims: valid, pending, mismatch, not-accepted, invalid), as of the leader's last complete check of every endpoint.",
}, []string{"claims"})

// APIBindingClaimsChecked is when APIBindingClaims was last set.
var APIBindingClaimsChecked = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "sync_agent_apibindings_checked_timestamp_seconds",
	Help: "When the leader last read the bindings of every endpoint for sync_agent_apibindings (Unix time; 0 or absent: not yet, or not the leader).",
})

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(APIBindingClaims, APIBindingClaimsChecked)
}
