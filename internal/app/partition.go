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

package app

import (
	"errors"

	"github.com/go-logr/logr"

	"github.com/kcp-syncagent/api-syncagent/internal/options"
)

// errSweepUnboundInPartition: see partitionChecks.
var errSweepUnboundInPartition = errors.New("--sweep-unbound-workspaces cannot be used with an endpoint slice that names a Partition: the workspaces of the other partitions' shards bind the export through endpoints this agent does not see, and the sweep would take them for unbound and delete their local copies")

// errSchemasWithoutExportInPartition: see partitionChecks.
var errSchemasWithoutExportInPartition = errors.New("--disabled-controllers: an agent whose endpoint slice names a Partition runs the apiresourceschema controller only together with the apiexport controller, which decides whether it is its agent name's publisher; disable both or neither")

// partitionChecks adjusts the options to an endpoint slice that names a
// Partition. An agent of one partition sees only its partition's shards,
// so it cannot tell a workspace that unbound the export from one that is
// bound on another partition's shard: --sweep-unbound-workspaces is
// refused, and the deletion of created namespaces (on by default) is
// turned off, with a log line saying why. The schemas are created only by
// the agent the export records as publisher, which the apiexport
// controller decides: the apiresourceschema controller without it is
// refused.
func partitionChecks(o *options.Options, partition string, log logr.Logger) error {
	if partition == "" {
		return nil
	}
	if o.SweepUnboundWorkspaces {
		return errSweepUnboundInPartition
	}
	if o.IsControllerEnabled(options.ControllerAPIResourceSchema) && !o.IsControllerEnabled(options.ControllerAPIExport) {
		return errSchemasWithoutExportInPartition
	}
	if o.AgentNameDefaulted() {
		// Each partition's slice has a name of its own: agents named after
		// them would never meet on an endpoint's Lease.
		log.Info("WARNING: the agent name was derived from the endpoint slice's name; the agents of every partition of an export must share one agent name (--agent-name), or two of them serve a shard that moved", "agentName", o.AgentName, "partition", partition)
	}
	if o.DeleteCreatedNamespaces {
		o.DeleteCreatedNamespaces = false
		log.Info("Not deleting the namespaces this agent created for workspaces that are gone: with a Partition, a workspace bound on another partition's shard looks gone from here", "partition", partition)
	}
	return nil
}
