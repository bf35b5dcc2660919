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

package sync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

func TestPatrolDelay(t *testing.T) {
	for _, tc := range []struct {
		u    float64
		want time.Duration
	}{
		{0, 9 * time.Minute},
		{0.5, 10 * time.Minute},
		{0.999999, 11 * time.Minute},
	} {
		if got := patrolDelay(10*time.Minute, tc.u).Round(time.Second); got != tc.want {
			t.Errorf("patrolDelay(10m, %v) = %v, want %v", tc.u, got, tc.want)
		}
	}
}

func TestPatrolFindings(t *testing.T) {
	req := func(name string) mcreconcile.Request {
		return mcreconcile.Request{ClusterName: "ws", Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}}
	}
	f := patrolFindings{
		drifted: map[mcreconcile.Request][]string{
			req("a"): {syncer.DriftCopyDiffers, syncer.DriftStatusBehind},
			req("b"): {syncer.DriftCopyDiffers},
		},
		orphans: map[mcreconcile.Request]*unstructured.Unstructured{req("c"): {}},
	}
	want := map[string]int{syncer.DriftCopyDiffers: 2, syncer.DriftStatusBehind: 1, syncer.DriftOrphanCopy: 1}
	if diff := cmp.Diff(want, f.counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if got, want := describeCounts(f.counts()), "2 copy-differs, 1 orphan-copy, 1 status-behind"; got != want {
		t.Errorf("describeCounts = %q, want %q", got, want)
	}
	if got := describeCounts(nil); got != "nothing" {
		t.Errorf("describeCounts(nil) = %q", got)
	}
	if f.empty() || !(patrolFindings{}).empty() {
		t.Error("empty() is wrong")
	}
}

// TestFindOrphans: only a copy whose kcp object has state of this
// PublishedResource's kind and is confirmed gone in an engaged workspace
// is an orphan; a copy without that state (one a PublishedResource
// released, which stays by contract) never is, and nothing is read from
// kcp for it.
func TestFindOrphans(t *testing.T) {
	remoteGVK := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	copyOf := func(cluster, name string, mutate ...func(*unstructured.Unstructured)) unstructured.Unstructured {
		r := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: name}
		u := unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"})
		u.SetNamespace(cluster)
		u.SetName(name)
		u.SetLabels(r.Labels("agent"))
		u.SetAnnotations(r.Annotations())
		for _, m := range mutate {
			m(&u)
		}
		return u
	}
	now := metav1.Now()
	copies := []unstructured.Unstructured{
		copyOf("ws1", "gone-with-state"),
		copyOf("ws1", "alive-with-state"),
		copyOf("ws1", "gone-without-state"),
		copyOf("ws2", "gone-with-state"), // not engaged
		copyOf("ws1", "gone-being-deleted", func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&now); u.SetFinalizers([]string{"x"}) }),
		copyOf("ws1", "no-labels", func(u *unstructured.Unstructured) { u.SetLabels(nil); u.SetAnnotations(nil) }),
	}
	var askedKcp []string
	checks := orphanChecks{
		engaged: func(cluster string) (Workspace, bool) { return Workspace{Name: cluster}, cluster == "ws1" },
		hasState: func(_ context.Context, p state.Primary) (bool, error) {
			if p.APIVersion != "kcp.example.com/v1" || p.Kind != "Thing" {
				t.Errorf("state asked for %s %s", p.APIVersion, p.Kind)
			}
			return strings.HasSuffix(p.Name, "-with-state") || p.Name == "gone-being-deleted", nil
		},
		gone: func(_ context.Context, ws Workspace, req mcreconcile.Request) (bool, error) {
			askedKcp = append(askedKcp, ws.Name+"/"+req.Name)
			return strings.HasPrefix(req.Name, "gone-"), nil
		},
		remoteGVK: remoteGVK,
	}
	got, err := findOrphans(t.Context(), rate.NewLimiter(rate.Inf, 1), copies, checks)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for req := range got {
		names = append(names, req.ClusterName+"/"+req.Name)
	}
	if diff := cmp.Diff([]string{"ws1/gone-with-state"}, names); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ws1/gone-with-state", "ws1/alive-with-state"}, askedKcp); diff != "" {
		t.Errorf("kcp reads (-want +got):\n%s", diff)
	}
	// The copies are the cache's own objects: an orphan is kept as a copy
	// of its own, and the cached object is never changed.
	for _, orphan := range got {
		orphan.SetLabels(nil)
	}
	if copies[0].GetLabels() == nil {
		t.Error("an orphan shares its content with the cached copy")
	}

	checks.gone = func(context.Context, Workspace, mcreconcile.Request) (bool, error) {
		return false, errors.New("kcp unreachable")
	}
	if _, err := findOrphans(t.Context(), rate.NewLimiter(rate.Inf, 1), copies, checks); err == nil {
		t.Error("an unreadable kcp decided nothing but reported no error")
	}
}
