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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// TestPartitionReleases: the two releases of docs/partitions, installed
// into one namespace, render no object twice (the second install would
// fail), share the agent name, name each its own endpoint slice, and
// only the eu release publishes and installs the CRD.
func TestPartitionReleases(t *testing.T) {
	seen := map[string]string{}
	agents := map[string][]string{}
	podLabels := map[string]map[string]string{}
	serviceLabels := map[string]map[string]string{}        // release → its metrics Service's labels
	monitors := map[string]map[string]string{}             // release → its ServiceMonitor's selector
	selectors := map[string]map[string]map[string]string{} // release → object → matchLabels
	for _, release := range []string{"things-eu", "things-us"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "docs", "partitions", "values-"+strings.TrimPrefix(release, "things-")+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		values := map[string]any{}
		if err := yaml.Unmarshal(data, &values); err != nil {
			t.Fatal(err)
		}
		// With the ServiceMonitor on, as a monitored installation runs.
		values["metrics"] = map[string]any{"serviceMonitor": map[string]any{"enabled": true}}
		objs, err := Render(release, "things", values)
		if err != nil {
			t.Fatalf("%s: %v", release, err)
		}
		for _, o := range objs {
			id := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
			if other, dup := seen[id]; dup {
				t.Errorf("%s is rendered by %s and %s", id, other, release)
			}
			seen[id] = release
			if o.GetKind() == "CustomResourceDefinition" && release != "things-eu" {
				t.Errorf("%s installs the CRD too", release)
			}
		}
		var d *appsv1.Deployment
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				d = get[appsv1.Deployment](t, objs, "Deployment", o.GetName())
			}
		}
		if d == nil {
			t.Fatalf("%s renders no Deployment", release)
		}
		podLabels[release] = d.Spec.Template.Labels
		for _, o := range objs {
			if o.GetKind() == "Service" {
				serviceLabels[release] = o.GetLabels()
			}
		}
		selectors[release] = map[string]map[string]string{}
		for _, o := range objs {
			var sel map[string]any
			switch o.GetKind() {
			case "Deployment", "PodDisruptionBudget":
				sel, _, _ = unstructured.NestedMap(o.Object, "spec", "selector", "matchLabels")
			case "Service":
				sel, _, _ = unstructured.NestedMap(o.Object, "spec", "selector")
			case "ServiceMonitor":
				// It selects Services, not Pods.
				sel, _, _ = unstructured.NestedMap(o.Object, "spec", "selector", "matchLabels")
				monitors[release] = map[string]string{}
				for k, v := range sel {
					monitors[release][k] = fmt.Sprint(v)
				}
				continue
			}
			if sel != nil {
				m := map[string]string{}
				for k, v := range sel {
					m[k] = fmt.Sprint(v)
				}
				selectors[release][o.GetKind()+" "+o.GetName()] = m
			}
		}
		c := agentContainer(t, d)
		agents[release] = c.Args
		for _, e := range c.Env {
			if e.Name == "AGENT_NAME" && e.Value != "things" {
				t.Errorf("%s: agent name %q, want things (the same in both)", release, e.Value)
			}
		}
	}
	// No selector of one release takes the other's Pods (two budgets on
	// one Pod refuse every eviction; a Service would scrape both).
	for release, objects := range selectors {
		for other, pods := range podLabels {
			for object, sel := range objects {
				if matches := labels.SelectorFromSet(sel).Matches(labels.Set(pods)); matches != (release == other) {
					t.Errorf("%s %s selects the Pods of %s: %v", release, object, other, matches)
				}
			}
		}
	}
	// Each ServiceMonitor scrapes its own release's Service, not the other's.
	for release, sel := range monitors {
		for other, svc := range serviceLabels {
			if matches := labels.SelectorFromSet(sel).Matches(labels.Set(svc)); matches != (release == other) {
				t.Errorf("%s's ServiceMonitor selects the Service of %s: %v", release, other, matches)
			}
		}
	}
	if len(monitors) != 2 || len(serviceLabels) != 2 {
		t.Errorf("ServiceMonitors of %d releases, Services of %d: want both", len(monitors), len(serviceLabels))
	}
	has := func(release, arg string) bool { return slices.Contains(agents[release], arg) }
	for release, slice := range map[string]string{"things-eu": "things-eu", "things-us": "things-us"} {
		if !has(release, "--apiexportendpointslice-ref="+slice) {
			t.Errorf("%s: args %v lack its slice %s", release, agents[release], slice)
		}
	}
	if !has("things-us", "--disabled-controllers=apiresourceschema,apiexport") || slices.ContainsFunc(agents["things-eu"], func(a string) bool { return strings.HasPrefix(a, "--disabled-controllers") }) {
		t.Errorf("only the eu release publishes: eu %v, us %v", agents["things-eu"], agents["things-us"])
	}
	if !seenWithPrefix(seen, "CustomResourceDefinition ") {
		t.Error("no release installs the CRD")
	}
}

func seenWithPrefix(seen map[string]string, prefix string) bool {
	for id := range seen {
		if strings.HasPrefix(id, prefix) {
			return true
		}
	}
	return false
}
