// Package metrics defines the agent's own Prometheus metrics, registered
// with controller-runtime's registry (served on --metrics-address).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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

// GoneWorkspaceObjectsDeleted counts local copies and state Secrets the
// sweep deleted because their workspace no longer binds the export.
var GoneWorkspaceObjectsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_gone_workspace_objects_deleted_total",
	Help: "Local copies (kind=copy) and state Secrets (kind=state) deleted because their kcp workspace no longer binds the export.",
}, []string{"kind"})

func init() { //nolint:gochecknoinits // see above.
	ctrlmetrics.Registry.MustRegister(GoneWorkspaceObjectsDeleted)
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
