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
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/kcp-syncagent/api-syncagent/internal/options"
)

// TestPartitionChecks: without a partition the options stay as they are;
// with one, the sweep of unbound workspaces is refused and the deletion
// of created namespaces is turned off.
func TestPartitionChecks(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		partition              string
		sweepUnbound, deleteNS bool
		disabled               []string
		wantErr                error
		wantDeleteNS           bool
	}{
		{name: "partition refuses schemas without the export controller", partition: "eu", disabled: []string{options.ControllerAPIExport}, wantErr: errSchemasWithoutExportInPartition},
		{name: "partition takes both publishing controllers off", partition: "eu", disabled: []string{options.ControllerAPIExport, options.ControllerAPIResourceSchema}},
		{name: "no partition: schemas without the export controller as before", disabled: []string{options.ControllerAPIExport}},
		{name: "no partition keeps both", sweepUnbound: true, deleteNS: true, wantDeleteNS: true},
		{name: "partition refuses the unbound sweep", partition: "eu", sweepUnbound: true, wantErr: errSweepUnboundInPartition},
		{name: "partition turns namespace deletion off", partition: "eu", deleteNS: true},
		{name: "partition with neither", partition: "eu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &options.Options{SweepUnboundWorkspaces: tc.sweepUnbound, DeleteCreatedNamespaces: tc.deleteNS, DisabledControllers: tc.disabled}
			if err := partitionChecks(o, tc.partition, logr.Discard()); !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && o.DeleteCreatedNamespaces != tc.wantDeleteNS {
				t.Errorf("DeleteCreatedNamespaces %v, want %v", o.DeleteCreatedNamespaces, tc.wantDeleteNS)
			}
		})
	}
}

// TestPartitionWarnsOfDefaultAgentName: an agent of a partition whose name
// was derived from its slice's says so (each partition's slice has its
// own name); one given its name does not.
func TestPartitionWarnsOfDefaultAgentName(t *testing.T) {
	for _, tc := range []struct {
		agentName, partition string
		want                 bool
	}{
		{"", "eu", true},
		{"things", "eu", false},
		{"", "", false},
	} {
		o := &options.Options{AgentName: tc.agentName, APIExportEndpointSliceRef: "things-eu"}
		o.Complete()
		var lines []string
		log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
		if err := partitionChecks(o, tc.partition, log); err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "must share one agent name") })
		if got != tc.want {
			t.Errorf("agent name %q, partition %q: warned %v, want %v (log %v)", tc.agentName, tc.partition, got, tc.want, lines)
		}
	}
}
