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
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// dashboard is what the test reads of a rendered Grafana dashboard.
type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
			Current    struct {
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
}

// renderDashboard renders the dashboard ConfigMap of release in namespace
// and returns its file name and dashboard.
func renderDashboard(t *testing.T, release, namespace string) (string, dashboard) {
	t.Helper()
	objs, err := Render(release, namespace, with(map[string]any{"metrics": map[string]any{"dashboard": map[string]any{"enabled": true, "namespace": "monitoring"}}}))
	if err != nil {
		t.Fatal(err)
	}
	cm := get[corev1.ConfigMap](t, objs, "ConfigMap", release+"-api-syncagent-"+namespace+"-dashboard")
	if cm.Namespace != "monitoring" {
		t.Fatalf("dashboard ConfigMap in %q, want metrics.dashboard.namespace", cm.Namespace)
	}
	if len(cm.Data) != 1 {
		t.Fatalf("dashboard ConfigMap data keys: %d, want 1", len(cm.Data))
	}
	for key, data := range cm.Data {
		var d dashboard
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			t.Fatal(err)
		}
		return key, d
	}
	return "", dashboard{}
}

// TestDashboard_twoReleasesInOneNamespace: two releases in one namespace
// get dashboards that Grafana's sidecar keeps apart (uid, title and file
// name differ), each preset to its own release, and every query of both
// is scoped by the cluster, namespace and job variables, so no panel adds
// up several agents unless the viewer picks them.
func TestDashboard_twoReleasesInOneNamespace(t *testing.T) {
	keyA, a := renderDashboard(t, "team-a", namespace)
	keyB, b := renderDashboard(t, "team-b", namespace)
	if a.UID == b.UID || a.Title == b.Title || keyA == keyB {
		t.Errorf("two releases collide: uid %q/%q, title %q/%q, file %q/%q", a.UID, b.UID, a.Title, b.Title, keyA, keyB)
	}
	for _, d := range []dashboard{a, b} {
		if !regexp.MustCompile(`^[a-zA-Z0-9-]{1,40}$`).MatchString(d.UID) {
			t.Errorf("uid %q is not a Grafana uid (up to 40 letters, digits and dashes)", d.UID)
		}
	}
	scope := []string{`cluster=~"$cluster"`, `namespace=~"$namespace"`, `job=~"$job"`}
	selector := regexp.MustCompile(`\b(sync_agent_[a-z_]+|leader_election_[a-z_]+)(\{[^}]*\})?`)
	queries := 0
	for _, p := range a.Panels {
		for _, tg := range p.Targets {
			for _, m := range selector.FindAllStringSubmatch(tg.Expr, -1) {
				queries++
				for _, s := range scope {
					if !strings.Contains(m[2], s) {
						t.Errorf("panel %q: %s lacks %s", p.Title, m[0], s)
					}
				}
			}
		}
	}
	if queries < 15 {
		t.Errorf("found %d selectors in the panels: the extraction is broken", queries)
	}
	vars := map[string]any{}
	for _, v := range a.Templating.List {
		vars[v.Name] = v.Current.Value
		if v.Name == "published_resource" && !strings.Contains(v.Definition, `job=~"$job"`) {
			t.Errorf("the PublishedResource variable lists every agent's: %s", v.Definition)
		}
	}
	for _, name := range []string{"datasource", "cluster", "namespace", "job", "published_resource"} {
		if _, ok := vars[name]; !ok {
			t.Errorf("no %s variable", name)
		}
	}
	if fmt.Sprint(vars["namespace"]) != "["+namespace+"]" || fmt.Sprint(vars["job"]) != "[team-a-api-syncagent-metrics]" {
		t.Errorf("variables preset to namespace %v, job %v; want the release's", vars["namespace"], vars["job"])
	}
}

// TestDashboard_oneNameInTwoNamespaces: releases of one name in two
// namespaces, whose dashboards go to one namespace for the sidecar, do not
// fight over one ConfigMap (the second install would fail) or one uid.
func TestDashboard_oneNameInTwoNamespaces(t *testing.T) {
	keyA, a := renderDashboard(t, "agent", "team-a") // renderDashboard finds the ConfigMap by its name
	keyB, b := renderDashboard(t, "agent", "team-b")
	if a.UID == b.UID || keyA == keyB {
		t.Errorf("uid %q/%q, file %q/%q", a.UID, b.UID, keyA, keyB)
	}
}
