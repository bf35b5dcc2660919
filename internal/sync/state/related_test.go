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
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // the documented name algorithm uses SHA-1.
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

// relatedCreds is a kcp-origin Secret default/db-creds of the primary
// Thing default/foo, copied to abc/db-creds on the service cluster.
var relatedCreds = Related{
	Primary: primary,
	RelatedRecord: RelatedRecord{
		Identifier: "creds",
		OriginSide: "kcp",
		Origin:     ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "default", Name: "db-creds"},
		Destination: ObjectRef{
			APIVersion: "v1", Kind: "Secret", Namespace: "abc", Name: "db-creds",
		},
	},
}

// relatedName computes the documented name independently: SHA-1 of the
// json.Encoder output (newline included) of the map, first 20 hex chars.
func relatedName(t *testing.T, cluster string, m map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(m); err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(buf.Bytes()) //nolint:gosec // see import.
	return "obj-state-" + cluster + "-" + hex.EncodeToString(sum[:])[:20]
}

func TestRelatedSecretName(t *testing.T) {
	// Computed with Python hashlib over the bytes
	// {"identifier":"creds","kind":"Thing","name":"foo","namespace":"default","originGroup":"",
	// "originKind":"Secret","originName":"db-creds","originNamespace":"default","primaryGroup":"kcp.example.com"}\n
	const golden = "obj-state-abc-b4c80f5ebd8e06009a15"
	independent := relatedName(t, "abc", map[string]string{
		"identifier": "creds", "kind": "Thing", "name": "foo", "namespace": "default",
		"originGroup": "", "originKind": "Secret", "originName": "db-creds", "originNamespace": "default",
		"primaryGroup": "kcp.example.com",
	})
	if independent != golden {
		t.Fatalf("the independent computation gives %s, the pinned value is %s", independent, golden)
	}
	if got := RelatedSecretName(relatedCreds); got != golden {
		t.Errorf("RelatedSecretName = %s, want %s", got, golden)
	}

	testcases := []struct {
		name     string
		modify   func(r *Related)
		wantSame bool
	}{
		{name: "another primary version", modify: func(r *Related) { r.APIVersion = "kcp.example.com/v2" }, wantSame: true},
		{name: "another origin version", modify: func(r *Related) { r.Origin.APIVersion = "v2" }, wantSame: true},
		{name: "another destination", modify: func(r *Related) { r.Destination = ObjectRef{APIVersion: "x/v1", Kind: "Y", Name: "z"} }, wantSame: true},
		{name: "another origin side", modify: func(r *Related) { r.OriginSide = "service" }, wantSame: true},
		{name: "another workspace path", modify: func(r *Related) { r.Path = "root:x" }, wantSame: true},
		{name: "another identifier", modify: func(r *Related) { r.Identifier = "other" }},
		{name: "another origin kind", modify: func(r *Related) { r.Origin.Kind = "ConfigMap" }},
		{name: "another origin group", modify: func(r *Related) { r.Origin.APIVersion = "example.com/v1" }},
		{name: "another origin namespace", modify: func(r *Related) { r.Origin.Namespace = "other" }},
		{name: "another origin name", modify: func(r *Related) { r.Origin.Name = "other" }},
		{name: "another primary kind", modify: func(r *Related) { r.Kind = "Gadget" }},
		{name: "another primary group", modify: func(r *Related) { r.APIVersion = "other.example.com/v1" }},
		{name: "another primary name", modify: func(r *Related) { r.Name = "bar" }},
		{name: "another primary namespace", modify: func(r *Related) { r.Namespace = "other" }},
		{name: "another cluster", modify: func(r *Related) { r.Cluster = "xyz" }},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			r := relatedCreds
			tc.modify(&r)
			if got := RelatedSecretName(r); (got == golden) != tc.wantSame {
				t.Errorf("RelatedSecretName = %s; same as %s: %v, want %v", got, golden, got == golden, tc.wantSame)
			}
		})
	}
}

// writeCounter counts the writes made through a fake client.
type writeCounter struct{ creates, updates, deletes int }

func (w *writeCounter) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.CreateOption) error {
			w.creates++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.UpdateOption) error {
			w.updates++
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
			w.deletes++
			return c.Delete(ctx, obj, opts...)
		},
	}
}

func secretNames(t *testing.T, c ctrlruntimeclient.Client) []string {
	t.Helper()
	var list corev1.SecretList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

func TestStore_PutRelatedGetRelated(t *testing.T) {
	ctx := t.Context()
	writes := &writeCounter{}
	store, c := newStore(t, writes.funcs())

	desired := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "data": map[string]any{"password": "czNjcjN0"}}
	if got, err := store.GetRelated(ctx, relatedCreds); err != nil || got != nil {
		t.Fatalf("GetRelated before Put = %v, %v; want nil, nil", got, err)
	}
	if err := store.PutRelated(ctx, relatedCreds, desired); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetRelated(ctx, relatedCreds)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(desired, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}

	secret := &corev1.Secret{}
	if err := c.Get(ctx, ctrlruntimeclient.ObjectKey{Namespace: "agent", Name: RelatedSecretName(relatedCreds)}, secret); err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"syncagent.kcp.io/object-state":                 "true",
		"syncagent.kcp.io/agent-name":                   "me",
		"syncagent.kcp.io/related-identifier":           "creds",
		"syncagent.kcp.io/remote-object-cluster":        "abc",
		"syncagent.kcp.io/remote-object-name-hash":      objmeta.Hash("foo"),
		"syncagent.kcp.io/remote-object-namespace-hash": objmeta.Hash("default"),
	}
	if diff := cmp.Diff(wantLabels, secret.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if secret.Type != corev1.SecretTypeOpaque {
		t.Errorf("type = %q, want Opaque", secret.Type)
	}
	wantData := map[string]string{
		"state": `{"apiVersion":"v1","data":{"password":"czNjcjN0"},"kind":"Secret","metadata":{"labels":{"a":"b"},"name":"db-creds","namespace":"default"}}`,
		"record": `{"primary":{"apiVersion":"kcp.example.com/v1","kind":"Thing","namespace":"default","name":"foo"},"identifier":"creds","originSide":"kcp",` +
			`"origin":{"apiVersion":"v1","kind":"Secret","namespace":"default","name":"db-creds"},"destination":{"apiVersion":"v1","kind":"Secret","namespace":"abc","name":"db-creds"}}`,
	}
	gotData := map[string]string{}
	for k, v := range secret.Data {
		gotData[k] = string(v)
	}
	if diff := cmp.Diff(wantData, gotData); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}

	// Unchanged: no write.
	*writes = writeCounter{}
	if err := store.PutRelated(ctx, relatedCreds, desired); err != nil {
		t.Fatal(err)
	}
	if *writes != (writeCounter{}) {
		t.Errorf("an unchanged related state was written: %+v", *writes)
	}

	// Changed: one update, read back.
	changed := map[string]any{"data": map[string]any{"password": "bmV3"}}
	if err := store.PutRelated(ctx, relatedCreds, changed); err != nil {
		t.Fatal(err)
	}
	if *writes != (writeCounter{updates: 1}) {
		t.Errorf("writes for a changed state = %+v, want one update", *writes)
	}
	if got, err := store.GetRelated(ctx, relatedCreds); err != nil || !cmp.Equal(changed, got) {
		t.Errorf("state after the change = %v, %v; want %v", got, err, changed)
	}
	if diff := cmp.Diff([]string{RelatedSecretName(relatedCreds)}, secretNames(t, c)); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

func TestStore_GetRelated_legacyEntry(t *testing.T) {
	serviceOrigin := relatedCreds
	serviceOrigin.OriginSide = "service"
	serviceOrigin.Origin = ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "abc", Name: "local-creds"}
	serviceOrigin.Destination = ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "default", Name: "creds"}

	const (
		// LegacyKey("abc", "default", "db-creds") and LegacyKey("", "abc", "local-creds"),
		// computed with Python hashlib from the bytes of contract §4.4.
		kcpKey     = "022a26f1d9d2b8ddb275d08e8b8b18b7507c116a"
		serviceKey = "f227d21e8310aa502cb65126a6a335bd68419259"
	)
	secretValue := `{"apiVersion":"v1","kind":"Secret","metadata":{"creationTimestamp":null,"name":"x"},"data":{"password":"b2xk"}}`
	configMapValue := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"password":"b2xk"}}`
	want := map[string]any{"data": map[string]any{"password": "b2xk"}}

	// primarySecret is the primary's state Secret as the reference wrote it,
	// related entries included.
	primarySecret := func(entries map[string]string) *corev1.Secret {
		s := referenceSecret("obj-state-abc-3bdc4044f44712dfd182", referenceValue)
		for k, v := range entries {
			s.Data[k] = []byte(v)
		}
		return s
	}
	newFormat := func(r Related, value string) *corev1.Secret {
		s := referenceSecret(RelatedSecretName(r), "")
		s.Labels["syncagent.kcp.io/related-identifier"] = r.Identifier
		s.Data = map[string][]byte{"state": []byte(value)}
		return s
	}

	testcases := []struct {
		name    string
		related Related
		objects []ctrlruntimeclient.Object
		want    map[string]any
	}{
		{
			name:    "kcp origin: the entry under the key with the cluster",
			related: relatedCreds,
			objects: []ctrlruntimeclient.Object{primarySecret(map[string]string{kcpKey: secretValue})},
			want:    want,
		},
		{
			name:    "kcp origin: an entry of another kind under the key is rejected",
			related: relatedCreds,
			objects: []ctrlruntimeclient.Object{primarySecret(map[string]string{kcpKey: configMapValue})},
		},
		{
			name:    "kcp origin: an entry without the cluster in the key is not ours",
			related: relatedCreds,
			objects: []ctrlruntimeclient.Object{primarySecret(map[string]string{LegacyKey("", "default", "db-creds"): secretValue})},
		},
		{
			name:    "service origin: the entry under the key with an empty cluster",
			related: serviceOrigin,
			objects: []ctrlruntimeclient.Object{primarySecret(map[string]string{serviceKey: secretValue})},
			want:    want,
		},
		{
			name:    "service origin: an entry with the cluster in the key is not ours",
			related: serviceOrigin,
			objects: []ctrlruntimeclient.Object{primarySecret(map[string]string{LegacyKey("abc", "abc", "local-creds"): secretValue})},
		},
		{
			name:    "an unreadable legacy entry is no state",
			related: relatedCreds,
			objects: []ctrlruntimeclient.Object{primarySecret(map[string]string{kcpKey: "{broken"})},
		},
		{
			name:    "the legacy entry of another primary's Secret is not read",
			related: relatedCreds,
			objects: []ctrlruntimeclient.Object{func() *corev1.Secret {
				s := primarySecret(map[string]string{kcpKey: secretValue})
				s.Labels["syncagent.kcp.io/remote-object-name-hash"] = objmeta.Hash("bar")
				return s
			}()},
		},
		{
			name:    "the own Secret wins over the legacy entry",
			related: relatedCreds,
			objects: []ctrlruntimeclient.Object{
				primarySecret(map[string]string{kcpKey: secretValue}),
				newFormat(relatedCreds, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-creds"},"data":{"password":"bmV3"}}`),
			},
			want: map[string]any{"data": map[string]any{"password": "bmV3"}},
		},
		{
			name:    "an unreadable own Secret is no state, without falling back",
			related: relatedCreds,
			objects: []ctrlruntimeclient.Object{
				primarySecret(map[string]string{kcpKey: secretValue}),
				newFormat(relatedCreds, "{broken"),
			},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newStore(t, interceptor.Funcs{}, tc.objects...)
			got, err := store.GetRelated(t.Context(), tc.related)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

// relatedOf returns a kcp-origin related object of p.
func relatedOf(p Primary, identifier, kind, name string) Related {
	return Related{Primary: p, RelatedRecord: RelatedRecord{
		Identifier: identifier, OriginSide: "kcp",
		Origin:      ObjectRef{APIVersion: "v1", Kind: kind, Namespace: p.Namespace, Name: name},
		Destination: ObjectRef{APIVersion: "v1", Kind: kind, Namespace: p.Cluster, Name: name},
	}}
}

func TestStore_ListRelated(t *testing.T) {
	ctx := t.Context()
	store, c := newStore(t, interceptor.Funcs{})
	bar := primary
	bar.Name = "bar"
	objects := []Related{
		relatedOf(primary, "creds", "Secret", "a"),
		relatedOf(primary, "creds", "Secret", "b"),
		relatedOf(primary, "config", "ConfigMap", "a"),
		relatedOf(bar, "creds", "Secret", "a"),
	}
	for _, r := range objects {
		if err := store.PutRelated(ctx, r, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Put(ctx, primary, normalized); err != nil {
		t.Fatal(err)
	}
	// A related Secret whose record cannot be read still belongs to the primary.
	broken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Name: "obj-state-abc-broken", Labels: store.labels(primary)}, Data: map[string][]byte{"record": []byte("{")}}
	broken.Labels["syncagent.kcp.io/related-identifier"] = "config"
	if err := c.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}

	stored := func(r Related) StoredRelated {
		rec := r.RelatedRecord
		rec.Primary = ObjectRef{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		return StoredRelated{SecretName: RelatedSecretName(r), Cluster: r.Cluster, Agent: store.AgentName, RelatedRecord: rec}
	}
	brokenEntry := StoredRelated{SecretName: "obj-state-abc-broken", Cluster: "abc", Agent: store.AgentName, RelatedRecord: RelatedRecord{Identifier: "config"}}
	testcases := []struct {
		identifier string
		want       []StoredRelated
	}{
		{identifier: "creds", want: []StoredRelated{stored(objects[0]), stored(objects[1])}},
		{identifier: "config", want: []StoredRelated{stored(objects[2]), brokenEntry}},
		{identifier: "", want: []StoredRelated{stored(objects[0]), stored(objects[1]), stored(objects[2]), brokenEntry}},
		{identifier: "unknown"},
	}
	for _, tc := range testcases {
		t.Run("identifier "+tc.identifier, func(t *testing.T) {
			got, err := store.ListRelated(ctx, primary, tc.identifier)
			if err != nil {
				t.Fatal(err)
			}
			want := sortedBySecretName(tc.want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ListRelated (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := store.ListRelated(ctx, primary, "not a label value!"); err == nil {
		t.Error("ListRelated accepted an identifier that is no label value")
	}
}

func sortedBySecretName(in []StoredRelated) []StoredRelated {
	return slices.SortedFunc(slices.Values(in), func(a, b StoredRelated) int { return strings.Compare(a.SecretName, b.SecretName) })
}

func TestStore_primaryStateLeavesRelatedSecrets(t *testing.T) {
	ctx := t.Context()
	store, c := newStore(t, interceptor.Funcs{})
	r := relatedOf(primary, "creds", "Secret", "foo") // same namespace and name as the primary
	if err := store.PutRelated(ctx, r, map[string]any{"data": map[string]any{"k": "dg=="}}); err != nil {
		t.Fatal(err)
	}

	// Without its own Secret, the primary has no state: the label fallback
	// does not pick up the related Secret.
	if got, err := store.Get(ctx, primary); err != nil || got != nil {
		t.Errorf("primary state with only a related Secret = %v, %v; want nil, nil", got, err)
	}
	// Creating the primary's Secret deletes the primary's stale Secrets, not
	// the related ones.
	if err := store.Put(ctx, primary, normalized); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sortedStrings(SecretName(primary), RelatedSecretName(r)), secretNames(t, c)); diff != "" {
		t.Errorf("Secrets after Put (-want +got):\n%s", diff)
	}
	if got, err := store.Get(ctx, primary); err != nil || !cmp.Equal(normalized, got) {
		t.Errorf("primary state = %v, %v; want %v", got, err, normalized)
	}
	if got, err := store.GetRelated(ctx, r); err != nil || got == nil {
		t.Errorf("related state = %v, %v; want it kept", got, err)
	}
}

func sortedStrings(s ...string) []string { return slices.Sorted(slices.Values(s)) }

func TestStore_DeleteRemovesRelatedSecrets(t *testing.T) {
	ctx := t.Context()
	store, c := newStore(t, interceptor.Funcs{})
	bar := primary
	bar.Name = "bar"
	if err := store.Put(ctx, primary, normalized); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, bar, normalized); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Related{relatedOf(primary, "creds", "Secret", "a"), relatedOf(primary, "config", "ConfigMap", "a"), relatedOf(bar, "creds", "Secret", "a")} {
		if err := store.PutRelated(ctx, r, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Delete(ctx, primary); err != nil {
		t.Fatal(err)
	}
	want := sortedStrings(SecretName(bar), RelatedSecretName(relatedOf(bar, "creds", "Secret", "a")))
	if diff := cmp.Diff(want, secretNames(t, c)); diff != "" {
		t.Errorf("Secrets after deleting foo's state (-want +got):\n%s", diff)
	}
}

// TestStore_sameNameOtherKind: a primary of another kind with the same
// cluster, namespace and name (another PublishedResource) carries the same
// labels; its state must survive this primary's writes, deletion and
// related-object listing.
func TestStore_sameNameOtherKind(t *testing.T) {
	ctx := t.Context()
	store, c := newStore(t, interceptor.Funcs{})
	gadget := primary
	gadget.APIVersion, gadget.Kind = "gadgets.example.com/v1", "Gadget"
	gadgetRelated := relatedOf(gadget, "creds", "Secret", "a")
	if err := store.Put(ctx, gadget, normalized); err != nil {
		t.Fatal(err)
	}
	if err := store.PutRelated(ctx, gadgetRelated, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	gadgetSecrets := sortedStrings(SecretName(gadget), RelatedSecretName(gadgetRelated))

	// The Thing's first Put deletes the Thing's stale Secrets only.
	if err := store.Put(ctx, primary, normalized); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sortedStrings(append(gadgetSecrets, SecretName(primary))...), secretNames(t, c)); diff != "" {
		t.Errorf("Secrets after the Thing's Put (-want +got):\n%s", diff)
	}
	if got, err := store.ListRelated(ctx, primary, ""); err != nil || len(got) != 0 {
		t.Errorf("the Thing's related objects = %v, %v; want none", got, err)
	}
	if err := store.Delete(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(gadgetSecrets, secretNames(t, c)); diff != "" {
		t.Errorf("Secrets after deleting the Thing's state (-want +got):\n%s", diff)
	}
}

func TestStore_DeleteRelated(t *testing.T) {
	ctx := t.Context()
	store, c := newStore(t, interceptor.Funcs{})
	r := relatedOf(primary, "creds", "Secret", "a")
	if err := store.PutRelated(ctx, r, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteRelated(ctx, RelatedSecretName(r)); err != nil {
		t.Fatal(err)
	}
	if names := secretNames(t, c); len(names) != 0 {
		t.Errorf("Secrets left: %v", names)
	}
	if err := store.DeleteRelated(ctx, RelatedSecretName(r)); err != nil {
		t.Errorf("deleting a missing Secret: %v", err)
	}
}
