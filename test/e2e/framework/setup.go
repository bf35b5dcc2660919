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

package framework

import (
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"
)

// AgentNamespace is the agent's --namespace in the service cluster.
const AgentNamespace = "syncagent"

// Fixture is the complete environment of one test: an organisation
// workspace with an APIExport (and its endpoint slice) and the agent's RBAC,
// a fresh service cluster, and the kubeconfigs the agent runs with.
type Fixture struct {
	Kcp     *Kcp
	Org     *Workspace
	Export  *kcpapisv1alpha2.APIExport
	Service *ServiceCluster

	// KcpKubeconfig is the agent's kcp kubeconfig (agent user, org workspace).
	KcpKubeconfig string
}

// NewFixture builds the environment of one test.
func NewFixture(t T, k *Kcp) *Fixture {
	t.Helper()
	org := k.CreateOrg(t)
	exportName := RandomName("export")
	export := CreateAPIExport(t, org, exportName)
	GrantAgent(t, org, exportName, exportName)

	svc := StartServiceCluster(t)
	svc.CreateNamespace(t, AgentNamespace)

	return &Fixture{
		Kcp:           k,
		Org:           org,
		Export:        export,
		Service:       svc,
		KcpKubeconfig: WriteKubeconfig(t, ArtifactsDir(t), "kcp.kubeconfig", k.AgentConfig(org.Path)),
	}
}

// AgentArgs returns the command line for an agent wired to the fixture's
// endpoint slice, plus extra flags.
func (f *Fixture) AgentArgs(extra ...string) []string {
	return append([]string{
		"--kcp-kubeconfig=" + f.KcpKubeconfig,
		"--kubeconfig=" + f.Service.Kubeconfig,
		"--namespace=" + AgentNamespace,
		"--apiexportendpointslice-ref=" + f.Export.Name,
		"--log-format=Console",
		"--log-debug",
	}, extra...)
}
