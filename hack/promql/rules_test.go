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

package promql

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"gopkg.in/yaml.v3"
)

// The selector the chart puts into the rules for a release "agent" in
// namespace "agents" (test/chart checks that the chart renders exactly
// what fill does).
const testSelector = `namespace="agents", job="agent-metrics"`

// rule is one rule of files/alerts.yaml.
type rule struct {
	Alert     string   `yaml:"alert"`
	Expr      string   `yaml:"expr"`
	For       string   `yaml:"for"`
	Threshold *float64 `yaml:"threshold"`
}

// fill puts the selector and the threshold into an expression, as the chart does.
func (r rule) fill(selector string) string {
	expr := strings.ReplaceAll(r.Expr, "__SELECTOR__", selector)
	if r.Threshold != nil {
		expr = strings.ReplaceAll(expr, "__THRESHOLD__", strconv.FormatFloat(*r.Threshold, 'f', -1, 64))
	}
	return expr
}

func alertRules(t *testing.T) map[string]rule {
	t.Helper()
	var doc struct {
		Rules []rule `yaml:"rules"`
	}
	if err := yaml.Unmarshal(read(t, "deploy", "charts", "api-syncagent", "files", "alerts.yaml"), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]rule{}
	for _, r := range doc.Rules {
		out[r.Alert] = r
	}
	return out
}

// firing evaluates r every minute from 0 to at over the series of load
// (promtool's input_series notation, one series per line, 1m apart), as
// `promtool test rules` does, and returns the firing alerts' label sets.
func firing(t *testing.T, r rule, load string, at time.Duration) []string {
	t.Helper()
	storage := promqltest.LoadedStorage(t, "load 1m\n"+load)
	t.Cleanup(func() { _ = storage.Close() })
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	expr, err := parser.NewParser(promqltest.TestParserOpts).ParseExpr(r.fill(testSelector))
	if err != nil {
		t.Fatal(err)
	}
	hold, err := time.ParseDuration(r.For)
	if err != nil {
		t.Fatal(err)
	}
	ar := rules.NewAlertingRule(r.Alert, expr, hold, 0, labels.EmptyLabels(), labels.EmptyLabels(), labels.EmptyLabels(), "", true, slog.New(slog.DiscardHandler))
	query := rules.EngineQueryFunc(engine, storage)
	for ts := time.Duration(0); ts <= at; ts += time.Minute {
		if _, err := ar.Eval(context.Background(), 0, time.Unix(0, 0).Add(ts).UTC(), query, nil, 0); err != nil {
			t.Fatalf("%s at %s: %v", r.Alert, ts, err)
		}
	}
	var out []string
	for _, a := range ar.ActiveAlerts() {
		if a.State == rules.StateFiring {
			out = append(out, a.Labels.String())
		}
	}
	slices.Sort(out)
	return out
}

// A series of this release and one of another agent in the same namespace.
const (
	this  = `namespace="agents", job="agent-metrics"`
	other = `namespace="agents", job="other-metrics"`
)

func series(name, labels, values string) string {
	return "  " + name + "{" + labels + "} " + values + "\n"
}

// alternating is a metric that changes a label back and forth as the
// agent reports it: labels a for aMinutes, then labels b for bMinutes, and
// so on for minutes; the series that goes away gets a staleness marker,
// as Prometheus gives it on the next scrape.
func alternating(name, labels, a, aValue, b, bValue string, aMinutes, bMinutes, minutes int) string {
	var va, vb []string
	for i := range minutes {
		inA := i%(aMinutes+bMinutes) < aMinutes
		va = append(va, present(inA, aValue, len(va) > 0 && va[len(va)-1] == aValue))
		vb = append(vb, present(!inA, bValue, len(vb) > 0 && vb[len(vb)-1] == bValue))
	}
	return series(name, labels+", "+a, strings.Join(va, " ")) + series(name, labels+", "+b, strings.Join(vb, " "))
}

// present is one sample: value, a staleness marker right after the series
// was there, or none.
func present(on bool, value string, wasOn bool) string {
	switch {
	case on:
		return value
	case wasOn:
		return "stale"
	}
	return "_"
}

// ruleCase is one scenario of an alert: series, when to look, and the
// alerts that fire then (none: silent).
type ruleCase struct {
	name string
	load string
	at   time.Duration
	want []string
}

// ruleCases are, per alert, the scenarios in which it must fire and those
// in which it must stay silent.
var ruleCases = map[string][]ruleCase{
	"SyncAgentDown": {
		{name: "every replica down", at: 6 * time.Minute,
			load: series("up", this+`, pod="a"`, "0x10") + series("up", this+`, pod="b"`, "0x10"),
			want: []string{`{alertname="SyncAgentDown"}`}},
		{name: "nothing scraped at all (another agent is)", at: 6 * time.Minute,
			load: series("up", other+`, pod="c"`, "1x10"),
			want: []string{`{alertname="SyncAgentDown"}`}},
		{name: "one replica up", at: 10 * time.Minute,
			load: series("up", this+`, pod="a"`, "1x10") + series("up", this+`, pod="b"`, "0x10")},
		{name: "down for less than 5 minutes", at: 10 * time.Minute,
			load: series("up", this+`, pod="a"`, "0x3 1x7")},
	},
	"SyncAgentNoLeader": {
		{name: "replicas up, none leads", at: 6 * time.Minute,
			load: series("up", this+`, pod="a"`, "1x10") + series("up", this+`, pod="b"`, "1x10") +
				series("leader_election_master_status", this+`, pod="a", name="syncagent.agent"`, "0x10"),
			want: []string{`{alertname="SyncAgentNoLeader"}`}},
		{name: "no leader metric at all (no replica ever led)", at: 6 * time.Minute,
			load: series("up", this+`, pod="a"`, "1x10"),
			want: []string{`{alertname="SyncAgentNoLeader"}`}},
		{name: "another agent's leader does not count", at: 6 * time.Minute,
			load: series("up", this+`, pod="a"`, "1x10") +
				series("leader_election_master_status", other+`, pod="c", name="syncagent.other"`, "1x10"),
			want: []string{`{alertname="SyncAgentNoLeader"}`}},
		{name: "one replica leads", at: 10 * time.Minute,
			load: series("up", this+`, pod="a"`, "1x10") + series("up", this+`, pod="b"`, "1x10") +
				series("leader_election_master_status", this+`, pod="a", name="syncagent.agent"`, "1x10") +
				series("leader_election_master_status", this+`, pod="b", name="syncagent.agent"`, "0x10")},
		{name: "no replica up (SyncAgentDown's case)", at: 10 * time.Minute,
			load: series("up", this+`, pod="a"`, "0x10")},
		{name: "a handover: the leader goes, the standby leads a minute later", at: 15 * time.Minute,
			load: series("up", this+`, pod="a"`, "1x5 0x10") + series("up", this+`, pod="b"`, "1x15") +
				series("leader_election_master_status", this+`, pod="a", name="syncagent.agent"`, "1x5") +
				series("leader_election_master_status", this+`, pod="b", name="syncagent.agent"`, "0x6 1x9")},
		// Known and said in the alert: a leader Prometheus cannot scrape
		// looks like none.
		{name: "the leader runs but cannot be scraped", at: 10 * time.Minute,
			load: series("up", this+`, pod="a"`, "0x10") + series("up", this+`, pod="b"`, "1x10") +
				series("leader_election_master_status", this+`, pod="b", name="syncagent.agent"`, "0x10"),
			want: []string{`{alertname="SyncAgentNoLeader"}`}},
	},
	"SyncAgentPublishedResourceNotReady": {
		{name: "an unreachable endpoint for 10 minutes", at: 11 * time.Minute,
			load: series("sync_agent_published_resource_ready", this+`, pod="a", published_resource="things", reason="EndpointUnreachable"`, "0x15") +
				series("sync_agent_published_resource_ready", this+`, pod="a", published_resource="widgets", reason="Ready"`, "1x15"),
			want: []string{`{alertname="SyncAgentPublishedResourceNotReady", namespace="agents", published_resource="things"}`}},
		{name: "a controller that keeps failing and retrying (its reason changes)", at: 30 * time.Minute,
			load: alternating("sync_agent_published_resource_ready", this+`, pod="a", published_resource="things"`,
				`reason="ControllerStartFailed"`, "0", `reason="ControllerStarting"`, "0", 5, 1, 40),
			want: []string{`{alertname="SyncAgentPublishedResourceNotReady", namespace="agents", published_resource="things"}`}},
		{name: "no consumer yet does not page", at: 30 * time.Minute,
			load: series("sync_agent_published_resource_ready", this+`, pod="a", published_resource="things", reason="NoEndpoints"`, "0x40")},
		{name: "synchronization turned off", at: 30 * time.Minute,
			load: series("sync_agent_published_resource_ready", this+`, pod="a", published_resource="things", reason="SyncDisabled"`, "0x40")},
		{name: "not ready for less than 10 minutes", at: 15 * time.Minute,
			load: series("sync_agent_published_resource_ready", this+`, pod="a", published_resource="things", reason="ControllerStarting"`, "0x5 _x3") +
				series("sync_agent_published_resource_ready", this+`, pod="a", published_resource="things", reason="Ready"`, "_x6 1x10")},
		{name: "another agent's PublishedResource", at: 30 * time.Minute,
			load: series("sync_agent_published_resource_ready", other+`, pod="c", published_resource="things", reason="SchemaConflict"`, "0x40")},
	},
	"SyncAgentSyncErrors": {
		{name: "10 failed passes a minute", at: 30 * time.Minute,
			load: series("sync_agent_sync_errors_total", this+`, pod="a", published_resource="things", reason="Forbidden"`, "0+10x40"),
			want: []string{`{alertname="SyncAgentSyncErrors", namespace="agents", published_resource="things", reason="Forbidden"}`}},
		{name: "one failed pass a minute", at: 30 * time.Minute,
			load: series("sync_agent_sync_errors_total", this+`, pod="a", published_resource="things", reason="Forbidden"`, "0+1x40")},
	},
	"SyncAgentQueueStuck": {
		{name: "the oldest event keeps ageing", at: 12 * time.Minute,
			load: series("sync_agent_queue_oldest_item_age_seconds", this+`, pod="a", published_resource="things"`, "0+60x20"),
			want: []string{`{alertname="SyncAgentQueueStuck", namespace="agents", published_resource="things"}`}},
		{name: "events wait seconds", at: 20 * time.Minute,
			load: series("sync_agent_queue_oldest_item_age_seconds", this+`, pod="a", published_resource="things"`, "3x20")},
	},
	"SyncAgentNoEndpoint": {
		{name: "no endpoint for half an hour with PublishedResources", at: 31 * time.Minute,
			load: series("sync_agent_endpoints_connected", this+`, pod="a"`, "0x40") + series("sync_agent_published_resource", this+`, pod="a"`, "2x40"),
			want: []string{`{alertname="SyncAgentNoEndpoint", namespace="agents"}`}},
		{name: "connected", at: 40 * time.Minute,
			load: series("sync_agent_endpoints_connected", this+`, pod="a"`, "1x40") + series("sync_agent_published_resource", this+`, pod="a"`, "2x40")},
		{name: "nothing published", at: 40 * time.Minute,
			load: series("sync_agent_endpoints_connected", this+`, pod="a"`, "0x40") + series("sync_agent_published_resource", this+`, pod="a"`, "0x40")},
	},
	"SyncAgentSyncControllerFailed": {
		{name: "a controller failed for 15 minutes", at: 16 * time.Minute,
			load: series("sync_agent_sync_controllers_by_state", this+`, pod="a", state="failed"`, "1x20") +
				series("sync_agent_sync_controllers_by_state", this+`, pod="a", state="running"`, "2x20"),
			want: []string{`{alertname="SyncAgentSyncControllerFailed", namespace="agents"}`}},
		{name: "a controller that keeps failing and retrying", at: 30 * time.Minute,
			load: series("sync_agent_sync_controllers_by_state", this+`, pod="a", state="failed"`, "1x4 0x0 1x4 0x0 1x4 0x0 1x4 0x0 1x4 0x0 1x4 0x0 1x4"),
			want: []string{`{alertname="SyncAgentSyncControllerFailed", namespace="agents"}`}},
		{name: "every controller runs", at: 15 * time.Minute,
			load: series("sync_agent_sync_controllers_by_state", this+`, pod="a", state="failed"`, "0x15")},
		{name: "one failure that a retry fixed", at: 40 * time.Minute,
			load: series("sync_agent_sync_controllers_by_state", this+`, pod="a", state="failed"`, "0x5 1x3 0x40")},
	},
	"SyncAgentKubeconfigReloadFailed": {
		{name: "the new kubeconfig is rejected", at: 6 * time.Minute,
			load: series("sync_agent_kcp_kubeconfig_reload_failed", this+`, pod="a"`, "1x10"),
			want: []string{`{alertname="SyncAgentKubeconfigReloadFailed", namespace="agents", pod="a"}`}},
		{name: "the last reload worked", at: 10 * time.Minute,
			load: series("sync_agent_kcp_kubeconfig_reload_failed", this+`, pod="a"`, "0x10")},
	},
	"SyncAgentPatrolDrift": {
		{name: "missing copies found for hours", at: 200 * time.Minute,
			load: series("sync_agent_patrol_drift_found_total", this+`, pod="a", published_resource="things", kind="missing-copy"`, "0+1x200"),
			want: []string{`{alertname="SyncAgentPatrolDrift", kind="missing-copy", namespace="agents", published_resource="things"}`}},
		{name: "differing copies are the patrol's normal work", at: 200 * time.Minute,
			load: series("sync_agent_patrol_drift_found_total", this+`, pod="a", published_resource="things", kind="copy-differs"`, "0+1x200")},
		{name: "drift found once", at: 200 * time.Minute,
			load: series("sync_agent_patrol_drift_found_total", this+`, pod="a", published_resource="things", kind="missing-copy"`, "0x10 1x190")},
	},
}

// TestAlertRules runs each alert over the scenarios in which it must fire
// and those in which it must stay silent; every alert has both.
func TestAlertRules(t *testing.T) {
	shipped := alertRules(t)
	for name := range shipped {
		cases := ruleCases[name]
		fires, silent := false, false
		for _, c := range cases {
			fires, silent = fires || len(c.want) > 0, silent || len(c.want) == 0
		}
		if !fires || !silent {
			t.Errorf("%s: no scenario in which it fires (%v) or stays silent (%v)", name, fires, silent)
		}
	}
	for name, cases := range ruleCases {
		r, ok := shipped[name]
		if !ok {
			t.Errorf("scenarios for %s, which files/alerts.yaml does not have", name)
			continue
		}
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				got := firing(t, r, c.load, c.at)
				if !slices.Equal(got, c.want) {
					t.Errorf("at %s: firing %v, want %v", c.at, got, c.want)
				}
			})
		}
	}
}
