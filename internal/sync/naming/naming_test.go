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

package naming

import (
	"testing"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func obj(namespace, name string) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return map[string]any{"metadata": meta, "spec": map[string]any{"owner": "Alice & Bob"}}
}

func TestNamer(t *testing.T) {
	// sha3short of "default", "foo" and "" (first 20 hex of SHA3-256, computed
	// independently with Python's hashlib).
	const (
		sha3Default = "2747cabbb481a433679f"
		sha3Foo     = "76d3bc41c9f588f7fcd0"
		sha3Empty   = "a7ffc6f8bf1ed76651c1"
	)
	testcases := []struct {
		name          string
		naming        *syncagentv1alpha1.ResourceNaming
		ctx           Context
		wantName      string
		wantNamespace string
	}{
		{
			name:     "defaults",
			ctx:      Context{Object: obj("default", "foo"), ClusterName: "1084s8ceexsehjm2"},
			wantName: sha3Default + "-" + sha3Foo, wantNamespace: "1084s8ceexsehjm2",
		},
		{
			name:     "defaults for a cluster-scoped kcp object (contract §7 #3)",
			ctx:      Context{Object: obj("", "foo"), ClusterName: "abc"},
			wantName: sha3Empty + "-" + sha3Foo, wantNamespace: "abc",
		},
		{
			name:     "empty fields mean defaults",
			naming:   &syncagentv1alpha1.ResourceNaming{},
			ctx:      Context{Object: obj("default", "foo"), ClusterName: "abc"},
			wantName: sha3Default + "-" + sha3Foo, wantNamespace: "abc",
		},
		{
			name:     "templates see the object, cluster name and path; output is trimmed and not HTML-escaped",
			naming:   &syncagentv1alpha1.ResourceNaming{Name: " {{ .Object.metadata.name }}-{{ .Object.spec.owner }} ", Namespace: "{{ .ClusterPath | replace \":\" \"-\" }}"},
			ctx:      Context{Object: obj("default", "foo"), ClusterName: "abc", ClusterPath: "root:org:team"},
			wantName: "foo-Alice & Bob", wantNamespace: "root-org-team",
		},
		{
			name:     "legacy placeholders, longer tokens first",
			naming:   &syncagentv1alpha1.ResourceNaming{Name: "$remoteNamespace-$remoteName-$remoteNameHash", Namespace: "$remoteClusterName-$remoteNamespaceHash"},
			ctx:      Context{Object: obj("default", "foo"), ClusterName: "abc"},
			wantName: "default-foo-0beec7b5ea3f0fdbc95d", wantNamespace: "abc-7505d64a54e061b7acd5",
		},
		{
			name:     "legacy namespace hash of a cluster-scoped object hashes the empty string",
			naming:   &syncagentv1alpha1.ResourceNaming{Name: "$remoteNamespaceHash-$remoteName"},
			ctx:      Context{Object: obj("", "foo"), ClusterName: "abc"},
			wantName: "da39a3ee5e6b4b0d3255-foo", wantNamespace: "abc",
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := NewNamer(tc.naming)
			if err != nil {
				t.Fatal(err)
			}
			name, err := n.Name(tc.ctx)
			if err != nil {
				t.Fatal(err)
			}
			namespace, err := n.Namespace(tc.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if name != tc.wantName || namespace != tc.wantNamespace {
				t.Errorf("got %q in %q, want %q in %q", name, namespace, tc.wantName, tc.wantNamespace)
			}
		})
	}
}

func TestNewNamer_invalid(t *testing.T) {
	if _, err := NewNamer(&syncagentv1alpha1.ResourceNaming{Name: "{{ .Object | nosuchfunc }}"}); err == nil {
		t.Error("expected an error for an unknown function")
	}
}

func TestNamer_namespaceEmbedsClusterName(t *testing.T) {
	for namespace, want := range map[string]bool{
		"": true, // the default, {{ .ClusterName }}
		"{{ .ClusterName }}-{{ .Object.metadata.namespace }}": true,
		"tenant-{{ $.ClusterName }}":                          false, // $ can be reassigned
		"{{ $ = .Object.spec }}{{ $.ClusterName }}":           false,
		"{{ .ClusterName | sha3short }}":                      false,
		"{{ .ClusterName | trunc 3 }}":                        false,
		"{{ if .ClusterName }}{{ .ClusterName }}{{ end }}":    false,
		"{{ .Object.metadata.namespace }}":                    false,
		"shared":                                              false,
		"$remoteClusterName-x":                                true,
		"$remoteNamespace":                                    false,
	} {
		n, err := NewNamer(&syncagentv1alpha1.ResourceNaming{Namespace: namespace})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.NamespaceEmbedsClusterName(); got != want {
			t.Errorf("NamespaceEmbedsClusterName(%q) = %v, want %v", namespace, got, want)
		}
	}
}
