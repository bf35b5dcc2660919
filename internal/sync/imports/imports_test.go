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

package imports

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

func serviceObject(namespace string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec":   map[string]any{"color": "blue"},
		"status": map[string]any{"phase": "Ready"},
	}}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Thing")
	u.SetNamespace(namespace)
	u.SetName("legacy")
	u.SetUID("uid-1")
	u.SetResourceVersion("12")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestOf(t *testing.T) {
	into := map[string]string{keys.ImportInto: "ws1"}
	for _, tc := range []struct {
		name          string
		local         *unstructured.Unstructured
		kcpNamespaced bool
		want          Request
		wantOK        bool
		wantErr       string
	}{
		{name: "no request", local: serviceObject("prod", nil, nil)},
		{name: "namespaced, its own namespace and name", local: serviceObject("prod", into, nil), kcpNamespaced: true, wantOK: true,
			want: Request{Cluster: "ws1", Key: types.NamespacedName{Namespace: "prod", Name: "legacy"}}},
		{name: "named by the annotations", local: serviceObject("prod", into, map[string]string{keys.ImportName: "mine", keys.ImportNamespace: "default"}), kcpNamespaced: true, wantOK: true,
			want: Request{Cluster: "ws1", Key: types.NamespacedName{Namespace: "default", Name: "mine"}}},
		{name: "cluster-scoped kcp type", local: serviceObject("prod", into, nil), wantOK: true,
			want: Request{Cluster: "ws1", Key: types.NamespacedName{Name: "legacy"}}},
		{name: "cluster-scoped kcp type with a namespace", local: serviceObject("prod", into, map[string]string{keys.ImportNamespace: "default"}), wantOK: true, wantErr: "cluster-scoped"},
		{name: "cluster-scoped object, namespaced kcp type", local: serviceObject("", into, nil), kcpNamespaced: true, wantOK: true, wantErr: "name the namespace"},
		{name: "cluster-scoped object, namespace given", local: serviceObject("", into, map[string]string{keys.ImportNamespace: "default"}), kcpNamespaced: true, wantOK: true,
			want: Request{Cluster: "ws1", Key: types.NamespacedName{Namespace: "default", Name: "legacy"}}},
		{name: "no workspace", local: serviceObject("prod", map[string]string{keys.ImportInto: ""}, nil), kcpNamespaced: true, wantOK: true, wantErr: "names no workspace"},
		{name: "bad name", local: serviceObject("prod", into, map[string]string{keys.ImportName: "Not/Valid"}), kcpNamespaced: true, wantOK: true, wantErr: "no valid name"},
		{name: "bad namespace", local: serviceObject("prod", into, map[string]string{keys.ImportNamespace: "a.b"}), kcpNamespaced: true, wantOK: true, wantErr: "no valid namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Of(tc.local, tc.kcpNamespaced)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "":
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("request (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	req := Request{Cluster: "ws1", Key: types.NamespacedName{Namespace: "prod", Name: "legacy"}}
	into := map[string]string{keys.ImportInto: "ws1"}
	withLabel := func(k, v string) map[string]string { return map[string]string{keys.ImportInto: "ws1", k: v} }
	claim := objmeta.Remote{Cluster: "ws1", Namespace: "prod", Name: "legacy"}.Labels("agent")
	claim[keys.ImportInto] = "ws1"
	otherClaim := objmeta.Remote{Cluster: "ws1", Namespace: "prod", Name: "other"}.Labels("agent")
	for _, tc := range []struct {
		name     string
		local    *unstructured.Unstructured
		nsLabels map[string]string
		claim    map[string]string
		want     string
	}{
		{name: "the service owner's own object", local: serviceObject("prod", into, nil)},
		{name: "in a namespace the agent created for the same workspace", local: serviceObject("ws1-ns", into, nil), nsLabels: map[string]string{keys.CreatedForCluster: "ws1"}},
		{name: "claimed by this import already (it stopped after its first step)", local: serviceObject("prod", claim, nil), claim: claim},
		{name: "claimed for another kcp object", local: serviceObject("prod", claim, nil), claim: otherClaim, want: "is the copy of a kcp object"},
		{name: "a copy of another workspace's object", local: serviceObject("prod", withLabel(keys.RemoteObjectCluster, "ws2"), nil), want: "is the copy of a kcp object"},
		{name: "a copy of an older agent (name hash only)", local: serviceObject("prod", withLabel(keys.RemoteObjectNameHash, "abc"), nil), want: "is the copy of a kcp object"},
		{name: "another agent's object", local: serviceObject("prod", withLabel(keys.AgentName, "other"), nil), want: "is the copy of a kcp object"},
		{name: "a state Secret", local: serviceObject("prod", withLabel(keys.ObjectState, "true"), nil), want: "is the copy of a kcp object"},
		{name: "left behind by a deletion with orphan", local: serviceObject("prod", into, map[string]string{keys.OrphanedFrom: "ws2/default/x"}), want: "left behind"},
		{name: "in a namespace created for another workspace", local: serviceObject("ws2-ns", into, nil), nsLabels: map[string]string{keys.CreatedForCluster: "ws2"}, want: "another workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Refusal(tc.local, req, tc.nsLabels, tc.claim)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("refusal %q, want one saying %q", got, tc.want)
			}
		})
	}
}

func TestKcpObject(t *testing.T) {
	local := serviceObject("prod",
		map[string]string{keys.ImportInto: "ws1", "app": "x", keys.RemoteObjectCluster: "evil"},
		map[string]string{keys.ImportName: "mine", "note": "keep", "kubectl.kubernetes.io/last-applied-configuration": "{}"})
	gvk := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Widget"}
	req := Request{Cluster: "ws1", Key: types.NamespacedName{Namespace: "default", Name: "mine"}}
	got := KcpObject(local, gvk, req, "syncagent.kcp.io/cleanup-me")
	want := map[string]any{
		"apiVersion": "kcp.example.com/v1",
		"kind":       "Widget",
		"metadata": map[string]any{
			"namespace":   "default",
			"name":        "mine",
			"labels":      map[string]any{"app": "x"},
			"annotations": map[string]any{"note": "keep", keys.ImportedFrom: "uid-1"},
			"finalizers":  []any{"syncagent.kcp.io/cleanup-me"},
		},
		"spec": map[string]any{"color": "blue"},
	}
	if diff := cmp.Diff(want, got.Object); diff != "" {
		t.Errorf("kcp object (-want +got):\n%s", diff)
	}
	if !CreatedBy(got, local) {
		t.Error("the kcp object is not recognised as created by the import")
	}
	other := local.DeepCopy()
	other.SetUID("uid-2")
	if CreatedBy(got, other) {
		t.Error("the kcp object is taken for the import of another object")
	}
}

func TestNamespaceOfOther(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	copyOf := func(namespace, name, cluster string) *unstructured.Unstructured {
		u := serviceObject(namespace, objmeta.Remote{Cluster: cluster, Name: name}.Labels("agent"), nil)
		u.SetName(name)
		return u
	}
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(gvk.GroupVersion().WithKind("ThingList"), &unstructured.UnstructuredList{})
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(
		copyOf("ws1", "a", "ws1"), copyOf("tenant-ws2", "b", "ws2"), copyOf("shared", "c", "ws1"), copyOf("shared", "d", "ws2"),
		serviceObject("prod", nil, nil),
	).Build()
	for _, tc := range []struct {
		namespace, cluster string
		want               string
	}{
		{"ws1", "ws1", ""},
		{"ws1", "ws3", "ws1"},
		{"tenant-ws2", "ws1", "ws2"},
		{"shared", "ws1", ""},
		{"prod", "ws1", ""},
		{"", "ws1", ""},
	} {
		got, err := NamespaceOfOther(context.Background(), reader, gvk, tc.namespace, tc.cluster)
		if err != nil || got != tc.want {
			t.Errorf("namespace %q, import into %s: the namespace of workspace %q (%v), want %q", tc.namespace, tc.cluster, got, err, tc.want)
		}
	}
}
