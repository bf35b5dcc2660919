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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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

// dashboardID is the id of the dashboard of the release whose full name is
// fullname in namespace: the start of the SHA-256 of "namespace/fullname".
func dashboardID(namespace, fullname string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + fullname))
	return hex.EncodeToString(sum[:])[:16]
}

// dashboardConfigMap is the name of the dashboard ConfigMap of the release
// whose full name is fullname in namespace.
func dashboardConfigMap(namespace, fullname string) string {
	return strings.TrimSuffix(fullname[:min(len(fullname), 36)], "-") + "-dashboard-" + dashboardID(namespace, fullname)
}

// fullnameOf is the chart's full name of a release (no overrides): the
// release's name if it holds the chart's, else both.
func fullnameOf(release string) string {
	if strings.Contains(release, "api-syncagent") {
		return release
	}
	return release + "-api-syncagent"
}

// renderDashboard renders the dashboard ConfigMap of release in namespace
// and returns its file name and dashboard.
func renderDashboard(t *testing.T, release, namespace string) (string, dashboard) {
	t.Helper()
	objs, err := Render(release, namespace, with(map[string]any{"metrics": map[string]any{"dashboard": map[string]any{"enabled": true, "namespace": "monitoring"}}}))
	if err != nil {
		t.Fatal(err)
	}
	name := dashboardConfigMap(namespace, fullnameOf(release))
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || len(name) > 63 {
		t.Errorf("dashboard ConfigMap name %q: %v", name, errs)
	}
	cm := get[corev1.ConfigMap](t, objs, "ConfigMap", name)
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
	for _, pair := range [][2][2]string{
		{{"agent", "team-a"}, {"agent", "team-b"}},
		// Names and namespaces with dashes that join to the same words.
		{{"agent", "team-a"}, {"agent-api-syncagent-team", "a"}},
		{{"agent", "team-a"}, {"a-agent-api-syncagent", "team"}},
	} {
		keyA, a := renderDashboard(t, pair[0][0], pair[0][1]) // renderDashboard finds the ConfigMap by its name
		keyB, b := renderDashboard(t, pair[1][0], pair[1][1])
		cmA := dashboardConfigMap(pair[0][1], fullnameOf(pair[0][0]))
		cmB := dashboardConfigMap(pair[1][1], fullnameOf(pair[1][0]))
		if a.UID == b.UID || keyA == keyB || cmA == cmB {
			t.Errorf("%v: uid %q/%q, file %q/%q, ConfigMap %q/%q", pair, a.UID, b.UID, keyA, keyB, cmA, cmB)
		}
	}
}
