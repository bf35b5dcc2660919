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
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestSourceOwner: of the selected PublishedResources of one source kind
// only the oldest syncs (then the first by name); the others report
// SourceConflict, get one Warning Event, and run no controller, not even
// for deletions (it would delete the owner's copies of same-named
// objects). Deleted and deselected ones do not count, and other source
// kinds are independent.
func TestSourceOwner(t *testing.T) {
	base := time.Unix(1000, 0)
	pr := func(name, kind string, age time.Duration, selected, deleted bool) *syncagentv1alpha1.PublishedResource {
		p := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(base.Add(-age))}}
		p.Spec.Resource = syncagentv1alpha1.SourceResourceDescriptor{APIGroup: "example.com", Version: "v1", Kind: kind}
		if selected {
			p.Labels = map[string]string{"agent": "x"}
		}
		if deleted {
			p.DeletionTimestamp = &metav1.Time{Time: base}
			p.Finalizers = []string{"keep"}
		}
		return p
	}
	testcases := []struct {
		name  string
		prs   []*syncagentv1alpha1.PublishedResource
		owner map[string]string
	}{
		{
			name:  "the oldest wins",
			prs:   []*syncagentv1alpha1.PublishedResource{pr("new", "Thing", time.Minute, true, false), pr("old", "Thing", time.Hour, true, false)},
			owner: map[string]string{"new": "old", "old": "old"},
		},
		{
			name:  "same age: the first name wins",
			prs:   []*syncagentv1alpha1.PublishedResource{pr("b", "Thing", time.Hour, true, false), pr("a", "Thing", time.Hour, true, false)},
			owner: map[string]string{"a": "a", "b": "a"},
		},
		{
			name:  "a deleted or deselected older one does not count",
			prs:   []*syncagentv1alpha1.PublishedResource{pr("new", "Thing", time.Minute, true, false), pr("gone", "Thing", 2*time.Hour, true, true), pr("theirs", "Thing", 3*time.Hour, false, false)},
			owner: map[string]string{"new": "new"},
		},
		{
			name: "an enabled one before an older disabled one",
			prs: []*syncagentv1alpha1.PublishedResource{pr("new", "Thing", time.Minute, true, false), func() *syncagentv1alpha1.PublishedResource {
				p := pr("old-disabled", "Thing", time.Hour, true, false)
				p.Spec.Synchronization = &syncagentv1alpha1.SynchronizationSpec{Enabled: false}
				return p
			}()},
			owner: map[string]string{"new": "new", "old-disabled": "new"},
		},
		{
			name: "same second: the one whose status says it synced stays the owner (after a restart too)",
			prs: []*syncagentv1alpha1.PublishedResource{pr("a", "Thing", time.Hour, true, false), func() *syncagentv1alpha1.PublishedResource {
				p := pr("running", "Thing", time.Hour, true, false)
				// Restarting: starting, not yet running.
				apimeta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: syncagentv1alpha1.ConditionSyncReady, Status: metav1.ConditionFalse, Reason: syncagentv1alpha1.ReasonControllerStarting})
				return p
			}()},
			owner: map[string]string{"a": "running", "running": "running"},
		},
		{
			name:  "other source kinds are independent",
			prs:   []*syncagentv1alpha1.PublishedResource{pr("things", "Thing", time.Minute, true, false), pr("widgets", "Widget", time.Hour, true, false)},
			owner: map[string]string{"things": "things", "widgets": "widgets"},
		},
	}
	s := runtime.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(s)
			for _, p := range tc.prs {
				b = b.WithObjects(p)
			}
			c := b.Build()
			h := newFleetHarness(t)
			events := record.NewFakeRecorder(10)
			r := &reconciler{Options: Options{Selector: labels.SelectorFromSet(labels.Set{"agent": "x"})}, releases: startedReleases(t),
				client: c, fleet: h.fleet, log: logr.Discard(), prEvents: events,
				releasing: map[string]int{}, notServed: map[string]int{}, conflictReleased: map[types.UID]bool{}}
			for name, want := range tc.owner {
				var p *syncagentv1alpha1.PublishedResource
				for _, candidate := range tc.prs {
					if candidate.Name == name {
						p = candidate
					}
				}
				got, others, err := r.sourceOwner(context.Background(), p)
				if err != nil || got != want || slices.Contains(others, got) {
					t.Errorf("owner of %s = %q (others %v), %v; want %q", name, got, others, err, want)
				}
				if want == name {
					continue
				}
				// No endpoints: nothing to release.
				cond, res, err := r.reconcile(context.Background(), p, nil)
				if err != nil || !res.IsZero() || cond.Status != metav1.ConditionFalse || cond.Reason != syncagentv1alpha1.ReasonSourceConflict {
					t.Errorf("%s: got %+v, %+v, %v; want SyncReady=False/SourceConflict, no requeue", name, cond, res, err)
				}
				if len(events.Events) != 1 {
					t.Errorf("%s: %d Events, want 1 Warning", name, len(events.Events))
				}
				<-events.Events
				// Once reported, the Event is not repeated.
				apimeta.SetStatusCondition(&p.Status.Conditions, cond)
				if _, _, err := r.reconcile(context.Background(), p, nil); err != nil || len(events.Events) != 0 {
					t.Errorf("%s: second pass %v, %d Events; want none", name, err, len(events.Events))
				}
				// With endpoints, the release waits until the owner's kcp
				// resource is known (the reconciler has no endpoint
				// clients: a release would panic).
				if _, res, err := r.reconcile(context.Background(), p, []string{"https://endpoint"}); err != nil || res.RequeueAfter == 0 {
					t.Errorf("%s: got %+v, %v; want a retry while the owner has no schema", name, res, err)
				}
			}
			reqs := r.sameSource(context.Background(), tc.prs[0])
			for _, req := range reqs {
				if req.Name == tc.prs[0].Name || !slices.ContainsFunc(tc.prs, func(p *syncagentv1alpha1.PublishedResource) bool {
					return p.Name == req.Name && p.Spec.Resource.Kind == tc.prs[0].Spec.Resource.Kind
				}) {
					t.Errorf("sameSource(%s) enqueued %s", tc.prs[0].Name, req.Name)
				}
			}
		})
	}
}
