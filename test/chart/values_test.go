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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// allValues sets every value of values.yaml to something other than its
// default; TestRender_allValues asserts the effect of each.
func allValues() map[string]any {
	return map[string]any{
		"global":                     map[string]any{"imagePullSecrets": []any{"pull-a", map[string]any{"name": "pull-b"}}},
		"nameOverride":               "ignored-because-of-fullname",
		"fullnameOverride":           "custom-name",
		"namespaceOverride":          "agents",
		"apiExportEndpointSliceName": "my-slice",
		"apiExportName":              "ignored-because-of-the-slice",
		"agentName":                  "my-agent",
		"kcpKubeconfig":              "kcp-kc",
		"kubeconfig":                 "service-kc",
		"kubeconfigHostOverride":     "https://10.0.0.1:6443",
		"kubeconfigCAFileOverride":   "/etc/ca/ca.crt",
		"endpointURLRewrites":        []any{map[string]any{"from": "https://shard-1.kcp.svc:6443", "to": "https://shard-1.kcp.example.com"}},
		"publishedResourceSelector":  "team in (a,b)",
		"image":                      map[string]any{"repository": "registry.example.com/agent", "tag": "v9", "pullPolicy": "Always"},
		"replicas":                   3,
		"disabledControllers":        []any{"apiexport", "apiresourceschema"},
		"enableImports":              true,
		"namespaceMetadata": map[string]any{
			"labels":      map[string]any{"tenant": "{{ .ClusterName }}", "team": "tenants"},
			"annotations": map[string]any{"example.com/owner": "kcp"},
		},
		"patrol":     map[string]any{"interval": "30m", "mode": "report"},
		"sync":       map[string]any{"workers": 16, "eventLevel": "warning"},
		"rateLimits": map[string]any{"kcpQPS": 50.5, "kcpBurst": 100, "serviceQPS": 1000, "serviceBurst": 2000},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "200m", "memory": "128Mi"},
			"limits":   map[string]any{"cpu": "2", "memory": "1Gi"},
		},
		"crds":           map[string]any{"enabled": false, "keep": false},
		"serviceAccount": map[string]any{"create": true, "automount": false, "annotations": map[string]any{"iam": "role"}, "name": "custom-sa"},
		"rbac": map[string]any{"create": true, "extraRules": []any{map[string]any{
			"apiGroups": []any{"example.com"}, "resources": []any{"things"},
			"verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"},
		}}},
		"annotations":    map[string]any{"rbac-note": "yes"},
		"health":         map[string]any{"port": 9001},
		"livenessProbe":  map[string]any{"enabled": false, "initialDelaySeconds": 1, "periodSeconds": 2, "timeoutSeconds": 3, "failureThreshold": 4},
		"readinessProbe": map[string]any{"enabled": false, "initialDelaySeconds": 1, "periodSeconds": 2, "timeoutSeconds": 3, "failureThreshold": 4},
		"metrics": map[string]any{
			"port":    9100,
			"service": map[string]any{"annotations": map[string]any{"svc": "yes"}},
			"serviceMonitor": map[string]any{
				"enabled": true, "labels": map[string]any{"release": "prometheus"}, "interval": "15s", "scrapeTimeout": "10s",
				"relabelings":       []any{map[string]any{"action": "labeldrop", "regex": "pod"}},
				"metricRelabelings": []any{map[string]any{"action": "drop", "regex": "go_.*", "sourceLabels": []any{"__name__"}}},
			},
			"prometheusRule": map[string]any{
				"enabled": true, "labels": map[string]any{"role": "alert-rules"}, "alertLabels": map[string]any{"team": "platform"},
				"selector": `job="agents"`, "runbookBaseURL": "https://docs.example.com/runbooks.md",
				"alerts": map[string]any{"SyncAgentPatrolDrift": map[string]any{"enabled": false}, "SyncAgentQueueStuck": map[string]any{"threshold": 600, "for": "10m", "severity": "critical"}},
			},
			"dashboard": map[string]any{
				"enabled": true, "labels": map[string]any{"grafana_dashboard": "yes"},
				"annotations": map[string]any{"grafana_folder": "kcp"}, "namespace": "monitoring",
			},
		},
		"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": "50%", "maxUnavailable": 2},
		"topologySpreadConstraints": []any{map[string]any{
			"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"x": "y"}},
		}},
		"priorityClassName": "system-cluster-critical",
		"extraFlags":        []any{"--log-format=Console"},
		"extraVolumes":      []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "ca"}}},
		"extraVolumeMounts": []any{map[string]any{"name": "ca", "mountPath": "/etc/ca"}},
		"initContainers":    []any{map[string]any{"name": "wait", "image": "busybox"}},
		"hostAliases":       map[string]any{"enabled": true, "values": []any{map[string]any{"ip": "10.0.0.2", "hostnames": []any{"kcp.internal"}}}},
		"nodeSelector":      map[string]any{"pool": "system"},
		"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"system"}}}}},
		}}},
		"securityContext": map[string]any{
			"pod":   map[string]any{"runAsNonRoot": false, "seccompProfile": map[string]any{"type": "Unconfined"}},
			"agent": map[string]any{"allowPrivilegeEscalation": true, "readOnlyRootFilesystem": false, "capabilities": map[string]any{"drop": []any{"NET_RAW"}}},
		},
		"extraLabels":      map[string]any{"team": "platform"},
		"extraAnnotations": map[string]any{"owner": "me"},
	}
}

// switchesOff turns off what allValues must keep on to render the objects
// it asserts: the metrics listener and Service, the ServiceAccount and RBAC.
func switchesOff() map[string]any {
	return with(map[string]any{
		"metrics":        map[string]any{"enabled": false, "service": map[string]any{"enabled": false}},
		"serviceAccount": map[string]any{"create": false},
		"rbac":           map[string]any{"create": false},
		// Grants no delete and no list of every type.
		"deleteCreatedNamespaces": false,
		"podDisruptionBudget":     map[string]any{"enabled": false},
		// One replica: more need a leader.
		"replicas":             1,
		"enableLeaderElection": false,
	})
}

// nonDefaultValueSets are the value sets that, together, set every value
// of values.yaml to something other than its default.
func nonDefaultValueSets() map[string]map[string]any {
	return map[string]map[string]any{"allValues": allValues(), "switchesOff": switchesOff(), "knobs": knobs()}
}

// leaf is one documented value: its dotted path, its default and the
// description from its "# --" comment.
type leaf struct {
	path        string
	value       any
	description string
}

// valuesLeaves walks values.yaml: every scalar, list and empty map is a
// leaf; maps with content are walked into. The description of a leaf is the
// "# --" comment above its key.
func valuesLeaves(t *testing.T) []leaf {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var out []leaf
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			path := key.Value
			if prefix != "" {
				path = prefix + "." + key.Value
			}
			if val.Kind == yaml.MappingNode && len(val.Content) > 0 {
				walk(path, val)
				continue
			}
			var v any
			if err := val.Decode(&v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, leaf{path: path, value: v, description: description(key.HeadComment)})
		}
	}
	walk("", doc.Content[0])
	return out
}

func description(comment string) string {
	var parts []string
	in := false
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "# -- "):
			in = true
			parts = append(parts, strings.TrimPrefix(line, "# -- "))
		case in && strings.HasPrefix(line, "# "):
			parts = append(parts, strings.TrimPrefix(line, "# "))
		default:
			in = false
		}
	}
	return strings.Join(parts, " ")
}

// leavesOf lists the dotted leaf paths of a values map (maps with content
// are walked into, everything else is a leaf).
func leavesOf(prefix string, m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			for p, sv := range leavesOf(path, sub) {
				out[p] = sv
			}
			continue
		}
		out[path] = v
	}
	return out
}

// TestNonDefaultValuesCoverValuesYAML proves that the render tests set
// every value of values.yaml to a non-default value (allValues, and
// switchesOff for the switches allValues must keep on), and no key that
// values.yaml lacks.
func TestNonDefaultValuesCoverValuesYAML(t *testing.T) {
	leaves := valuesLeaves(t)
	covered := map[string]bool{}
	for name, values := range nonDefaultValueSets() {
		set := leavesOf("", values)
		for _, l := range leaves {
			for p, v := range set {
				// Content below an empty default map (e.g. nodeSelector.pool) sets it.
				if p == l.path && !reflect.DeepEqual(normalize(v), normalize(l.value)) || strings.HasPrefix(p, l.path+".") {
					covered[l.path] = true
				}
			}
		}
	next:
		for p := range set {
			for _, l := range leaves {
				// Free-form content below a leaf (e.g. affinity) is fine.
				if p == l.path || strings.HasPrefix(p, l.path+".") {
					continue next
				}
			}
			t.Errorf("%s sets %s, which values.yaml does not have", name, p)
		}
	}
	for _, l := range leaves {
		if !covered[l.path] {
			t.Errorf("no render test sets %s to a non-default value", l.path)
		}
	}
}

// normalize makes YAML-decoded and Go-literal values comparable.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

const (
	readmeBegin = "<!-- values:begin (generated from values.yaml by `make chart-readme`) -->"
	readmeEnd   = "<!-- values:end -->"
)

// valuesTable renders the README's table of values.
func valuesTable(leaves []leaf) string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, l := range leaves {
		def, _ := json.Marshal(l.value)
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", l.path, typeName(l.value), strings.ReplaceAll(string(def), "|", "\\|"), strings.ReplaceAll(l.description, "|", "\\|"))
	}
	return b.String()
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case int, int64, float64:
		return "int"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// TestREADME checks that every value of values.yaml carries a "# --"
// description and that the table in the chart's README is the one
// generated from values.yaml. UPDATE_README=true (`make chart-readme`)
// rewrites the table instead.
func TestREADME(t *testing.T) {
	leaves := valuesLeaves(t)
	for _, l := range leaves {
		if l.description == "" {
			t.Errorf("values.yaml: %s has no \"# --\" description", l.path)
		}
	}
	path := filepath.Join(Dir(), "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	begin, end := strings.Index(readme, readmeBegin), strings.Index(readme, readmeEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the markers %q and %q", readmeBegin, readmeEnd)
	}
	want := readme[:begin] + readmeBegin + "\n" + valuesTable(leaves) + readme[end:]
	if want == readme {
		return
	}
	if os.Getenv("UPDATE_README") == "true" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md updated")
		return
	}
	t.Errorf("the values table in %s is stale; run `make chart-readme`", path)
}
