package nsmeta

import (
	"encoding/json"
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
	r, err := m.Render(Context{ClusterName: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	labels, annotations := r.ForCreate(map[string]string{keys.CreatedBy: "agent"})
	if diff := cmp.Diff(map[string]string{"team": "tenants", "tenant": "abc", keys.CreatedBy: "agent"}, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"example.com/owner": "kcp:3a985da7", keys.NamespaceMetadata: `{"labels":["team","tenant"],"annotations":["example.com/owner"]}`}, annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	// A namespace created so needs no patch.
	if p := r.Patch(labels, annotations); p != nil {
		t.Errorf("patch of a namespace created with the metadata: %s", p)
	}
	// Nothing configured: nothing set, no record.
	var none *Metadata
	empty, _ := none.Render(Context{ClusterName: "abc"})
	labels, annotations = empty.ForCreate(map[string]string{keys.CreatedBy: "agent"})
	if len(labels) != 1 || annotations != nil {
		t.Errorf("without configuration: labels %v, annotations %v", labels, annotations)
	}
}

func TestPatch(t *testing.T) {
	rec := func(labels, annotations []string) string {
		data, _ := json.Marshal(record{Labels: labels, Annotations: annotations})
		return string(data)
	}
	for _, tc := range []struct {
		name                string
		labels, annotations map[string]string // the namespace's
		want                Rendered
		patch               string
	}{
		{name: "in line", labels: map[string]string{"team": "a", "other": "x"}, annotations: map[string]string{keys.NamespaceMetadata: rec([]string{"team"}, nil)},
			want: Rendered{Labels: map[string]string{"team": "a"}}},
		{name: "a value changed", labels: map[string]string{"team": "a"}, annotations: map[string]string{keys.NamespaceMetadata: rec([]string{"team"}, nil)},
			want:  Rendered{Labels: map[string]string{"team": "b"}},
			patch: `{"metadata":{"labels":{"team":"b"}}}`},
		{name: "a key taken out: removed, someone else's key kept", labels: map[string]string{"team": "a", "tier": "gold", "other": "x"},
			annotations: map[string]string{keys.NamespaceMetadata: rec([]string{"team", "tier"}, nil)},
			want:        Rendered{Labels: map[string]string{"team": "a"}},
			patch:       `{"metadata":{"annotations":{"` + keys.NamespaceMetadata + `":"{\"labels\":[\"team\"]}"},"labels":{"tier":null}}}`},
		{name: "everything taken out", labels: map[string]string{"team": "a"}, annotations: map[string]string{"example.com/owner": "o", keys.NamespaceMetadata: rec([]string{"team"}, []string{"example.com/owner"})},
			patch: `{"metadata":{"annotations":{"example.com/owner":null,"` + keys.NamespaceMetadata + `":null},"labels":{"team":null}}}`},
		{name: "created before any configuration", labels: map[string]string{"team": "someone's"},
			want:  Rendered{Labels: map[string]string{"team": "ours"}, Annotations: map[string]string{"example.com/owner": "o"}},
			patch: `{"metadata":{"annotations":{"example.com/owner":"o","` + keys.NamespaceMetadata + `":"{\"labels\":[\"team\"],\"annotations\":[\"example.com/owner\"]}"},"labels":{"team":"ours"}}}`},
		{name: "no configuration, no record: nothing", labels: map[string]string{"team": "a"}},
		{name: "an unreadable record removes nothing", labels: map[string]string{"team": "a"}, annotations: map[string]string{keys.NamespaceMetadata: "{"},
			patch: `{"metadata":{"annotations":{"` + keys.NamespaceMetadata + `":null}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(tc.want.Patch(tc.labels, tc.annotations)); got != tc.patch {
				t.Errorf("patch\n got %s\nwant %s", got, tc.patch)
			}
		})
	}
}
