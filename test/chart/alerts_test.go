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

package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// alertFile is files/alerts.yaml: the rules before the chart fills them
// in.
type alertFile struct {
	Rules []struct {
		Alert     string   `json:"alert"`
		Expr      string   `json:"expr"`
		Threshold *float64 `json:"threshold"`
		For       string   `json:"for"`
		Severity  string   `json:"severity"`
	} `json:"rules"`
}

func readAlertFile(t *testing.T) alertFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f alertFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// renderedRule is one rule of the rendered PrometheusRule.
type renderedRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func renderedRules(t *testing.T, values map[string]any) map[string]renderedRule {
	t.Helper()
	rule := Find(render(t, values), "PrometheusRule", fullname)
	if rule == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	out := map[string]renderedRule{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			data, err := yaml.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var rr renderedRule
			if err := yaml.Unmarshal(data, &rr); err != nil {
				t.Fatal(err)
			}
			out[rr.Alert] = rr
		}
	}
	return out
}

// alertsOn turns the rules on, with the ServiceMonitor whose job they
// select by default.
func alertsOn(extra map[string]any) map[string]any {
	rule := map[string]any{"enabled": true}
	for k, v := range extra {
		rule[k] = v
	}
	return with(map[string]any{"metrics": map[string]any{"prometheusRule": rule, "serviceMonitor": map[string]any{"enabled": true}}})
}

// TestPrometheusRule_defaults: every alert of files/alerts.yaml is rendered
// with its expression scoped to this release's series (no placeholder
// left), its for, severity, the release's namespace and agent name as
// labels, and a runbook_url whose anchor is a section of
// docs/troubleshooting.md.
func TestPrometheusRule_defaults(t *testing.T) {
	file := readAlertFile(t)
	rules := renderedRules(t, alertsOn(nil))
	if len(rules) != len(file.Rules) || len(rules) < 9 {
		t.Fatalf("rendered %d rules, files/alerts.yaml has %d", len(rules), len(file.Rules))
	}
	selector := `namespace="syncagent", job="agent-api-syncagent-metrics"`
	anchors := troubleshootingAnchors(t)
	for _, f := range file.Rules {
		r, ok := rules[f.Alert]
		if !ok {
			t.Errorf("%s is not rendered", f.Alert)
			continue
		}
		want := strings.ReplaceAll(f.Expr, "__SELECTOR__", selector)
		if f.Threshold != nil {
			want = strings.ReplaceAll(want, "__THRESHOLD__", strconv.FormatFloat(*f.Threshold, 'f', -1, 64))
		}
		if r.Expr != want {
			t.Errorf("%s: expr\n  %s\nwant\n  %s", f.Alert, r.Expr, want)
		}
		if strings.Contains(r.Expr, "__") {
			t.Errorf("%s: a placeholder is left: %s", f.Alert, r.Expr)
		}
		// Every selector of the expression names this release's series.
		for _, sel := range regexp.MustCompile(`[a-z_]+\{[^}]*\}`).FindAllString(r.Expr, -1) {
			if !strings.Contains(sel, selector) {
				t.Errorf("%s: %s is not scoped to the release (%s)", f.Alert, sel, selector)
			}
		}
		if r.For != f.For || r.Labels["severity"] != f.Severity || r.Labels["namespace"] != namespace || r.Labels["agent"] != release {
			t.Errorf("%s: for %q, labels %v", f.Alert, r.For, r.Labels)
		}
		url := r.Annotations["runbook_url"]
		if !strings.HasPrefix(url, "https://github.com/kcp-syncagent/api-syncagent/blob/v0.1.0/docs/troubleshooting.md#") {
			t.Errorf("%s: runbook_url %q", f.Alert, url)
		} else if anchor := url[strings.Index(url, "#")+1:]; !anchors[anchor] {
			t.Errorf("%s: runbook_url %q: docs/troubleshooting.md has no section #%s", f.Alert, url, anchor)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: annotations %v", f.Alert, r.Annotations)
		}
	}
}

// troubleshootingAnchors are the anchors GitHub gives the headings of
// docs/troubleshooting.md.
func troubleshootingAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "..", "..", "..", "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(data), -1) {
		a := strings.ToLower(m[1])
		a = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(a, "")
		out[strings.ReplaceAll(a, " ", "-")] = true
	}
	return out
}

// TestPrometheusRule_values: the values change single alerts, the labels
// and the selector, and typos fail the install instead of being ignored.
func TestPrometheusRule_values(t *testing.T) {
	rules := renderedRules(t, alertsOn(map[string]any{
		"selector":       `job="syncagent"`,
		"alertLabels":    map[string]any{"team": "platform"},
		"runbookBaseURL": "https://wiki.example.com/agent",
		"alerts": map[string]any{
			"SyncAgentPatrolDrift": map[string]any{"enabled": false},
			"SyncAgentQueueStuck":  map[string]any{"threshold": 600, "for": "15m", "severity": "critical"},
		},
	}))
	if _, ok := rules["SyncAgentPatrolDrift"]; ok {
		t.Error("SyncAgentPatrolDrift rendered with enabled: false")
	}
	q := rules["SyncAgentQueueStuck"]
	if !strings.HasSuffix(q.Expr, "> 600") || q.For != "15m" || q.Labels["severity"] != "critical" {
		t.Errorf("SyncAgentQueueStuck = %+v, want threshold 600, for 15m, critical", q)
	}
	for name, r := range rules {
		// A matcher on namespace (by and on clauses name it without "=").
		if regexp.MustCompile(`namespace\s*=~?\s*"`).MatchString(r.Expr) {
			t.Errorf("%s: %s still selects by namespace with selector set", name, r.Expr)
		}
		if !strings.Contains(r.Expr, `job="syncagent"`) {
			t.Errorf("%s: %s does not use the selector", name, r.Expr)
		}
		if r.Labels["team"] != "platform" {
			t.Errorf("%s: labels %v lack alertLabels", name, r.Labels)
		}
		if !strings.HasPrefix(r.Annotations["runbook_url"], "https://wiki.example.com/agent#") {
			t.Errorf("%s: runbook_url %q", name, r.Annotations["runbook_url"])
		}
	}

	noElection := alertsOn(nil)
	noElection["enableLeaderElection"], noElection["replicas"] = false, 1
	if _, ok := renderedRules(t, noElection)["SyncAgentNoLeader"]; ok {
		t.Error("SyncAgentNoLeader rendered without leader election (it would fire all the time)")
	}

	for _, tc := range []struct {
		name   string
		alerts map[string]any
		want   string
	}{
		{"an unknown alert", map[string]any{"SyncAgentQueueStruck": map[string]any{"enabled": false}}, "no such alert"},
		{"a threshold for an alert without one", map[string]any{"SyncAgentDown": map[string]any{"threshold": 1}}, "has no threshold"},
		{"a bad duration", map[string]any{"SyncAgentDown": map[string]any{"for": "5 minutes"}}, "for"},
	} {
		_, err := Render(release, namespace, alertsOn(map[string]any{"alerts": tc.alerts}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"a selector in braces", alertsOn(map[string]any{"selector": `{job="x"}`}), "selector"},
		{"a blank selector", alertsOn(map[string]any{"selector": "  "}), "selector"},
		{"an alert label that replaces the chart's", alertsOn(map[string]any{"alertLabels": map[string]any{"severity": "page"}}), "severity"},
		{"an alert label Prometheus refuses", alertsOn(map[string]any{"alertLabels": map[string]any{"team-name": "x"}}), "team-name"},
		{"no metrics listener", with(map[string]any{"metrics": map[string]any{"enabled": false, "prometheusRule": map[string]any{"enabled": true, "selector": `job="x"`}}}), "metrics listener"},
		{"neither a ServiceMonitor nor a selector", with(map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}}), "selector"},
	} {
		_, err := Render(release, namespace, tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := Render(release, namespace, with(map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "selector": `job="my-job"`}}})); err != nil {
		t.Errorf("a selector of one's own job without a ServiceMonitor: %v", err)
	}
}
