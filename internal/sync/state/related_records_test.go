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

package state

import (

	//nolint:gosec // the documented name algorithm uses SHA-1.

	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestPrimaryOfRelated(t *testing.T) {
	record := func(data string) map[string][]byte { return map[string][]byte{"record": []byte(data)} }
	relatedLabels := map[string]string{"syncagent.kcp.io/object-state": "true", "syncagent.kcp.io/related-identifier": "creds"}
	testcases := []struct {
		name   string
		secret *corev1.Secret
		want   ObjectRef
		wantOK bool
	}{
		{
			name: "related Secret",
			secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: relatedLabels},
				Data: record(`{"primary":{"apiVersion":"kcp.example.com/v1","kind":"Thing","namespace":"default","name":"foo"},"identifier":"creds"}`)},
			want:   ObjectRef{APIVersion: "kcp.example.com/v1", Kind: "Thing", Namespace: "default", Name: "foo"},
			wantOK: true,
		},
		{
			name:   "related Secret with an unreadable record",
			secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: relatedLabels}, Data: record("{")},
			wantOK: true,
		},
		{
			name:   "related Secret whose record names no primary",
			secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: relatedLabels}, Data: record(`{"identifier":"creds"}`)},
			wantOK: true,
		},
		{
			name:   "a primary's Secret",
			secret: referenceSecret("obj-state-abc-3bdc4044f44712dfd182", referenceValue),
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PrimaryOfRelated(tc.secret)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("primary (-want +got):\n%s", diff)
			}
		})
	}

	// Round trip through PutRelated.
	store, c := newStore(t, interceptor.Funcs{})
	if err := store.PutRelated(t.Context(), relatedCreds, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), ctrlruntimeclient.ObjectKey{Namespace: "agent", Name: RelatedSecretName(relatedCreds)}, secret); err != nil {
		t.Fatal(err)
	}
	got, ok := PrimaryOfRelated(secret)
	if want := (ObjectRef{APIVersion: "kcp.example.com/v1", Kind: "Thing", Namespace: "default", Name: "foo"}); !ok || got != want {
		t.Errorf("PrimaryOfRelated of a written Secret = %v, %v; want %v, true", got, ok, want)
	}
}

// TestStore_GetRelatedLive: the live read finds a state Secret that the
// cached client does not show yet.
func TestStore_GetRelatedLive(t *testing.T) {
	ctx := t.Context()
	live, liveClient := newStore(t, interceptor.Funcs{})
	desired := map[string]any{"data": map[string]any{"password": "czNjcjN0"}}
	if err := live.PutRelated(ctx, relatedCreds, desired); err != nil {
		t.Fatal(err)
	}
	lagging, _ := newStore(t, interceptor.Funcs{}) // a cache that has not seen the Secret
	lagging.Live = liveClient

	if got, err := lagging.GetRelated(ctx, relatedCreds); err != nil || got != nil {
		t.Fatalf("GetRelated through the lagging cache = %v, %v; want nil, nil", got, err)
	}
	got, err := lagging.GetRelatedLive(ctx, relatedCreds)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(desired, got); diff != "" {
		t.Errorf("live state (-want +got):\n%s", diff)
	}
	if got, err := live.GetRelatedLive(ctx, relatedOf(relatedCreds.Primary, "other", "Secret", "nope")); err != nil || got != nil {
		t.Errorf("GetRelatedLive of a missing Secret = %v, %v; want nil, nil", got, err)
	}
}

func TestUsedByOthers(t *testing.T) {
	ctx := t.Context()
	bar := primary
	bar.Name = "bar"
	otherWorkspace := primary
	otherWorkspace.Cluster = "xyz"
	otherKind := primary
	otherKind.APIVersion, otherKind.Kind = "other.example.com/v1", "Other"

	testcases := []struct {
		name   string
		writer Primary // whose record of relatedCreds is stored
		// staleCache: the record is in the cache only (deleted live).
		staleCache bool
		// agent writes the record (empty: this agent).
		agent string
		side  string
		ref   ObjectRef
		want  bool
	}{
		{name: "own record", writer: primary, side: "kcp", ref: relatedCreds.Origin},
		{name: "another primary's record, origin", writer: bar, side: "kcp", ref: relatedCreds.Origin, want: true},
		{name: "another primary's record, destination", writer: bar, side: "service", ref: relatedCreds.Destination, want: true},
		{name: "origin version does not matter", writer: bar, side: "kcp", ref: ObjectRef{APIVersion: "v2", Kind: "Secret", Namespace: "default", Name: "db-creds"}, want: true},
		{name: "same-named primary of another kind", writer: otherKind, side: "kcp", ref: relatedCreds.Origin, want: true},
		{name: "kcp objects of another workspace are other objects", writer: otherWorkspace, side: "kcp", ref: relatedCreds.Origin},
		{name: "service objects are shared across workspaces", writer: otherWorkspace, side: "service", ref: relatedCreds.Destination, want: true},
		{name: "wrong side", writer: bar, side: "service", ref: relatedCreds.Origin},
		{name: "another object", writer: bar, side: "kcp", ref: ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "default", Name: "other"}},
		{name: "record deleted, cache stale", writer: bar, staleCache: true, side: "kcp", ref: relatedCreds.Origin},
		{name: "another agent's record in the same namespace names a shared object too", writer: bar, agent: "another-agent", side: "kcp", ref: relatedCreds.Origin, want: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			store, c := newStore(t, interceptor.Funcs{})
			writer := relatedCreds
			writer.Primary = tc.writer
			writerStore := *store
			if tc.agent != "" {
				writerStore.AgentName = tc.agent
			}
			if err := writerStore.PutRelated(ctx, writer, map[string]any{"data": map[string]any{"k": "dg=="}}); err != nil {
				t.Fatal(err)
			}
			if tc.staleCache {
				live, _ := newStore(t, interceptor.Funcs{})
				store.Live = live.Client
			}
			got, err := store.UsedByOthers(ctx, primary, tc.side, tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			// Only this agent's records hold this agent's finalizer.
			if tc.side == "kcp" {
				holders, err := store.SourceHolders(ctx, primary, tc.ref)
				if err != nil {
					t.Fatal(err)
				}
				if want := tc.want && tc.agent == ""; (len(holders) > 0) != want {
					t.Errorf("SourceHolders = %v, want holders: %v", holders, want)
				}
			}
			if got != tc.want {
				var list corev1.SecretList
				_ = c.List(ctx, &list)
				t.Errorf("UsedByOthers = %v, want %v (stored: %d Secrets)", got, tc.want, len(list.Items))
			}
		})
	}
}

func TestRelatedRecordsOf(t *testing.T) {
	ctx := t.Context()
	store, _ := newStore(t, interceptor.Funcs{})
	other := relatedCreds
	other.APIVersion, other.Kind = "other.example.com/v1", "Other"
	for _, r := range []Related{relatedCreds, other} {
		if err := store.PutRelated(ctx, r, map[string]any{"data": map[string]any{"k": "dg=="}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := store.RelatedRecordsOf(ctx, schema.GroupKind{Group: "kcp.example.com", Kind: "Thing"})
	if err != nil {
		t.Fatal(err)
	}
	want := []StoredRelated{{SecretName: RelatedSecretName(relatedCreds), Cluster: "abc", Agent: store.AgentName, RelatedRecord: relatedCreds.RelatedRecord}}
	want[0].Primary = ObjectRef{APIVersion: "kcp.example.com/v1", Kind: "Thing", Namespace: "default", Name: "foo"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RelatedRecordsOf (-want +got):\n%s", diff)
	}
	if p := got[0].PrimaryOf(); p != primary {
		t.Errorf("PrimaryOf = %+v, want %+v", p, primary)
	}

	// Another agent that took the PublishedResource over rewrote the
	// record: it is still found (this agent's finalizer may be on its
	// source), and says whose it is.
	theirs := *store
	theirs.AgentName = "another-agent"
	if err := theirs.PutRelated(ctx, relatedCreds, map[string]any{"data": map[string]any{"k": "dg=="}}); err != nil {
		t.Fatal(err)
	}
	got, err = store.RelatedRecordsOf(ctx, schema.GroupKind{Group: "kcp.example.com", Kind: "Thing"})
	if err != nil || len(got) != 1 || got[0].Agent != "another-agent" {
		t.Errorf("RelatedRecordsOf after another agent's rewrite = %+v, %v; want the record, of another-agent", got, err)
	}
}

// TestStore_clusterScopedSameName: a cluster-scoped primary's labels are a
// subset of those of a namespaced primary with the same workspace and
// name (no namespace hash); its Put and Delete must not take the other
// one's state (found by the soak: a Widget obj-1 deleted the state of the
// Gadget default/obj-1 of its workspace, whose next update then lost the
// fields the service side had set).
func TestStore_clusterScopedSameName(t *testing.T) {
	ctx := t.Context()
	store, c := newStore(t, interceptor.Funcs{})
	widget := primary
	widget.APIVersion, widget.Kind, widget.Namespace = "kcp.example.com/v1", "Widget", ""
	if err := store.Put(ctx, primary, normalized); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, widget, normalized); err != nil {
		t.Fatal(err)
	}
	want := sortedStrings(SecretName(primary), SecretName(widget))
	if diff := cmp.Diff(want, secretNames(t, c)); diff != "" {
		t.Errorf("Secrets after the Widget's Put (-want +got):\n%s", diff)
	}
	if known, err := store.Known(ctx, widget); err != nil || !known {
		t.Errorf("Known(widget) = %v, %v; want true", known, err)
	}
	if err := store.Delete(ctx, widget); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{SecretName(primary)}, secretNames(t, c)); diff != "" {
		t.Errorf("Secrets after deleting the Widget's state (-want +got):\n%s", diff)
	}
	if known, err := store.Known(ctx, widget); err != nil || known {
		t.Errorf("Known(widget) after its deletion = %v, %v; want false (the Thing's state is not the Widget's)", known, err)
	}
}

func TestLegacyFinalizerOurs(t *testing.T) {
	old, taken := &RelatedRecord{}, &RelatedRecord{Finalizer: "syncagent.kcp.io/cleanup-me"}
	for _, tc := range []struct {
		name           string
		record         *RelatedRecord
		referenceState bool
		holders        []StoredRelated
		want           bool
	}{
		{name: "a record from before per-agent finalizers", record: old, want: true},
		{name: "a record naming the agent's own", record: taken},
		{name: "only the reference's state", referenceState: true, want: true},
		{name: "nothing recorded", want: false},
		{name: "another record of the agent took the source over", record: old, holders: []StoredRelated{{RelatedRecord: *taken}}},
		{name: "other records from before too", record: old, holders: []StoredRelated{{RelatedRecord: *old}}, want: true},
	} {
		if got := LegacyFinalizerOurs(tc.record, tc.referenceState, tc.holders); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
