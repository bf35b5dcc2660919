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

// Package options defines the command line of the agent: every flag of the
// reference agent with its default, plus validation that lists every problem
// before any API call is made.
package options

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
)

// Controller names accepted by --disabled-controllers.
const (
	ControllerAPIExport         = "apiexport"
	ControllerAPIResourceSchema = "apiresourceschema"
	ControllerSync              = "sync"
)

// KnownControllers lists the values accepted by --disabled-controllers, sorted.
var KnownControllers = []string{ControllerAPIExport, ControllerAPIResourceSchema, ControllerSync}

// Log formats accepted by --log-format (case-insensitive).
const (
	LogFormatJSON    = "JSON"
	LogFormatConsole = "Console"
)

// Defaults of the flags whose reference default is not the zero value.
const (
	DefaultMetricsAddress = "127.0.0.1:8085"

	// DefaultStateSweepInterval is how often state Secrets of vanished kcp
	// objects are looked for.
	DefaultStateSweepInterval = 10 * time.Minute
	// DefaultPatrolInterval is the period of the patroller's passes.
	DefaultPatrolInterval = 10 * time.Minute
	// DefaultUnusedKcpInformerTimeout is how long an endpoint connection
	// keeps kcp informers no sync controller uses before it is remade.
	DefaultUnusedKcpInformerTimeout = 10 * time.Minute

	// Client-side rate limits. They are far above what the reference uses
	// (client-go's 5/10) so that they never bound the sync throughput; the
	// API servers' own flow control protects them.
	DefaultQPS   = 200
	DefaultBurst = 400

	// DefaultSyncWorkers is the reference's number of concurrent reconciles
	// of each PublishedResource's sync controller; ours are per workspace
	// (the controller runs twice as many workers).
	DefaultSyncWorkers = 4
)

// The values of --event-level: which Events the sync records on kcp
// objects (Events on the service cluster are not affected).
const (
	// EventLevelNormal records every Event, as the reference does.
	EventLevelNormal = "normal"
	// EventLevelWarning records only Warning Events into kcp.
	EventLevelWarning = "warning"
)

// The values of --patrol-mode.
const (
	PatrolModeRepair = "repair"
	PatrolModeReport = "report"
)

// Options holds the parsed command line.
type Options struct {
	// KubeconfigFile is the service cluster kubeconfig (--kubeconfig).
	KubeconfigFile string
	// KcpKubeconfigFile is the kcp kubeconfig (--kcp-kubeconfig).
	KcpKubeconfigFile string
	// Namespace holds state Secrets, the Lease and leader-election Events.
	Namespace string

	APIExportEndpointSliceRef string
	APIExportRef              string

	// AgentName is the identity written into labels and the Lease name.
	// After Complete it is always set.
	AgentName string

	PublishedResourceSelectorString string
	// PublishedResourceSelector is the parsed selector (after Validate).
	PublishedResourceSelector labels.Selector

	EnableLeaderElection bool

	KubeconfigHostOverride   string
	KubeconfigCAFileOverride string

	MetricsAddress string
	HealthAddress  string
	PprofAddress   string

	DisabledControllers []string

	LogDebug  bool
	LogFormat string

	// StateSweepInterval is the period of the orphaned state Secret sweep.
	StateSweepInterval time.Duration
	// SweepUnboundWorkspaces lets the sweep delete the copies and state of
	// workspaces that no endpoint binds the export in.
	SweepUnboundWorkspaces bool
	// DeleteCreatedNamespaces lets the sweep delete the service-cluster
	// namespaces the agent created for a workspace that is gone, once
	// nothing lives in them.
	DeleteCreatedNamespaces bool
	// EnableImports lets service-cluster objects labelled
	// syncagent.kcp.io/import-into be imported into kcp.
	EnableImports bool
	// NamespaceLabels and NamespaceAnnotations are "key=template" pairs
	// for the namespaces the agent creates; NamespaceMetadata is their
	// compiled form (after Validate).
	NamespaceLabels      []string
	NamespaceAnnotations []string
	NamespaceMetadata    *nsmeta.Metadata

	// EndpointURLRewrites are "from=to" prefixes of virtual workspace
	// URLs; EndpointRewrites their parsed form (after Validate).
	EndpointURLRewrites []string
	EndpointRewrites    kcp.Rewrites

	// PatrolInterval is the period of the patroller's anti-entropy passes
	// (0: off); PatrolMode is PatrolModeRepair or PatrolModeReport.
	PatrolInterval time.Duration
	PatrolMode     string

	// UnusedKcpInformerTimeout: how long an endpoint connection keeps kcp
	// informers no sync controller uses before it is remade (0: kept).
	UnusedKcpInformerTimeout time.Duration

	// SyncWorkers is the number of concurrent reconciles of one
	// workspace's objects in each sync controller (which runs one worker
	// more); EventLevel is EventLevelNormal or EventLevelWarning.
	SyncWorkers int
	EventLevel  string

	KcpQPS       float32
	KcpBurst     int
	ServiceQPS   float32
	ServiceBurst int

	// agentNameDefaulted records that AgentName was derived by Complete.
	agentNameDefaulted bool
}

// New returns Options with the defaults of every flag.
func New() *Options {
	return &Options{
		MetricsAddress:          DefaultMetricsAddress,
		LogFormat:               LogFormatJSON,
		StateSweepInterval:      DefaultStateSweepInterval,
		DeleteCreatedNamespaces: true,
		PatrolInterval:          DefaultPatrolInterval,
		PatrolMode:              PatrolModeRepair,

		UnusedKcpInformerTimeout: DefaultUnusedKcpInformerTimeout,
		SyncWorkers:              DefaultSyncWorkers,
		EventLevel:               EventLevelNormal,
		KcpQPS:                   DefaultQPS,
		KcpBurst:                 DefaultBurst,
		ServiceQPS:               DefaultQPS,
		ServiceBurst:             DefaultBurst,
	}
}

// AddFlags registers every flag on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.KubeconfigFile, "kubeconfig", o.KubeconfigFile, "Service cluster kubeconfig. When empty: $KUBECONFIG, then the in-cluster config, then ~/.kube/config.")
	fs.StringVar(&o.KcpKubeconfigFile, "kcp-kubeconfig", o.KcpKubeconfigFile, "kcp kubeconfig (required). Its server URL must contain /clusters/ and point to the workspace that holds the APIExportEndpointSlice or APIExport.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace of the agent on the service cluster: state Secrets, leader-election Lease and Events (required).")
	fs.StringVar(&o.APIExportEndpointSliceRef, "apiexportendpointslice-ref", o.APIExportEndpointSliceRef, "Name of the APIExportEndpointSlice in the kcp kubeconfig's workspace. If it names a Partition, this agent serves that partition's shards only, with a leader Lease, release finalizer and SyncReady condition of its own. Exactly one of --apiexportendpointslice-ref and --apiexport-ref is required.")
	fs.StringVar(&o.APIExportRef, "apiexport-ref", o.APIExportRef, "Name of the APIExport in the kcp kubeconfig's workspace (legacy wiring). Exactly one of --apiexportendpointslice-ref and --apiexport-ref is required.")
	fs.StringVar(&o.AgentName, "agent-name", o.AgentName, "Identity of this agent, written into labels, the finalizers on kcp objects (syncagent.kcp.io/cleanup-<name>) and the Lease name (syncagent.<name>, with a partition syncagent.<name>.<partition>); the agents of several partitions of one export share it; must not change after the first run (objects keep the old name's finalizer). Default: <ref>-syncagent.")
	fs.StringVar(&o.PublishedResourceSelectorString, "published-resource-selector", o.PublishedResourceSelectorString, "Label selector (kubectl syntax) limiting the PublishedResources this agent handles. Empty selects all.")
	fs.BoolVar(&o.EnableLeaderElection, "enable-leader-election", o.EnableLeaderElection, "Elect a leader through the Lease syncagent.<agent-name> (with a partition syncagent.<agent-name>.<partition>) in --namespace.")
	fs.StringVar(&o.KubeconfigHostOverride, "kubeconfig-host-override", o.KubeconfigHostOverride, "Replace the server URL of the service cluster kubeconfig.")
	fs.StringVar(&o.KubeconfigCAFileOverride, "kubeconfig-ca-file-override", o.KubeconfigCAFileOverride, "Replace the CA of the service cluster kubeconfig with this file (inline CA data is dropped).")
	fs.StringVar(&o.MetricsAddress, "metrics-address", o.MetricsAddress, "Address of the Prometheus /metrics listener; 0 or empty disables it.")
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress, "Address of the /healthz and /readyz listener; 0 or empty disables it.")
	fs.StringVar(&o.PprofAddress, "pprof-address", o.PprofAddress, "Address of the /debug/pprof listener; 0 or empty disables it.")
	fs.StringSliceVar(&o.DisabledControllers, "disabled-controllers", o.DisabledControllers, fmt.Sprintf("Controllers to disable (comma-separated, repeatable): %s.", strings.Join(KnownControllers, ", ")))
	fs.BoolVar(&o.LogDebug, "log-debug", o.LogDebug, "Log at debug level.")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log format: JSON or Console (case-insensitive).")
	fs.DurationVar(&o.StateSweepInterval, "state-sweep-interval", o.StateSweepInterval, "How often state Secrets of kcp objects that vanished without being cleaned up are swept; 0 disables the sweep.")
	fs.BoolVar(&o.SweepUnboundWorkspaces, "sweep-unbound-workspaces", o.SweepUnboundWorkspaces, "Let the sweep also delete this agent's local copies and state of workspaces in which no endpoint of the APIExportEndpointSlice lists a binding of the export (deleted or unbound while the agent was down). Off by default: with a partitioned or changed endpoint slice, workspaces that still bind the export through other shards would lose their copies.")
	fs.BoolVar(&o.EnableImports, "enable-imports", o.EnableImports, "Import service-cluster objects of a published type that carry the label syncagent.kcp.io/import-into=<logical cluster> into that workspace: the agent creates the kcp object from the object, which becomes its copy. Whoever may label such objects on the service cluster may then put objects into every workspace that binds the export.")
	fs.BoolVar(&o.DeleteCreatedNamespaces, "delete-created-namespaces", o.DeleteCreatedNamespaces, "Let the sweep delete the service-cluster namespaces this agent created for a workspace that no endpoint of the APIExportEndpointSlice lists a binding of any more and that is not engaged, once two sweeps in a row found nothing in them but what Kubernetes puts into every namespace. Proving that lists every namespaced type (metadata only), which needs list on every resource; a type the agent may not list keeps the namespace. Needs --state-sweep-interval above 0.")
	fs.StringArrayVar(&o.NamespaceLabels, "namespace-label", o.NamespaceLabels, "A label key=value for the service-cluster namespaces the agent creates (repeatable); the value is a Go template that sees .ClusterName (the workspace's logical cluster). Changed or removed labels are applied to every namespace the agent created, never to others, and only where a label still holds the value the agent set; a value that reads the workspace is put only on namespaces whose name contains its cluster name.")
	fs.StringArrayVar(&o.NamespaceAnnotations, "namespace-annotation", o.NamespaceAnnotations, "An annotation key=value for the service-cluster namespaces the agent creates (repeatable), as --namespace-label.")
	fs.StringArrayVar(&o.EndpointURLRewrites, "endpoint-url-rewrite", o.EndpointURLRewrites, "Rewrite the virtual workspace URLs of the APIExportEndpointSlice (one per kcp shard) that begin with FROM to begin with TO, as FROM=TO (repeatable; the first match wins): kcp lists each shard's own URL, which an agent outside kcp's network may not reach. Example: https://shard-1.kcp.svc:6443=https://shard-1.kcp.example.com")
	fs.DurationVar(&o.PatrolInterval, "patrol-interval", o.PatrolInterval, "How often the patroller compares every synced kcp object with its local copy, state, status and related objects, and looks for local copies whose kcp object is gone (each pass jittered by ±10 %); 0 disables it.")
	fs.StringVar(&o.PatrolMode, "patrol-mode", o.PatrolMode, "What the patroller does with drift: repair (puts what the sync repairs through it, and local copies whose kcp object is confirmed gone through their cleanup; fields changed on the service side are only reported, as the sync keeps them) or report (count, log and an Event only; nothing is written).")
	fs.DurationVar(&o.UnusedKcpInformerTimeout, "unused-kcp-informer-timeout", o.UnusedKcpInformerTimeout, "How long the connection to a virtual workspace endpoint keeps kcp informers that no sync controller uses any more (a PublishedResource deleted, or its related types changed) before it is made again without them; the new connection lists the types still in use once. 0 keeps them until the connection is made again for another reason.")
	fs.IntVar(&o.SyncWorkers, "sync-workers", o.SyncWorkers, "Concurrent reconciles of one workspace's objects in each PublishedResource's sync controller; the controller runs as many workers again for the other workspaces while one workspace holds these. With a kcp that has spare capacity, throughput grows with it; each worker can have one request to kcp in flight.")
	fs.StringVar(&o.EventLevel, "event-level", o.EventLevel, "Which Events the sync records on kcp objects: normal (every Event, as the reference) or warning (only Warning Events; each Event is a write that kcp authorizes and stores). Events on PublishedResources (service cluster) and on the APIExport are not affected.")
	fs.Float32Var(&o.KcpQPS, "kcp-qps", o.KcpQPS, "Client-side request rate limit (queries per second) towards kcp, shared by all of the agent's kcp clients (every workspace's).")
	fs.IntVar(&o.KcpBurst, "kcp-burst", o.KcpBurst, "Client-side request burst towards kcp.")
	fs.Float32Var(&o.ServiceQPS, "service-qps", o.ServiceQPS, "Client-side request rate limit (queries per second) towards the service cluster, shared by all of the agent's clients there except the leader election's, which has its own.")
	fs.IntVar(&o.ServiceBurst, "service-burst", o.ServiceBurst, "Client-side request burst towards the service cluster.")
}

// Complete fills in derived values: the default agent name.
func (o *Options) Complete() {
	if o.AgentName == "" {
		ref := o.APIExportEndpointSliceRef
		if ref == "" {
			ref = o.APIExportRef
		}
		if ref != "" {
			o.AgentName = ref + "-syncagent"
			o.agentNameDefaulted = true
		}
	}
}

// AgentNameDefaulted: --agent-name was not given, and Complete derived it
// from the slice's (or export's) name.
func (o *Options) AgentNameDefaulted() bool { return o.agentNameDefaulted }

// Validate checks every option and returns all problems joined, plus
// non-fatal warnings. It makes no API calls. It must run after Complete.
func (o *Options) Validate() (warnings []string, err error) {
	var errs []error

	if o.KcpKubeconfigFile == "" {
		errs = append(errs, errors.New("--kcp-kubeconfig is required"))
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace is required"))
	} else if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--namespace %q is invalid: %s", o.Namespace, strings.Join(msgs, "; ")))
	}

	switch {
	case o.APIExportEndpointSliceRef == "" && o.APIExportRef == "":
		errs = append(errs, errors.New("exactly one of --apiexportendpointslice-ref and --apiexport-ref must be given, but neither is set"))
	case o.APIExportEndpointSliceRef != "" && o.APIExportRef != "":
		errs = append(errs, errors.New("exactly one of --apiexportendpointslice-ref and --apiexport-ref must be given, but both are set"))
	}

	if o.AgentName != "" {
		w, err := validateAgentName(o.AgentName, o.agentNameDefaulted)
		if err != nil {
			errs = append(errs, err)
		}
		if w != "" {
			warnings = append(warnings, w)
		}
	}

	sel, err := labels.Parse(o.PublishedResourceSelectorString)
	if err != nil {
		errs = append(errs, fmt.Errorf("--published-resource-selector %q is invalid: %w", o.PublishedResourceSelectorString, err))
	} else {
		o.PublishedResourceSelector = sel
	}

	if rw, err := kcp.ParseRewrites(o.EndpointURLRewrites); err != nil {
		errs = append(errs, err)
	} else {
		o.EndpointRewrites = rw
	}
	if md, err := nsmeta.Parse(o.NamespaceLabels, o.NamespaceAnnotations); err != nil {
		errs = append(errs, err)
	} else {
		o.NamespaceMetadata = md
	}

	for _, c := range o.DisabledControllers {
		if !slices.Contains(KnownControllers, c) {
			errs = append(errs, fmt.Errorf("--disabled-controllers: unknown controller %q (known: %s)", c, strings.Join(KnownControllers, ", ")))
		}
	}

	if !strings.EqualFold(o.LogFormat, LogFormatJSON) && !strings.EqualFold(o.LogFormat, LogFormatConsole) {
		errs = append(errs, fmt.Errorf("--log-format %q is invalid: must be JSON or Console", o.LogFormat))
	}

	if o.StateSweepInterval < 0 {
		errs = append(errs, errors.New("--state-sweep-interval must not be negative"))
	}
	if o.PatrolInterval < 0 {
		errs = append(errs, errors.New("--patrol-interval must not be negative"))
	}
	if o.UnusedKcpInformerTimeout < 0 {
		errs = append(errs, errors.New("--unused-kcp-informer-timeout must not be negative"))
	}
	if o.PatrolMode != PatrolModeRepair && o.PatrolMode != PatrolModeReport {
		errs = append(errs, fmt.Errorf("--patrol-mode %q is invalid: must be %s or %s", o.PatrolMode, PatrolModeRepair, PatrolModeReport))
	}
	if o.SyncWorkers <= 0 {
		errs = append(errs, errors.New("--sync-workers must be positive"))
	}
	if o.EventLevel != EventLevelNormal && o.EventLevel != EventLevelWarning {
		errs = append(errs, fmt.Errorf("--event-level %q is invalid: must be %s or %s", o.EventLevel, EventLevelNormal, EventLevelWarning))
	}
	if o.KcpQPS <= 0 || o.ServiceQPS <= 0 {
		errs = append(errs, errors.New("--kcp-qps and --service-qps must be positive"))
	}
	if o.KcpBurst <= 0 || o.ServiceBurst <= 0 {
		errs = append(errs, errors.New("--kcp-burst and --service-burst must be positive"))
	}

	return warnings, errors.Join(errs...)
}

// validateAgentName checks an explicit name for DNS-1035 and a defaulted name
// for being a label value (warning when it is not DNS-1035, as the reference
// accepted such names).
func validateAgentName(name string, defaulted bool) (warning string, err error) {
	dnsErrs := validation.IsDNS1035Label(name)
	if !defaulted {
		if len(dnsErrs) > 0 {
			return "", fmt.Errorf("--agent-name %q is invalid: %s", name, strings.Join(dnsErrs, "; "))
		}
		return "", nil
	}
	if labelErrs := validation.IsValidLabelValue(name); len(labelErrs) > 0 {
		return "", fmt.Errorf("the default agent name %q (derived from the ref) is not a valid label value (%s); set --agent-name explicitly", name, strings.Join(labelErrs, "; "))
	}
	if len(dnsErrs) > 0 {
		return fmt.Sprintf("the default agent name %q is not a DNS-1035 label; consider setting --agent-name explicitly", name), nil
	}
	return "", nil
}

// IsControllerEnabled reports whether the named controller is not disabled.
func (o *Options) IsControllerEnabled(name string) bool {
	return !slices.Contains(o.DisabledControllers, name)
}

// MetricsEnabled reports whether the metrics listener is on.
func (o *Options) MetricsEnabled() bool { return listenerEnabled(o.MetricsAddress) }

// HealthEnabled reports whether the health listener is on.
func (o *Options) HealthEnabled() bool { return listenerEnabled(o.HealthAddress) }

// listenerEnabled reports whether a listener address turns the listener on:
// as in controller-runtime, whose address flags the reference passes through,
// "0" and the empty string mean "disabled".
func listenerEnabled(addr string) bool { return addr != "" && addr != "0" }
