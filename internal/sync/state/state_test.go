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
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/cacheindex"
	"github.com/kcp-syncagent/api-syncagent/internal/cacheindex/cacheindextest"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

var primary = Primary{
	Remote:     objmeta.Remote{Cluster: "abc", Namespace: "default", Name: "foo"},
	APIVersion: "kcp.example.com/v1", Kind: "Thing",
}

// The expected values were computed independently (Python hashlib) from the
// byte strings the contract specifies.
func TestNames(t *testing.T) {
	if got := SecretName(primary); got != "obj-state-abc-3bdc4044f44712dfd182" {
		t.Errorf("SecretName = %q", got)
	}
	if got := LegacyKey("abc", "default", "foo"); got != "defa20563ea0a24b19ee1e61aa2ae9dede120f8c" {
		t.Errorf("LegacyKey = %q", got)
	}
}

func newStore(t *testing.T, funcs interceptor.Funcs, objs ...ctrlruntimeclient.Object) (*Store, ctrlruntimeclient.Client) {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(funcs).
		WithIndex(&corev1.Secret{}, objmeta.RemoteIndex, objmeta.RemoteIndexValues).
		WithIndex(&corev1.Secret{}, RelatedObjectIndex, RelatedObjectIndexValues).Build()
	return &Store{Client: c, Namespace: "agent", AgentName: "me"}, c
}

// referenceSecret is a state Secret as the reference writes it.
func referenceSecret(name, value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Name: name, Labels: map[string]string{
			"syncagent.kcp.io/object-state":                 "true",
			"syncagent.kcp.io/remote-object-cluster":        "abc",
			"syncagent.kcp.io/remote-object-name-hash":      objmeta.Hash("foo"),
			"syncagent.kcp.io/remote-object-namespace-hash": objmeta.Hash("default"),
		}},
		Data: map[string][]byte{"defa20563ea0a24b19ee1e61aa2ae9dede120f8c": []byte(value)},
	}
}

const referenceValue = `{"apiVersion":"kcp.example.com/v1","kind":"Thing","metadata":{"creationTimestamp":null,"labels":{"a":"b"},"name":"foo","namespace":"default"},"spec":{"color":"blue"}}`

var normalized = map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "spec": map[string]any{"color": "blue"}}

func TestStore_readsReferenceState(t *testing.T) {
	store, _ := newStore(t, interceptor.Funcs{}, referenceSecret("obj-state-abc-3bdc4044f44712dfd182", referenceValue))
	got, err := store.Get(context.Background(), primary)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalized, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// The index lookup names no namespace: a state Secret of another namespace
// (which the agent's cache does not hold, but another reader might) is
// not the agent's.
func TestStore_ignoresOtherNamespaces(t *testing.T) {
	other := referenceSecret("obj-state-abc-3bdc4044f44712dfd182", referenceValue)
	other.Namespace = "elsewhere"
	store, _ := newStore(t, interceptor.Funcs{}, other)
	if got, err := store.Get(context.Background(), primary); err != nil || got != nil {
		t.Errorf("state in another namespace: got %v, %v; want nil, nil", got, err)
	}
}

// Through a real cache with the agent's index (one key per Secret, for
// lookups without a namespace), a state Secret under another name (an
// earlier kcp apiVersion's) is found by the index: a lookup in a namespace
// would find nothing there, and the fake client's index cannot tell.
func TestStore_readsThroughTheAgentsIndex(t *testing.T) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := cacheindextest.NewCache(t, s, func(ctx context.Context, c cache.Cache) error {
		return cacheindex.Add(ctx, c, &corev1.Secret{}, objmeta.RemoteIndex, objmeta.RemoteIndexValues)
	}, referenceSecret("obj-state-of-an-earlier-version", referenceValue))
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), apimeta.RESTScopeNamespace)
	client, err := ctrlruntimeclient.New(&rest.Config{Host: "http://127.0.0.1:1"}, ctrlruntimeclient.Options{Scheme: s, Mapper: mapper,
		Cache: &ctrlruntimeclient.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	store := &Store{Client: client, Namespace: "agent", AgentName: "me"}
	got, err := store.Get(context.Background(), primary)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalized, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

func TestStore_missingAndBroken(t *testing.T) {
	store, _ := newStore(t, interceptor.Funcs{}, referenceSecret("obj-state-abc-3bdc4044f44712dfd182", "{not json"))
	if got, err := store.Get(context.Background(), primary); err != nil || got != nil {
		t.Errorf("broken state: got %v, %v; want nil, nil", got, err)
	}
	empty, _ := newStore(t, interceptor.Funcs{})
	if got, err := empty.Get(context.Background(), primary); err != nil || got != nil {
		t.Errorf("missing state: got %v, %v; want nil, nil", got, err)
	}
}

func TestStore_putGetAndNoOpWrites(t *testing.T) {
	ctx := context.Background()
	writes := 0
	count := func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.UpdateOption) error {
		writes++
		return c.Update(ctx, obj, opts...)
	}
	store, c := newStore(t, interceptor.Funcs{Update: count})

	if err := store.Put(ctx, primary, normalized); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, primary, normalized); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Errorf("an unchanged state was written %d times", writes)
	}
	got, err := store.Get(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalized, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}

	secret := &corev1.Secret{}
	if err := c.Get(ctx, ctrlruntimeclient.ObjectKey{Namespace: "agent", Name: SecretName(primary)}, secret); err != nil {
		t.Fatal(err)
	}
	if secret.Labels["syncagent.kcp.io/agent-name"] != "me" || secret.Labels["syncagent.kcp.io/object-state"] != "true" {
		t.Errorf("labels = %v", secret.Labels)
	}
	// The stored snapshot keeps the reference's shape (rollback).
	if want := `{"apiVersion":"kcp.example.com/v1","kind":"Thing","metadata":{"labels":{"a":"b"},"name":"foo","namespace":"default"},"spec":{"color":"blue"}}`; string(secret.Data[LegacyKey("abc", "default", "foo")]) != want {
		t.Errorf("stored value = %s, want %s", secret.Data[LegacyKey("abc", "default", "foo")], want)
	}

	if err := store.Delete(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Get(ctx, primary); got != nil {
		t.Errorf("state survived Delete: %v", got)
	}
}

func TestStore_versionProjectionChangeMigrates(t *testing.T) {
	ctx := context.Background()
	oldName := "obj-state-abc-e5c68cde4a423d44d155" // apiVersion kcp.example.com/v1alpha1
	oldValue := `{"apiVersion":"kcp.example.com/v1alpha1","kind":"Thing","metadata":{"labels":{"a":"b"},"name":"foo","namespace":"default"},"spec":{"color":"blue"}}`
	store, c := newStore(t, interceptor.Funcs{}, referenceSecret(oldName, oldValue))

	got, err := store.Get(ctx, primary) // now kcp.example.com/v1
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalized, got); diff != "" {
		t.Errorf("state found by labels (-want +got):\n%s", diff)
	}

	other := primary
	other.Kind = "Gadget"
	if got, _ := store.Get(ctx, other); got != nil {
		t.Errorf("state of another kind was accepted: %v", got)
	}

	if err := store.Put(ctx, primary, got); err != nil {
		t.Fatal(err)
	}
	var list corev1.SecretList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != SecretName(primary) {
		t.Errorf("after migration the Secrets are %v, want only %s", list.Items, SecretName(primary))
	}
}

// TestStore_getConfirmsMissingStateLive: a state Secret that the cache has
// not seen yet is found by the live read, because "no state" makes the
// syncer overwrite the copy.
func TestStore_getConfirmsMissingStateLive(t *testing.T) {
	ctx := context.Background()
	lagging, _ := newStore(t, interceptor.Funcs{})
	live, liveClient := newStore(t, interceptor.Funcs{})
	if err := live.Put(ctx, primary, map[string]any{"spec": map[string]any{"color": "green"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := lagging.Get(ctx, primary); err != nil || got != nil {
		t.Fatalf("without a live reader: %v, %v; want no state", got, err)
	}
	lagging.Live = liveClient
	got, err := lagging.Get(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"color": "green"}, got["spec"]); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestStore_deleteRemovesStateTheCacheMissed: a state Secret written a
// moment ago is deleted although the cache does not list it yet.
func TestStore_deleteRemovesStateTheCacheMissed(t *testing.T) {
	ctx := context.Background()
	store, c := newStore(t, interceptor.Funcs{
		List: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.ObjectList, ...ctrlruntimeclient.ListOption) error {
			return nil // a cache that has seen nothing
		},
	})
	if err := store.Put(ctx, primary, map[string]any{"spec": map[string]any{"color": "green"}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, ctrlruntimeclient.ObjectKey{Namespace: "agent", Name: SecretName(primary)}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the state Secret is still there: %v", err)
	}
}
