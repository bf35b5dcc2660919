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

package syncmanager

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
)

// TestNamespaceMetadata: a namespace the agent created gets the configured
// labels and annotations and loses what an earlier configuration set
// there; a configured key someone else set keeps their value (a Warning
// Event says so); its other metadata and namespaces the agent did not
// create (or another agent did) are left alone.
func TestNamespaceMetadata(t *testing.T) {
	md, err := nsmeta.Parse([]string{"team=tenants", "tenant={{ .ClusterName }}"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	earlier := `{"labels":{"tier":"gold"},"annotations":{"example.com/owner":"o"}}`
	ours := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "abc", UID: "1",
		Labels:      map[string]string{keys.CreatedBy: "agent", keys.CreatedForCluster: "abc", "tier": "gold", "owner-set": "x", "team": "theirs"},
		Annotations: map[string]string{keys.NamespaceMetadata: earlier, "example.com/owner": "o", "example.com/note": "n"}}}
	notOurs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-x", UID: "2", Labels: map[string]string{"tier": "gold"},
		Annotations: map[string]string{keys.NamespaceMetadata: earlier}}}
	otherAgent := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "def", UID: "3", Labels: map[string]string{keys.CreatedBy: "other", keys.CreatedForCluster: "def"}}}
	c := fake.NewClientBuilder().WithObjects(ours, notOurs, otherAgent).Build()
	events := record.NewFakeRecorder(10)
	r := &namespaceMetadata{client: c, agentName: "agent", metadata: md, events: events, log: logr.Discard()}
	for _, ns := range []*corev1.Namespace{ours, notOurs, otherAgent} {
		if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: ns.Name}}); err != nil {
			t.Fatalf("%s: %v", ns.Name, err)
		}
	}
	get := func(name string) *corev1.Namespace {
		ns := &corev1.Namespace{}
		if err := c.Get(t.Context(), types.NamespacedName{Name: name}, ns); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	got := get("abc")
	if diff := cmp.Diff(map[string]string{keys.CreatedBy: "agent", keys.CreatedForCluster: "abc", "owner-set": "x", "team": "theirs", "tenant": "abc"}, got.Labels); diff != "" {
		t.Errorf("labels of the agent's namespace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"example.com/note": "n", keys.NamespaceMetadata: `{"labels":{"tenant":"abc"}}`}, got.Annotations); diff != "" {
		t.Errorf("annotations of the agent's namespace (-want +got):\n%s", diff)
	}
	select {
	case e := <-events.Events:
		if want := "Warning " + ReasonNamespaceMetadataKept; !strings.HasPrefix(e, want) || !strings.Contains(e, "label team") {
			t.Errorf("event %q, want %s naming label team", e, want)
		}
	default:
		t.Error("no Event for the label someone else set")
	}
	for _, want := range []*corev1.Namespace{notOurs, otherAgent} {
		got := get(want.Name)
		if !cmp.Equal(want.Labels, got.Labels) || !cmp.Equal(want.Annotations, got.Annotations) {
			t.Errorf("namespace %s changed: labels %v, annotations %v", want.Name, got.Labels, got.Annotations)
		}
	}
	// In line: no write.
	rv := got.ResourceVersion
	if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "abc"}}); err != nil {
		t.Fatal(err)
	}
	if get("abc").ResourceVersion != rv {
		t.Error("a namespace in line with the configuration was written")
	}
}
