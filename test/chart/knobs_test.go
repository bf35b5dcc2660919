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
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// knobs sets the values people reach for first: an image pinned by
// digest, other keys in the kubeconfig Secrets, environment variables.
func knobs() map[string]any {
	return with(map[string]any{
		"image":            map[string]any{"digest": testDigest},
		"kubeconfig":       "service-kc",
		"kcpKubeconfigKey": "kcp.yaml",
		"kubeconfigKey":    "service.yaml",
		"partition":        "eu",
		"agentName":        "things",
		"extraEnv": []any{
			map[string]any{"name": "GOMEMLIMIT", "value": "400MiB"},
			map[string]any{"name": "HTTPS_PROXY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "proxy", "key": "url"}}},
		},
	})
}

// TestRender_knobs: each knob shows in the Pod as a user would check it.
func TestRender_knobs(t *testing.T) {
	objs := render(t, knobs())
	d := get[appsv1.Deployment](t, objs, "Deployment", fullname)
	c := agentContainer(t, d)

	t.Run("image.digest pins the image and leaves the tag out", func(t *testing.T) {
		diff(t, "image", "ghcr.io/kcp-syncagent/api-syncagent@"+testDigest, c.Image)
	})
	t.Run("kubeconfig keys", func(t *testing.T) {
		for _, want := range []string{"--kcp-kubeconfig=/etc/api-syncagent/kcp/kcp.yaml", "--kubeconfig=/etc/api-syncagent/cluster/service.yaml"} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("args = %v, want %s", c.Args, want)
			}
		}
		// The whole Secret is mounted: the flag names the key's file.
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && len(v.Secret.Items) > 0 {
				t.Errorf("volume %s mounts only some keys: %v", v.Name, v.Secret.Items)
			}
		}
	})
	t.Run("partition labels the Pods and joins the selector", func(t *testing.T) {
		if d.Spec.Template.Labels["syncagent.kcp.io/partition"] != "eu" || d.Spec.Selector.MatchLabels["syncagent.kcp.io/partition"] != "eu" {
			t.Errorf("pod labels %v, selector %v; want syncagent.kcp.io/partition=eu in both", d.Spec.Template.Labels, d.Spec.Selector.MatchLabels)
		}
	})
	t.Run("extraEnv comes after the chart's own variables", func(t *testing.T) {
		var names []string
		for _, e := range c.Env {
			names = append(names, e.Name)
		}
		diff(t, "env names", []string{"POD_NAMESPACE", "AGENT_NAME", "GOMEMLIMIT", "HTTPS_PROXY"}, names)
		proxy := c.Env[3]
		if proxy.ValueFrom == nil || proxy.ValueFrom.SecretKeyRef == nil || proxy.ValueFrom.SecretKeyRef.Key != "url" {
			t.Errorf("HTTPS_PROXY = %+v, want its valueFrom kept", proxy)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		c := agentContainer(t, get[appsv1.Deployment](t, render(t, required()), "Deployment", fullname))
		if !slices.Contains(c.Args, "--kcp-kubeconfig=/etc/api-syncagent/kcp/kubeconfig") || len(c.Env) != 2 || strings.Contains(c.Image, "@") {
			t.Errorf("defaults: image %q, args %v, env %v", c.Image, c.Args, c.Env)
		}
	})
}

// TestRender_podDisruptionBudget: on by default whenever two or more
// replicas run, never for one (it would block every drain or protect
// nothing), never when turned off.
func TestRender_podDisruptionBudget(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   bool
	}{
		{"default (2 replicas)", nil, true},
		{"3 replicas", map[string]any{"replicas": 3}, true},
		{"1 replica", map[string]any{"replicas": 1}, false},
		{"turned off", map[string]any{"podDisruptionBudget": map[string]any{"enabled": false}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, with(tt.values))
			pdb := Find(objs, "PodDisruptionBudget", fullname)
			if (pdb != nil) != tt.want {
				t.Fatalf("PodDisruptionBudget rendered: %v, want %v", pdb != nil, tt.want)
			}
			if pdb == nil {
				return
			}
			spec := get[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", fullname).Spec
			if spec.MaxUnavailable == nil || spec.MaxUnavailable.IntValue() != 1 || spec.MinAvailable != nil {
				t.Errorf("PDB spec = %+v, want maxUnavailable 1", spec)
			}
			// Replicas that are not ready (kcp down makes all of them so)
			// never hold a drain up.
			if p := spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
				t.Errorf("unhealthyPodEvictionPolicy = %v, want AlwaysAllow", p)
			}
		})
	}
}

// TestRender_refusesWhatBlocksOrDoubles: values that would block every
// node drain (a budget that allows no eviction) or run two writers (more
// than one replica without leader election) are refused with the reason.
func TestRender_refusesWhatBlocksOrDoubles(t *testing.T) {
	pdb := func(k string, v any) map[string]any {
		return map[string]any{"podDisruptionBudget": map[string]any{k: v}}
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"maxUnavailable 0", pdb("maxUnavailable", 0), "allows no eviction"},
		{"maxUnavailable 0%", pdb("maxUnavailable", "0%"), "allows no eviction"},
		{"minAvailable 100%", pdb("minAvailable", "100%"), "allows no eviction"},
		{"minAvailable of every replica", pdb("minAvailable", 2), "allows no eviction"},
		{"minAvailable above the replicas", pdb("minAvailable", "5"), "allows no eviction"},
		{"two replicas without leader election", map[string]any{"enableLeaderElection": false}, "need enableLeaderElection"},
		{"a partition without an agent name", map[string]any{"partition": "eu"}, "partition needs agentName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(release, namespace, with(tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	// What still renders: a budget that lets one go, one replica without
	// leader election (replaced, not surged).
	if _, err := Render(release, namespace, with(pdb("minAvailable", 1))); err != nil {
		t.Errorf("minAvailable 1 of 2: %v", err)
	}
	d := get[appsv1.Deployment](t, render(t, with(map[string]any{"enableLeaderElection": false, "replicas": 1})), "Deployment", fullname)
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("one replica without leader election: strategy %q, want Recreate", d.Spec.Strategy.Type)
	}
}

// TestSchema_rejectsBadKnobs: values the schema refuses before anything
// renders.
func TestSchema_rejectsBadKnobs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"a digest without its algorithm", map[string]any{"image": map[string]any{"digest": "0123abcd"}}, "digest"},
		{"a key with a slash", map[string]any{"kcpKubeconfigKey": "../kubeconfig"}, "kcpKubeconfigKey"},
		{"an env entry without a name", map[string]any{"extraEnv": []any{map[string]any{"value": "x"}}}, "name"},
		{"an env entry that replaces the chart's", map[string]any{"extraEnv": []any{map[string]any{"name": "AGENT_NAME", "value": "x"}}}, "extraEnv"},
		{"an env entry with value and valueFrom", map[string]any{"extraEnv": []any{map[string]any{"name": "X", "value": "x", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}}}, "extraEnv"},
		{"an empty valueFrom", map[string]any{"extraEnv": []any{map[string]any{"name": "X", "valueFrom": map[string]any{}}}}, "valueFrom"},
		{"a valueFrom source that is no object", map[string]any{"extraEnv": []any{map[string]any{"name": "X", "valueFrom": map[string]any{"secretKeyRef": "oops"}}}}, "secretKeyRef"},
		{"a valueFrom with an unknown source", map[string]any{"extraEnv": []any{map[string]any{"name": "X", "valueFrom": map[string]any{"vaultRef": map[string]any{}}}}}, "valueFrom"},
		{"an env name with =", map[string]any{"extraEnv": []any{map[string]any{"name": "A=B", "value": "x"}}}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(release, namespace, with(tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a schema error naming %q", err, tc.want)
			}
		})
	}
}

// TestNotes_referenceImage: a values file that still pins the reference's
// image runs the reference agent; the notes after the install say so.
func TestNotes_referenceImage(t *testing.T) {
	for _, tc := range []struct {
		repository string
		warned     bool
	}{
		{"ghcr.io/kcp-dev/api-syncagent", true},
		{"mirror.example.com/kcp-dev/api-syncagent", true},
		{"ghcr.io/kcp-syncagent/api-syncagent", false},
	} {
		notes, err := Notes(release, namespace, with(map[string]any{"image": map[string]any{"repository": tc.repository}}))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(notes, "runs the reference agent"); got != tc.warned {
			t.Errorf("image.repository %s: warned %v, want %v:\n%s", tc.repository, got, tc.warned, notes)
		}
	}
}

// TestRender_longReleaseName: with the longest release name Helm allows,
// every Service name fits (63 characters, DNS-1035), and the alerts and
// the dashboard read the job of the Service that exists.
func TestRender_longReleaseName(t *testing.T) {
	long := strings.Repeat("r", 50) + "-xx" // 53 characters
	values := with(map[string]any{"metrics": map[string]any{
		"dashboard":      map[string]any{"enabled": true},
		"serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true},
	}})
	objs, err := Render(long, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, o := range objs {
		if o.GetKind() != "Service" {
			continue
		}
		services = append(services, o.GetName())
		if errs := validation.IsDNS1035Label(o.GetName()); len(errs) > 0 {
			t.Errorf("Service %q: %v", o.GetName(), errs)
		}
	}
	if len(services) != 1 {
		t.Fatalf("Services %v, want the metrics Service", services)
	}
	job := fmt.Sprintf("job=%q", services[0])
	for _, o := range objs {
		if o.GetKind() != "PrometheusRule" && o.GetKind() != "ConfigMap" {
			continue
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		if text := strings.ReplaceAll(string(data), `\"`, `"`); !strings.Contains(text, job) && !strings.Contains(text, services[0]) {
			t.Errorf("%s %s does not name the metrics Service %s as its job", o.GetKind(), o.GetName(), services[0])
		}
	}
}
