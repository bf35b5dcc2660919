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

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The states of an endpoint's Lease, as an agent of a partition sees them.
const (
	EndpointServing   = "serving"
	EndpointElsewhere = "elsewhere"
	EndpointPending   = "pending"
)

// EndpointLeases counts, by state, the endpoints this agent's slice lists
// (an agent of a partition): served here, served by another partition's
// agent, or not decided yet.
var EndpointLeases = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "sync_agent_endpoint_leases",
	Help: "Endpoints the agent's endpoint slice lists, by the state of their Leases (an agent of a partition): serving (this agent holds the Lease), elsewhere (another partition's agent does), pending (not decided yet).",
}, []string{"state"})

// EndpointLeaseWrites counts the writes of endpoints' Leases (renewals,
// listings, handover requests, releases, deletions).
var EndpointLeaseWrites = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "sync_agent_endpoint_lease_writes_total",
	Help: "Successful writes of endpoints' Leases (renewals, listings, handover requests, releases, deletions) by an agent of a partition.",
})

// EndpointHandovers counts the endpoints this agent started or stopped
// serving, by direction (taken, given).
var EndpointHandovers = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_endpoint_handovers_total",
	Help: "Endpoints this agent of a partition started serving (taken) or stopped serving (given: handed over, no longer listed, Lease not renewed in time, agent stopping).",
}, []string{"direction"})

func init() { //nolint:gochecknoinits // metrics must be registered once, before the metrics server starts.
	ctrlmetrics.Registry.MustRegister(EndpointLeases, EndpointLeaseWrites, EndpointHandovers)
}
