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

package nsmeta

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

func TestParse_refuses(t *testing.T) {
	for _, tc := range []struct {
		name                string
		labels, annotations []string
		want                string
	}{
		{name: "no value", labels: []string{"team"}, want: "want key=value"},
		{name: "invalid key", labels: []string{"a b=c"}, want: "invalid key"},
		{name: "the agent's prefix", labels: []string{"syncagent.kcp.io/created-by=x"}, want: "reserved"},
		{name: "kcp's prefix", annotations: []string{"kcp.io/cluster=x"}, want: "reserved"},
		{name: "kcp's subdomain", annotations: []string{"internal.apis.kcp.io/x=y"}, want: "reserved"},
		{name: "Kubernetes' name label", labels: []string{"kubernetes.io/metadata.name=x"}, want: "reserved"},
		{name: "twice", labels: []string{"team=a", "team=b"}, want: "given twice"},
		{name: "bad template", labels: []string{"team={{ .ClusterName"}, want: "--namespace-label"},
		{name: "a field the namespace has not", labels: []string{"team={{ .Object.metadata.name }}"}, want: "can't evaluate field Object"},
		{name: "invalid label value", labels: []string{"team=a b"}, want: "not a valid label value"},
		{name: "label value too long", labels: []string{"team={{ .ClusterName | sha3sum }}"}, want: "not a valid label value"},
		{name: "a value that changes on every call", labels: []string{"stamp={{ now | date \"2006\" }}"}, want: "calls now"},
		{name: "random", annotations: []string{"example.com/id={{ .ClusterName }}-{{ randAlphaNum 5 }}"}, want: "calls randAlphaNum"},
		{name: "annotations too large", annotations: []string{"example.com/big={{ repeat 40000 \"x\" }}"}, want: "more than 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.labels, tc.annotations)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestRenderAndCreate(t *testing.T) {
	m, err := Parse([]string{"team=tenants", "tenant={{ .ClusterName }}"}, []string{"example.com/owner=kcp:{{ .ClusterName | sha3short 8 }}"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Render(Context{ClusterName: "abc", Namespace: "ns-abc"})
	if err != nil {
		t.Fatal(err)
	}
	labels, annotations := r.ForCreate(map[string]string{keys.CreatedBy: "agent"})
	if diff := cmp.Diff(map[string]string{"team": "tenants", "tenant": "abc", keys.CreatedBy: "agent"}, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"example.com/owner": "kcp:3a985da7", keys.NamespaceMetadata: `{"labels":{"team":"tenants","tenant":"abc"},"annotations":{"example.com/owner":"kcp:3a985da7"}}`}, annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	// A namespace created so needs no patch.
	if p, _ := r.Patch(labels, annotations); p != nil {
		t.Errorf("patch of a namespace created with the metadata: %s", p)
	}
	// Nothing configured: nothing set, no record.
	var none *Metadata
	empty, _ := none.Render(Context{ClusterName: "abc", Namespace: "ns-abc"})
	labels, annotations = empty.ForCreate(map[string]string{keys.CreatedBy: "agent"})
	if len(labels) != 1 || annotations != nil {
		t.Errorf("without configuration: labels %v, annotations %v", labels, annotations)
	}
}

// TestRender_workspaceValuesOnlyOnTheWorkspacesNamespace: a template that
// reads the workspace is left out on a namespace whose name does not
// contain the cluster name (the copies of several workspaces may share
// it); fixed values are put everywhere.
func TestRender_workspaceValuesOnlyOnTheWorkspacesNamespace(t *testing.T) {
	m, err := Parse([]string{"team=tenants", "tenant={{ .ClusterName }}"}, []string{"example.com/owner=kcp:{{ $.ClusterName | sha3short 8 }}"})
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]Rendered{
		"abc-x":  {Labels: map[string]string{"team": "tenants", "tenant": "abc"}, Annotations: map[string]string{"example.com/owner": "kcp:3a985da7"}},
		"shared": {Labels: map[string]string{"team": "tenants"}, Annotations: map[string]string{}},
	} {
		got, err := m.Render(Context{ClusterName: "abc", Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("namespace %s (-want +got):\n%s", ns, diff)
		}
	}
}

func TestPatch(t *testing.T) {
	rec := func(labels, annotations map[string]string) string {
		return record{Labels: labels, Annotations: annotations}.encode()
	}
	type kv = map[string]string
	for _, tc := range []struct {
		name                string
		labels, annotations kv // the namespace's
		want                Rendered
		patch               string
		foreign             string
	}{
		{name: "in line", labels: kv{"team": "a", "other": "x"}, annotations: kv{keys.NamespaceMetadata: rec(kv{"team": "a"}, nil)},
			want: Rendered{Labels: kv{"team": "a"}}},
		{name: "a value changed", labels: kv{"team": "a"}, annotations: kv{keys.NamespaceMetadata: rec(kv{"team": "a"}, nil)},
			want:  Rendered{Labels: kv{"team": "b"}},
			patch: `{"metadata":{"annotations":{"` + keys.NamespaceMetadata + `":"{\"labels\":{\"team\":\"b\"}}"},"labels":{"team":"b"}}}`},
		{name: "a key taken out: removed, someone else's key kept", labels: kv{"team": "a", "tier": "gold", "other": "x"},
			annotations: kv{keys.NamespaceMetadata: rec(kv{"team": "a", "tier": "gold"}, nil)},
			want:        Rendered{Labels: kv{"team": "a"}},
			patch:       `{"metadata":{"annotations":{"` + keys.NamespaceMetadata + `":"{\"labels\":{\"team\":\"a\"}}"},"labels":{"tier":null}}}`},
		{name: "everything taken out", labels: kv{"team": "a"}, annotations: kv{"example.com/owner": "o", keys.NamespaceMetadata: rec(kv{"team": "a"}, kv{"example.com/owner": "o"})},
			patch: `{"metadata":{"annotations":{"example.com/owner":null,"` + keys.NamespaceMetadata + `":null},"labels":{"team":null}}}`},
		{name: "created before any configuration: a key someone else set stays theirs", labels: kv{"team": "someone's"},
			want:    Rendered{Labels: kv{"team": "ours"}, Annotations: kv{"example.com/owner": "o"}},
			patch:   `{"metadata":{"annotations":{"example.com/owner":"o","` + keys.NamespaceMetadata + `":"{\"annotations\":{\"example.com/owner\":\"o\"}}"}}}`,
			foreign: "label team"},
		{name: "a value someone changed since the agent set it is neither overwritten nor removed", labels: kv{"team": "theirs", "tier": "theirs"},
			annotations: kv{keys.NamespaceMetadata: rec(kv{"team": "a", "tier": "gold"}, nil)},
			want:        Rendered{Labels: kv{"team": "b"}},
			patch:       `{"metadata":{"annotations":{"` + keys.NamespaceMetadata + `":null}}}`,
			foreign:     "label team"},
		{name: "someone else set the wanted value: in line, and it stays theirs", labels: kv{"team": "a"},
			want: Rendered{Labels: kv{"team": "a"}}},
		{name: "a record naming reserved keys removes none of them", labels: kv{keys.CreatedBy: "agent", "pod-security.kubernetes.io/enforce": "restricted"},
			annotations: kv{keys.NamespaceMetadata: rec(kv{keys.CreatedBy: "agent", "kubernetes.io/metadata.name": "x"}, nil)},
			patch:       `{"metadata":{"annotations":{"` + keys.NamespaceMetadata + `":null}}}`},
		{name: "no configuration, no record: nothing", labels: kv{"team": "a"}},
		{name: "an unreadable record removes nothing", labels: kv{"team": "a"}, annotations: kv{keys.NamespaceMetadata: "{"},
			patch: `{"metadata":{"annotations":{"` + keys.NamespaceMetadata + `":null}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, foreign := tc.want.Patch(tc.labels, tc.annotations)
			if got := string(patch); got != tc.patch {
				t.Errorf("patch\n got %s\nwant %s", got, tc.patch)
			}
			if got := strings.Join(foreign, ","); got != tc.foreign {
				t.Errorf("kept as someone else's: %q, want %q", got, tc.foreign)
			}
		})
	}
}
