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
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestControllerGauges: the last registration of a PublishedResource is
// reported (a controller and its successor overlap), and nothing once
// every registration is gone.
func TestControllerGauges(t *testing.T) {
	value := func(v float64) func() float64 { return func() float64 { return v } }
	first := RegisterController("things", ControllerGauges{Copies: value(1), Waiting: value(0), QueueDepth: value(2), OldestAge: value(0.5)})
	second := RegisterController("things", ControllerGauges{Copies: value(3), Waiting: value(1), QueueDepth: value(0), OldestAge: value(0)})
	want := `
# HELP sync_agent_objects_synced Local copies of the PublishedResource's kcp objects (this agent's).
# TYPE sync_agent_objects_synced gauge
sync_agent_objects_synced{published_resource="things"} 3
# HELP sync_agent_objects_waiting Objects whose sync waits for someone else (a local copy being deleted and held by foreign finalizers).
# TYPE sync_agent_objects_waiting gauge
sync_agent_objects_waiting{published_resource="things"} 1
`
	if err := testutil.CollectAndCompare(controllers, strings.NewReader(want), "sync_agent_objects_synced", "sync_agent_objects_waiting"); err != nil {
		t.Error(err)
	}
	second()
	if got := testutil.CollectAndCount(controllers, "sync_agent_queue_depth"); got != 1 {
		t.Errorf("after the successor went: %d series, want the first one's", got)
	}
	first()
	if got := testutil.CollectAndCount(controllers); got != 0 {
		t.Errorf("after both went: %d series, want none", got)
	}
}

func TestFleetStats(t *testing.T) {
	SetFleet(func() FleetStats {
		return FleetStats{Controllers: map[string]int{"running": 2, "failed": 1}, Workspaces: 7, Endpoints: 2, UnusedKcpInformers: 3}
	})
	defer SetFleet(nil)
	want := `
# HELP sync_agent_sync_controllers_by_state Sync controllers by state: running, starting, failed (retried with backoff), disabled (synchronization off; deletions only).
# TYPE sync_agent_sync_controllers_by_state gauge
sync_agent_sync_controllers_by_state{state="disabled"} 0
sync_agent_sync_controllers_by_state{state="failed"} 1
sync_agent_sync_controllers_by_state{state="running"} 2
sync_agent_sync_controllers_by_state{state="starting"} 0
# HELP sync_agent_workspaces_engaged Consumer workspaces the sync is engaged with.
# TYPE sync_agent_workspaces_engaged gauge
sync_agent_workspaces_engaged 7
# HELP sync_agent_kcp_informers_unused kcp types (summed over endpoints) whose informers no running sync controller uses; the endpoint's connection is remade to drop them after --unused-kcp-informer-timeout.
# TYPE sync_agent_kcp_informers_unused gauge
sync_agent_kcp_informers_unused 3
`
	if err := testutil.CollectAndCompare(fleet, strings.NewReader(want), "sync_agent_sync_controllers_by_state", "sync_agent_workspaces_engaged", "sync_agent_kcp_informers_unused"); err != nil {
		t.Error(err)
	}
	SetFleet(nil)
	if got := testutil.CollectAndCount(fleet); got != 0 {
		t.Errorf("without a fleet: %d series", got)
	}
}
