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

package objmeta

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

func TestRemote_labelsAndSelector(t *testing.T) {
	ns := Remote{Cluster: "abc", Namespace: "default", Name: "foo", Path: "root:org"}
	want := map[string]string{
		"syncagent.kcp.io/remote-object-cluster":        "abc",
		"syncagent.kcp.io/remote-object-name-hash":      "0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33",
		"syncagent.kcp.io/remote-object-namespace-hash": "7505d64a54e061b7acd54ccd58b49dc43500b635",
		"syncagent.kcp.io/agent-name":                   "agent",
	}
	if diff := cmp.Diff(want, ns.Labels("agent")); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnn := map[string]string{
		"syncagent.kcp.io/remote-object-name":           "foo",
		"syncagent.kcp.io/remote-object-namespace":      "default",
		"syncagent.kcp.io/remote-object-workspace-path": "root:org",
	}
	if diff := cmp.Diff(wantAnn, ns.Annotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	// The selector does not include the agent label: copies made by old
	// reference versions lack it.
	if !ns.Selector().Matches(labels.Set{
		"syncagent.kcp.io/remote-object-cluster":        "abc",
		"syncagent.kcp.io/remote-object-name-hash":      "0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33",
		"syncagent.kcp.io/remote-object-namespace-hash": "7505d64a54e061b7acd54ccd58b49dc43500b635",
	}) {
		t.Error("selector does not match a copy without the agent label")
	}

	cluster := Remote{Cluster: "abc", Name: "foo"}
	if _, ok := cluster.Labels("agent")["syncagent.kcp.io/remote-object-namespace-hash"]; ok {
		t.Error("cluster-scoped objects must not get a namespace hash")
	}
	if _, ok := cluster.Annotations()["syncagent.kcp.io/remote-object-workspace-path"]; ok {
		t.Error("no path annotation without a path")
	}
	// A cluster-scoped object's selector takes its own copies, never those
	// of a namespaced object of the same workspace and name.
	if !cluster.Selector().Matches(labels.Set(cluster.Labels("agent"))) {
		t.Error("the selector of a cluster-scoped object does not match its own labels")
	}
	if cluster.Selector().Matches(labels.Set(ns.Labels("agent"))) {
		t.Error("the selector of a cluster-scoped object matches a namespaced object of the same name")
	}
}

func local(labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestAdoptable(t *testing.T) {
	r := Remote{Cluster: "abc", Namespace: "default", Name: "foo"}
	testcases := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{name: "unowned object", obj: local(map[string]string{"app": "x"}, nil), want: true},
		{name: "our own copy", obj: local(r.Labels("agent"), r.Annotations()), want: true},
		{name: "copy without agent label (old reference)", obj: local(map[string]string{"syncagent.kcp.io/remote-object-cluster": "abc"}, nil), want: true},
		{name: "another agent's object", obj: local(map[string]string{"syncagent.kcp.io/agent-name": "other"}, nil), want: false},
		{name: "another workspace's object", obj: local(Remote{Cluster: "xyz", Namespace: "default", Name: "foo"}.Labels("agent"), nil), want: false},
		{name: "another name by annotation", obj: local(nil, map[string]string{"syncagent.kcp.io/remote-object-name": "bar"}), want: false},
		{name: "another namespace by hash", obj: local(map[string]string{"syncagent.kcp.io/remote-object-namespace-hash": Hash("other")}, nil), want: false},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Adoptable(tc.obj, r, "agent"); got != tc.want {
				t.Errorf("Adoptable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDesired(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Thing",
		"metadata": map[string]any{
			"name": "foo", "namespace": "default", "uid": "123", "resourceVersion": "7", "generation": int64(3),
			"finalizers": []any{"syncagent.kcp.io/cleanup"},
			"labels": map[string]any{
				"app": "x", "claimed.internal.apis.kcp.io/abc": "y", "syncagent.kcp.io/agent-name": "evil",
				"syncagent.kcp.io/remote-object-cluster": "c",
				// A consumer's import request must not reach the service
				// cluster (an orphaned copy would become one).
				"syncagent.kcp.io/import-into": "other-workspace",
			},
			"annotations": map[string]any{
				"note": "keep", "kcp.io/cluster": "abc", "kubectl.kubernetes.io/last-applied-configuration": "{}",
				"related-resources.syncagent.kcp.io/creds.0": "{}", "syncagent.kcp.io/object-state": "x",
				"syncagent.kcp.io/import-name": "n", "syncagent.kcp.io/import-namespace": "ns", "syncagent.kcp.io/imported-from": "uid",
			},
		},
		"spec":   map[string]any{"color": "blue"},
		"status": map[string]any{"phase": "Ready"},
		"data":   map[string]any{"k": "v"},
	}}

	got := Desired(obj, true)
	want := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "x"}, "annotations": map[string]any{"note": "keep"}},
		"spec":     map[string]any{"color": "blue"},
		"data":     map[string]any{"k": "v"},
	}
	if diff := cmp.Diff(want, got.Object); diff != "" {
		t.Errorf("desired (-want +got):\n%s", diff)
	}
	if _, ok := Desired(obj, false).Object["status"]; !ok {
		t.Error("status must flow as an ordinary field without a status subresource")
	}
	// The input is not modified.
	got.Object["spec"].(map[string]any)["color"] = "red"
	if obj.Object["spec"].(map[string]any)["color"] != "blue" {
		t.Error("Desired shares data with its input")
	}
}

// An IndexKey lookup finds exactly the objects Selector selects, with one
// index value per object.
func TestRemoteIndexMatchesSelector(t *testing.T) {
	remotes := []Remote{
		{Cluster: "abc", Name: "foo"},
		{Cluster: "abc", Name: "foo", Namespace: "default"},
		{Cluster: "abc", Name: "foo", Namespace: "other"},
		{Cluster: "xyz", Name: "foo", Namespace: "default"},
		{Cluster: "abc", Name: "bar"},
	}
	var objs []*unstructured.Unstructured
	for _, r := range remotes {
		u := &unstructured.Unstructured{}
		u.SetLabels(r.Labels("agent"))
		objs = append(objs, u)
	}
	for _, r := range remotes {
		for i, o := range objs {
			values := RemoteIndexValues(o)
			if len(values) != 1 {
				t.Fatalf("index values of %v: %v, want one", remotes[i], values)
			}
			found := values[0] == r.IndexKey()
			if selected := r.Selector().Matches(labels.Set(o.GetLabels())); found != selected {
				t.Errorf("lookup of %v finds the object of %v: %t, Selector selects it: %t", r, remotes[i], found, selected)
			}
		}
	}
	if v := RemoteIndexValues(&unstructured.Unstructured{}); v != nil {
		t.Errorf("index values of an object without labels: %v, want none", v)
	}
}
