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
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/endpointlease"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestPartitionChangedServesNothing: the agent of partition us finds its
// endpoint slice naming eu (edited while it runs): it disconnects from
// every endpoint, and the PublishedResource says why in its partition's
// condition.
func TestPartitionChangedServesNothing(t *testing.T) {
	s := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", Labels: map[string]string{"agent": "x"}}}
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice"}, Spec: kcpapisv1alpha1.APIExportEndpointSliceSpec{Partition: "eu"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(pr, slice).WithStatusSubresource(pr).Build()
	h := newFleetHarness(t)
	disconnected := false
	h.fleet.providers["https://shard-a"] = &endpoint{cancel: func() { disconnected = true }}
	r := &reconciler{Options: Options{AgentName: "x", Partition: "us", Selector: labels.SelectorFromSet(labels.Set{"agent": "x"}), Target: &kcp.Target{EndpointSliceName: "slice"}},
		releases: startedReleases(t), client: c, kcpCache: c, fleet: h.fleet, log: logr.Discard(), prEvents: record.NewFakeRecorder(10),
		status: &conditions.Writer{Client: c, Reader: c, FieldOwner: ControllerName, Log: logr.Discard()},
		warned: map[string]bool{}, releasing: map[string]int{}, notServed: map[string]int{}}

	_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "things"}})
	if !errors.Is(err, errPartitionChanged) {
		t.Fatalf("error %v, want errPartitionChanged", err)
	}
	if !disconnected || len(h.fleet.providers) != 0 {
		t.Errorf("endpoints still connected: %v", h.fleet.providers)
	}
	got := &syncagentv1alpha1.PublishedResource{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: "things"}, got); err != nil {
		t.Fatal(err)
	}
	cond := apimeta.FindStatusCondition(got.Status.Conditions, conditions.SyncReadyType("us"))
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != syncagentv1alpha1.ReasonPartitionChanged {
		t.Errorf("SyncReady.us = %+v, want False/PartitionChanged", cond)
	}
}

// TestServedAmong: an agent of a partition syncs and releases the
// endpoints it serves, leaves those another partition's agent holds to
// that agent, and a release waits for an endpoint whose Lease is not
// decided yet.
func TestServedAmong(t *testing.T) {
	listed := []string{"https://a", "https://b", "https://c"}
	serving := endpointlease.Status{State: endpointlease.Serving}
	elsewhere := endpointlease.Status{State: endpointlease.Elsewhere, HolderPartition: "us"}
	tests := []struct {
		name        string
		states      map[string]endpointlease.Status
		wantURLs    []string
		wantPending bool
	}{
		{"served, held elsewhere, not claimed yet", map[string]endpointlease.Status{"https://a": serving, "https://b": elsewhere}, []string{"https://a"}, true},
		{"served and held elsewhere", map[string]endpointlease.Status{"https://a": serving, "https://b": elsewhere, "https://c": elsewhere}, []string{"https://a"}, false},
		{"all served", map[string]endpointlease.Status{"https://a": serving, "https://b": serving, "https://c": serving}, listed, false},
		{"one pending", map[string]endpointlease.Status{"https://a": serving, "https://b": {State: endpointlease.Pending}, "https://c": serving}, []string{"https://a", "https://c"}, true},
	}
	for _, tt := range tests {
		urls, pending := servedAmong(listed, tt.states)
		if !slices.Equal(urls, tt.wantURLs) || pending != tt.wantPending {
			t.Errorf("%s: (%v, %v), want (%v, %v)", tt.name, urls, pending, tt.wantURLs, tt.wantPending)
		}
	}
}

// TestReleaseUnderWay: handovers stop while a PublishedResource that
// carries a release finalizer is being deleted, or while this agent
// releases one it no longer selects.
func TestReleaseUnderWay(t *testing.T) {
	now := metav1.Now()
	selected := labels.SelectorFromSet(labels.Set{"sync": "yes"})
	r := &reconciler{Options: Options{AgentName: "x", Partition: "eu", Selector: selected}}
	mine := keys.ReleaseFinalizerIn("x", "eu")
	tests := []struct {
		name string
		pr   *syncagentv1alpha1.PublishedResource
		want bool
	}{
		{"a selected one", &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"sync": "yes"}, Finalizers: []string{mine}}}, false},
		{"deleted, another partition's finalizer on it", &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"sync": "yes"}, DeletionTimestamp: &now, Finalizers: []string{keys.ReleaseFinalizerIn("x", "us")}}}, true},
		{"deleted, no release finalizer left", &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &now, Finalizers: []string{"example.com/other"}}}, false},
		{"deselected, ours on it", &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: []string{mine}}}, true},
		{"deselected, released", &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, false},
	}
	s := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		r.client = fake.NewClientBuilder().WithScheme(s).WithObjects(tt.pr).Build()
		if got := r.releaseUnderWay(); got != tt.want {
			t.Errorf("%s: releaseUnderWay = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestOthersRelease: a release keeps the records it cannot place while
// another partition of this agent name still has its finalizer on the
// PublishedResource; the last partition (or an agent without one) deletes
// them.
func TestOthersRelease(t *testing.T) {
	s := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		partition  string
		finalizers []string
		want       bool
	}{
		{"another partition's", "eu", []string{keys.ReleaseFinalizerIn("x", "eu"), keys.ReleaseFinalizerIn("x", "us")}, true},
		{"only ours", "eu", []string{keys.ReleaseFinalizerIn("x", "eu")}, false},
		{"another agent's", "eu", []string{keys.ReleaseFinalizerIn("x", "eu"), keys.ReleaseFinalizerIn("y", "us")}, false},
		{"no partition", "", []string{keys.ReleaseFinalizerIn("x", ""), keys.ReleaseFinalizerIn("x", "us")}, false},
	}
	for _, tt := range tests {
		pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: tt.finalizers}}
		r := &reconciler{Options: Options{AgentName: "x", Partition: tt.partition}, client: fake.NewClientBuilder().WithScheme(s).WithObjects(pr).Build()}
		if got := r.othersRelease(context.Background(), "a"); got != tt.want {
			t.Errorf("%s: othersRelease = %v, want %v", tt.name, got, tt.want)
		}
	}
	r := &reconciler{Options: Options{AgentName: "x", Partition: "eu"}, client: fake.NewClientBuilder().WithScheme(s).Build()}
	if r.othersRelease(context.Background(), "gone") {
		t.Error("a PublishedResource that is gone keeps the records")
	}
}
