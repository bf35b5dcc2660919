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

//go:build e2e && soak

package e2e

import (
	"slices"
	"testing"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// A second agent shares the soak's consumer Secrets with the first (issue
// 30): it syncs the gadgets, whose kcp-origin related "<name>-token" is the
// token of the Thing of the same name, so both agents hold a finalizer of
// their own on it. Each checker judges its own agent: a finalizer one agent
// leaves behind, or removes for the other, is a violation.

const (
	// soakSecondAgent is the second agent's name (its finalizer, labels
	// and Lease).
	soakSecondAgent = "soak-second"
	// soakSecondSelect is the value of soakAgentLabel that selects a
	// PublishedResource for the second agent.
	soakSecondSelect = "second"
	// soakGadgetsNamespace holds every copy of the second agent, and so
	// its related copies.
	soakGadgetsNamespace = "soak-gadgets"
)

// startSecondAgent starts the second agent: one replica with leader
// election (so that its writes are fenced and told apart in the audit
// log), healed by the soak like the first agent's replicas.
func startSecondAgent(t *testing.T, f *framework.Fixture) *replicaSet {
	second := &replicaSet{t: t, size: 1, pprof: map[*framework.Agent]string{}, args: f.AgentArgs(
		"--agent-name="+soakSecondAgent, "--enable-leader-election=true", "--published-resource-selector="+soakAgentLabel+"="+soakSecondSelect,
		"--state-sweep-interval=5s", "--delete-created-namespaces=false")}
	second.start(nil)
	return second
}

// checkers are the invariant checkers of both agents for resources: the
// gadgets are the second agent's. The first agent's related copies live in
// the workspaces' namespaces, the second's in soakGadgetsNamespace.
func (w *soakWorld) checkers(workspaces []*framework.Workspace, resources []invariant.Resource) (first, second *invariant.Checker) {
	mine := func(r invariant.Resource) bool { return r.Name == soakGadgets.pr }
	var own, others []invariant.Resource
	for _, r := range resources {
		if mine(r) {
			r.CopyNamespace = func(ns string) bool { return ns == soakGadgetsNamespace }
			others = append(others, r)
		} else {
			r.CopyNamespace = func(ns string) bool { return ns != soakGadgetsNamespace }
			own = append(own, r)
		}
	}
	first = checkerOf(w.f, workspaces, own...)
	first.Partitions = w.partitions
	second = checkerOf(w.f, workspaces, others...)
	second.AgentName = soakSecondAgent
	return first, second
}

// convergedBoth waits until both agents' checkers find no violation in
// the soak's workspaces.
func (w *soakWorld) convergedBoth(t *testing.T, explain func(invariant.Violation) string, resources []invariant.Resource) {
	t.Helper()
	first, second := w.checkers(w.ws, resources)
	convergedChecked(t, first, explain)
	convergedChecked(t, second, explain)
}

// firstAgentKinds is how many sync controllers the first agent's leader
// runs: every kind but the second agent's gadgets.
var firstAgentKinds = len(slices.DeleteFunc(slices.Clone(soakKinds), func(k soakKind) bool { return k == soakGadgets }))

// exportVersion reads the resourceVersion of the APIExport both agents
// publish into.
func (w *soakWorld) exportVersion(t *testing.T) string {
	exp, err := getExport(t.Context(), w.f.Org, w.f.Export.Name)
	framework.Must(t, err, "read the APIExport")
	return exp.ResourceVersion
}
