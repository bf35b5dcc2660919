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

package syncer

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/mutation"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/merge"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

var (
	remoteGVK = schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	localGVK  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
)

const cluster = "abc"

type env struct {
	syncer  *Syncer
	kcp     ctrlruntimeclient.Client
	service ctrlruntimeclient.Client
	events  []string
}

func typed(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// withAgentIndexes registers the cache indexes the agent registers on the
// service side: local copies and state Secrets by kcp object, related state
// Secrets by the objects they name.
func withAgentIndexes(b *fake.ClientBuilder) *fake.ClientBuilder {
	return b.WithIndex(typed(localGVK), objmeta.RemoteIndex, objmeta.RemoteIndexValues).
		WithIndex(&corev1.Secret{}, objmeta.RemoteIndex, objmeta.RemoteIndexValues).
		WithIndex(&corev1.Secret{}, state.RelatedObjectIndex, state.RelatedObjectIndexValues)
}

func newEnv(t *testing.T, service ...ctrlruntimeclient.Object) *env {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	e := &env{
		kcp:     fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(typed(remoteGVK)).Build(),
		service: withAgentIndexes(fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(typed(localGVK)).WithObjects(service...)).Build(),
	}
	namer, err := naming.NewNamer(nil)
	if err != nil {
		t.Fatal(err)
	}
	e.syncer = &Syncer{
		AgentName: "agent", LocalGVK: localGVK, LocalNamespaced: true, StatusSubresource: true,
		Namer:          namer,
		Service:        e.service,
		RelatedService: e.service,
		State:          &state.Store{Client: e.service, Namespace: "agent-ns", AgentName: "agent"},
		Event: func(_ ctrlruntimeclient.Object, _, reason, _ string) {
			e.events = append(e.events, reason)
		},
	}
	return e
}

func (e *env) createRemote(t *testing.T, namespace, name string, spec map[string]any) {
	t.Helper()
	obj := typed(remoteGVK)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	obj.Object["spec"] = spec
	if err := e.kcp.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func (e *env) getRemote(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := typed(remoteGVK)
	if err := e.kcp.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return obj
}

// converge runs Process until it stops asking for a requeue and returns the
// number of writes.
func (e *env) converge(t *testing.T, namespace, name string) (int, error) {
	t.Helper()
	writes := 0
	for range 10 {
		obj := e.getRemote(t, namespace, name)
		if obj == nil {
			return writes, nil
		}
		res, err := e.syncer.Process(context.Background(), Workspace{Client: e.kcp, Cluster: cluster}, obj)
		writes += res.Writes
		if err != nil || !res.Requeue {
			return writes, err
		}
	}
	t.Fatal("Process did not converge within 10 passes")
	return 0, nil
}

// syncedFoo creates default/foo in kcp and syncs it.
func (e *env) syncedFoo(t *testing.T) {
	t.Helper()
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
}

// localCopy returns the only local copy.
func (e *env) localCopy(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
	if err := e.service.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("want 1 local copy, got %d", len(list.Items))
	}
	return &list.Items[0]
}

func TestSyncer_createThenSteadyState(t *testing.T) {
	e := newEnv(t)
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})

	writes, err := e.converge(t, "default", "foo")
	if err != nil {
		t.Fatal(err)
	}
	// finalizer, namespace, local copy, state Secret
	if writes != 4 {
		t.Errorf("writes for a new object = %d, want 4", writes)
	}
	local := e.localCopy(t)
	if local.GetNamespace() != cluster || local.GetName() != "2747cabbb481a433679f-76d3bc41c9f588f7fcd0" {
		t.Errorf("local copy at %s/%s", local.GetNamespace(), local.GetName())
	}
	if diff := cmp.Diff(objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "foo"}.Labels("agent"), local.GetLabels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if local.Object["spec"].(map[string]any)["color"] != "blue" {
		t.Errorf("spec not copied: %v", local.Object["spec"])
	}
	// The namespace it created says whose it is and for which workspace.
	ns := &corev1.Namespace{}
	if err := e.service.Get(context.Background(), types.NamespacedName{Name: cluster}, ns); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{keys.CreatedBy: "agent", keys.CreatedForCluster: cluster}, ns.Labels); diff != "" {
		t.Errorf("the created namespace's labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{ReasonObjectAccepted, ReasonObjectPlaced}, e.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// In sync: zero writes.
	if writes, err := e.converge(t, "default", "foo"); err != nil || writes != 0 {
		t.Errorf("in-sync pass made %d writes (err %v), want 0", writes, err)
	}
}

func TestSyncer_threeWayMergeAndStatus(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)

	// A service-side field (an operator's default) and a status.
	local := e.localCopy(t)
	local.Object["spec"].(map[string]any)["defaulted"] = "by-operator"
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	local.Object["status"] = map[string]any{"phase": "Ready"}
	if err := e.service.Status().Update(ctx, local); err != nil {
		t.Fatal(err)
	}

	// An unrelated kcp change.
	remote := e.getRemote(t, "default", "foo")
	remote.Object["spec"].(map[string]any)["color"] = "red"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"color": "red", "defaulted": "by-operator"}, e.localCopy(t).Object["spec"]); diff != "" {
		t.Errorf("local spec (-want +got):\n%s", diff)
	}
	// The spec write is announced before the status (set above) goes up.
	if diff := cmp.Diff([]string{ReasonObjectAccepted, ReasonObjectPlaced, ReasonObjectSynced, ReasonObjectStatusSynced}, e.events); diff != "" {
		t.Errorf("events after a spec write (-want +got):\n%s", diff)
	}
	// status flows up
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"phase": "Ready"}, e.getRemote(t, "default", "foo").Object["status"]); diff != "" {
		t.Errorf("kcp status (-want +got):\n%s", diff)
	}

	// A kcp change of the service-side field wins.
	remote = e.getRemote(t, "default", "foo")
	remote.Object["spec"].(map[string]any)["defaulted"] = "by-consumer"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if got := e.localCopy(t).Object["spec"].(map[string]any)["defaulted"]; got != "by-consumer" {
		t.Errorf("defaulted = %v, want by-consumer", got)
	}
}

func TestSyncer_deletion(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") == nil {
		t.Fatal("the finalizer did not hold the kcp object")
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the kcp object still exists: finalizer not released")
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
	if err := e.service.List(ctx, list); err != nil || len(list.Items) != 0 {
		t.Errorf("local copies left: %d (%v)", len(list.Items), err)
	}
	var secrets corev1.SecretList
	if err := e.service.List(ctx, &secrets); err != nil || len(secrets.Items) != 0 {
		t.Errorf("state Secrets left: %d (%v)", len(secrets.Items), err)
	}
}

func TestSyncer_waitsForForeignFinalizers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	local := e.localCopy(t)
	local.SetFinalizers([]string{"operator.example.com/cleanup"})
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
	if err != nil || res.Writes != 1 {
		t.Fatalf("want the local copy deleted, got %+v, %v", res, err)
	}
	for range 3 {
		res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
		want := "the local copy " + cluster + "/2747cabbb481a433679f-76d3bc41c9f588f7fcd0 is being deleted and held by the finalizers operator.example.com/cleanup"
		if err != nil || res.Waiting != want || res.Writes != 0 {
			t.Fatalf("want to wait for the foreign finalizer without writes, got %+v, %v", res, err)
		}
	}
	if e.getRemote(t, "default", "foo") == nil {
		t.Fatal("the finalizer was released before the local copy was gone")
	}
}

func TestSyncer_adoption(t *testing.T) {
	name := "2747cabbb481a433679f-76d3bc41c9f588f7fcd0"
	existing := func(labels map[string]string) *unstructured.Unstructured {
		u := typed(localGVK)
		u.SetNamespace(cluster)
		u.SetName(name)
		u.SetLabels(labels)
		u.Object["spec"] = map[string]any{"color": "green"}
		return u
	}
	testcases := []struct {
		name         string
		existing     *unstructured.Unstructured
		wantConflict bool
	}{
		{name: "unowned object is adopted", existing: existing(map[string]string{"app": "x"})},
		{name: "another workspace's copy is refused", existing: existing(objmeta.Remote{Cluster: "other", Namespace: "default", Name: "foo"}.Labels("agent")), wantConflict: true},
		{name: "another agent's object is refused", existing: existing(map[string]string{"syncagent.kcp.io/agent-name": "someone-else"}), wantConflict: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.existing)
			e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
			_, err := e.converge(t, "default", "foo")
			if tc.wantConflict {
				if !errors.Is(err, ErrConflict) {
					t.Fatalf("err = %v, want ErrConflict", err)
				}
				if e.events[len(e.events)-1] != ReasonObjectConflict {
					t.Errorf("events = %v, want ObjectConflict last", e.events)
				}
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(localGVK)
				if err := e.service.Get(context.Background(), types.NamespacedName{Namespace: cluster, Name: name}, got); err != nil {
					t.Fatal(err)
				}
				if got.Object["spec"].(map[string]any)["color"] != "green" {
					t.Error("the refused object was modified")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			local := e.localCopy(t)
			if local.GetLabels()["syncagent.kcp.io/remote-object-cluster"] != cluster || local.GetLabels()["app"] != "x" {
				t.Errorf("adopted labels = %v", local.GetLabels())
			}
			// Adoption keeps the object's spec (as the reference does) ...
			if diff := cmp.Diff(map[string]any{"color": "green"}, local.Object["spec"]); diff != "" {
				t.Errorf("adoption changed the local spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{ReasonObjectAccepted, ReasonObjectPlaced}, e.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// ... and from then on exactly what changes in kcp arrives.
			remote := e.getRemote(t, "default", "foo")
			remote.Object["spec"].(map[string]any)["size"] = "L"
			if err := e.kcp.Update(context.Background(), remote); err != nil {
				t.Fatal(err)
			}
			if _, err := e.converge(t, "default", "foo"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]any{"color": "green", "size": "L"}, e.localCopy(t).Object["spec"]); diff != "" {
				t.Errorf("local spec after a kcp change (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{ReasonObjectAccepted, ReasonObjectPlaced, ReasonObjectSynced}, e.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncer_brokenStateFallsBackWithoutSpuriousWrites(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	var secrets corev1.SecretList
	if err := e.service.List(ctx, &secrets); err != nil || len(secrets.Items) != 1 {
		t.Fatalf("want 1 state Secret, got %d (%v)", len(secrets.Items), err)
	}
	secret := &secrets.Items[0]
	for k := range secret.Data {
		secret.Data[k] = []byte("{broken")
	}
	if err := e.service.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	before := e.localCopy(t).GetResourceVersion()
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if after := e.localCopy(t).GetResourceVersion(); after != before {
		t.Error("the full-update fallback wrote an unchanged local copy")
	}
	if got, err := e.syncer.State.Get(ctx, state.Primary{Remote: objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "foo"}, APIVersion: "kcp.example.com/v1", Kind: "Thing"}); err != nil || got == nil {
		t.Errorf("state not repaired: %v, %v", got, err)
	}
}

func TestSyncer_noStatusSubresource(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncer.StatusSubresource = false
	e.syncer.Warned = once.NewPerGeneration()
	e.syncedFoo(t)
	local := e.localCopy(t)
	local.Object["status"] = map[string]any{"phase": "Ready"}
	// (The fake service client has a status subresource for the local type;
	// how the status got there does not matter to the syncer.)
	if err := e.service.Status().Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	e.events = nil
	for range 3 {
		writes, err := e.converge(t, "default", "foo")
		if err != nil || writes != 0 {
			t.Fatalf("writes = %d, err = %v; want no writes", writes, err)
		}
	}
	if diff := cmp.Diff([]string{ReasonStatusSubresMissing}, e.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if status := e.getRemote(t, "default", "foo").Object["status"]; status != nil {
		t.Errorf("status was written to kcp without a status subresource: %v", status)
	}
}

func TestSyncer_takesOverReferenceState(t *testing.T) {
	ctx := context.Background()
	r := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "foo"}
	labels := r.Labels("agent")
	delete(labels, "syncagent.kcp.io/agent-name")
	local := typed(localGVK)
	local.SetNamespace(cluster)
	local.SetName("2747cabbb481a433679f-76d3bc41c9f588f7fcd0")
	local.SetLabels(labels)
	local.SetAnnotations(r.Annotations())
	local.Object["spec"] = map[string]any{"color": "blue", "defaulted": "by-operator"}
	p := state.Primary{Remote: r, APIVersion: "kcp.example.com/v1", Kind: "Thing"}
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name = "agent-ns", state.SecretName(p)
	secret.Data = map[string][]byte{state.LegacyKey(cluster, "default", "foo"): []byte(
		`{"apiVersion":"kcp.example.com/v1","kind":"Thing","metadata":{"creationTimestamp":null,"name":"foo","namespace":"default"},"spec":{"color":"blue"}}`)}

	e := newEnv(t, local, secret)
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	remote := e.getRemote(t, "default", "foo")
	remote.SetFinalizers([]string{"syncagent.kcp.io/cleanup"})
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	remote = e.getRemote(t, "default", "foo")
	remote.Object["spec"].(map[string]any)["color"] = "red"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	got := e.localCopy(t)
	if diff := cmp.Diff(map[string]any{"color": "red", "defaulted": "by-operator"}, got.Object["spec"]); diff != "" {
		t.Errorf("local spec (-want +got):\n%s", diff)
	}
	if got.GetLabels()["syncagent.kcp.io/agent-name"] != "agent" {
		t.Errorf("agent label not added: %v", got.GetLabels())
	}
}

// TestSyncer_ownCopyNotInCacheYet: a pass whose copies cache has not seen
// the copy yet (created a moment ago) finds it by name on create. It must
// not take it for an adoption: no write, no second ObjectPlaced, the stored
// state stays, so the kcp change of that moment still arrives once the
// cache catches up.
func TestSyncer_ownCopyNotInCacheYet(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	remote := e.getRemote(t, "default", "foo")
	remote.Object["spec"].(map[string]any)["color"] = "red"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder().WithScheme(s)).Build() // sees no copy
	e.events = nil
	res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
	if err != nil || !res.Requeue || res.Writes != 0 {
		t.Fatalf("Process = %+v, %v; want a requeue without writes", res, err)
	}
	if len(e.events) != 0 {
		t.Errorf("events %v for our own copy, want none", e.events)
	}

	e.syncer.Copies = nil // the cache caught up
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if got := e.localCopy(t).Object["spec"].(map[string]any)["color"]; got != "red" {
		t.Errorf("color = %v: the kcp change was lost", got)
	}
}

// TestSyncer_adoptionStateWriteFails: adoption writes the state before the
// labels. When the state cannot be written, the object stays unadopted and
// the next pass adopts it again; had the labels been written first, the next
// pass would find a copy without state and overwrite its spec.
func TestSyncer_adoptionStateWriteFails(t *testing.T) {
	existing := typed(localGVK)
	existing.SetNamespace(cluster)
	existing.SetName("2747cabbb481a433679f-76d3bc41c9f588f7fcd0")
	existing.Object["spec"] = map[string]any{"color": "green"}
	e := newEnv(t, existing)
	failed := false
	c := interceptor.NewClient(e.service.(ctrlruntimeclient.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok && !failed {
				failed = true
				return errors.New("injected: the state Secret cannot be written")
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	e.syncer.Service, e.syncer.State.Client = c, c
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err == nil || !failed {
		t.Fatalf("want the injected failure, got %v", err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	local := e.localCopy(t)
	if local.GetLabels()["syncagent.kcp.io/remote-object-cluster"] != cluster {
		t.Errorf("not adopted: labels %v", local.GetLabels())
	}
	if diff := cmp.Diff(map[string]any{"color": "green"}, local.Object["spec"]); diff != "" {
		t.Errorf("the adopted object's spec was overwritten (-want +got):\n%s", diff)
	}
}

// TestSyncer_removingLastLabelAndAnnotation: a consumer removes the only
// label, then the only annotation of their object. Each removal reaches the
// local copy key by key: labels and annotations set on the service side
// and the sync metadata stay, and the object converges (a patch that drops
// metadata would be refused on every pass, freezing the object).
func TestSyncer_removingLastLabelAndAnnotation(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	remote := typed(remoteGVK)
	remote.SetNamespace("default")
	remote.SetName("foo")
	remote.SetLabels(map[string]string{"team": "a"})
	remote.SetAnnotations(map[string]string{"note": "n"})
	remote.Object["spec"] = map[string]any{"color": "blue"}
	if err := e.kcp.Create(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	local := e.localCopy(t)
	local.SetLabels(merge.WithEntries(local.GetLabels(), map[string]string{"operator": "yes"}))
	local.SetAnnotations(merge.WithEntries(local.GetAnnotations(), map[string]string{"svc": "keep"}))
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		name   string
		change func(*unstructured.Unstructured)
		check  func(*unstructured.Unstructured) bool
	}{
		{"label removed", func(o *unstructured.Unstructured) { o.SetLabels(nil) }, func(l *unstructured.Unstructured) bool {
			return l.GetLabels()["team"] == "" && l.GetLabels()["operator"] == "yes" && l.GetAnnotations()["note"] == "n"
		}},
		{"annotation removed", func(o *unstructured.Unstructured) { o.SetAnnotations(nil) }, func(l *unstructured.Unstructured) bool {
			return l.GetAnnotations()["note"] == "" && l.GetAnnotations()["svc"] == "keep" && l.GetLabels()["operator"] == "yes"
		}},
	} {
		obj := e.getRemote(t, "default", "foo")
		step.change(obj)
		if err := e.kcp.Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
		if _, err := e.converge(t, "default", "foo"); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		local := e.localCopy(t)
		if !step.check(local) {
			t.Errorf("%s: local labels %v, annotations %v", step.name, local.GetLabels(), local.GetAnnotations())
		}
		if _, ok := objmeta.FromLocal(local); !ok {
			t.Errorf("%s: the local copy lost its sync metadata: %v", step.name, local.GetLabels())
		}
		res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
		if err != nil || res.Writes != 0 {
			t.Errorf("%s: not converged: %+v, %v", step.name, res, err)
		}
	}
}

// TestSyncer_deleteConfirmsAbsenceLive: a kcp object deleted right after
// its copy was created, while the copies cache has not seen the copy yet:
// the copy is found with a live read and deleted before the finalizer
// goes (otherwise it would be orphaned forever).
func TestSyncer_deleteConfirmsAbsenceLive(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	// A cache that has not seen the copy.
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).Build()
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	res, err := e.syncer.Process(ctx, Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
	if err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") == nil {
		t.Fatal("the finalizer was released while the local copy existed")
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
	if err := e.service.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || res.Writes != 1 {
		t.Errorf("the copy the cache did not see was not deleted: %d copies left, %+v", len(list.Items), res)
	}
}

// TestSyncer_stateIsNeverACopy: with Secrets as the published type, the
// state Secrets carry the same remote-object labels as the copies; the
// copy lookup must not count them (it found two copies and failed
// forever). A copy of another type that happens to carry the state label
// is still a copy.
func TestSyncer_stateIsNeverACopy(t *testing.T) {
	secretGVK := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	remote := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "foo"}
	object := func(gvk schema.GroupVersionKind, name string, extra map[string]string) unstructured.Unstructured {
		u := typed(gvk)
		u.SetName(name)
		u.SetLabels(merge.WithEntries(remote.Labels("agent"), extra))
		return *u
	}
	state := map[string]string{keys.ObjectState: "true"}
	e := newEnv(t)
	testcases := []struct {
		name       string
		candidates []unstructured.Unstructured
		want       string
	}{
		{name: "a Secret copy next to its state Secret", candidates: []unstructured.Unstructured{object(secretGVK, "copy", nil), object(secretGVK, "obj-state-x", state)}, want: "copy"},
		{name: "a copy of another type with the state label", candidates: []unstructured.Unstructured{object(localGVK, "copy", state)}, want: "copy"},
		{name: "the copy of another kcp kind's object of the same name next to ours",
			candidates: []unstructured.Unstructured{ofKind(object(localGVK, "old", nil), "Gizmo.kcp.example.com"), ofKind(object(localGVK, "copy", nil), "Thing.kcp.example.com")}, want: "copy"},
		{name: "a copy that records no kind (an earlier version's) is ours",
			candidates: []unstructured.Unstructured{ofKind(object(localGVK, "old", nil), "Gizmo.kcp.example.com"), object(localGVK, "copy", nil)}, want: "copy"},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.syncer.onlyCopy(tc.candidates, schema.GroupKind{Group: "kcp.example.com", Kind: "Thing"})
			if err != nil || got == nil || got.GetName() != tc.want {
				t.Fatalf("onlyCopy = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestSyncer_namingSeesTheMutatedObject: the local name is computed from
// the kcp object after its spec mutations (contract §2.5), so a name
// template that reads a mutated field uses the mutated value.
func TestSyncer_namingSeesTheMutatedObject(t *testing.T) {
	e := newEnv(t)
	namer, err := naming.NewNamer(&syncagentv1alpha1.ResourceNaming{Name: "copy-{{ .Object.spec.color }}", Namespace: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	mutator, err := mutation.Compile([]syncagentv1alpha1.ResourceMutation{
		{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: "spec.color", Replacement: "mutated"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.Namer, e.syncer.SpecMutator = namer, mutator
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	local := e.localCopy(t)
	if local.GetNamespace() != "fixed" || local.GetName() != "copy-mutated" {
		t.Errorf("local copy %s/%s, want fixed/copy-mutated", local.GetNamespace(), local.GetName())
	}
	if color, _, _ := unstructured.NestedString(local.Object, "spec", "color"); color != "mutated" {
		t.Errorf("spec.color = %q, want the mutated value", color)
	}
}

// TestSyncer_deletionNeedsNoNaming: an object whose name template fails
// (no copy was ever created) is still deleted: the deletion finds copies
// by their labels, not by a computed name.
func TestSyncer_deletionNeedsNoNaming(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	namer, err := naming.NewNamer(&syncagentv1alpha1.ResourceNaming{Name: `{{ fail "no name" }}`})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.Namer = namer
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).Build() // a cache that lags
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err == nil {
		t.Fatal("want the naming error")
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatalf("the deletion depends on naming: %v", err)
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the object is stuck in deletion")
	}
}

// TestSyncer_vanishedObjectIsNotAnError: an object deleted between the
// cache read and the finalizer patch (created and deleted at once) is not
// an error: there is nothing to sync.
func TestSyncer_vanishedObjectIsNotAnError(t *testing.T) {
	e := newEnv(t)
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	obj := e.getRemote(t, "default", "foo")
	if err := e.kcp.Delete(context.Background(), obj.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	res, err := e.syncer.Process(context.Background(), Workspace{Client: e.kcp, Cluster: cluster}, obj)
	if err != nil || res.Writes != 0 {
		t.Errorf("got %+v, %v; want nothing done and no error", res, err)
	}
}

// TestSyncer_vanishedWithFinalizerCleansUp: the API server deletes an
// object whose finalizer was added while its deletion was in flight (the
// delete read "no finalizers" first), so the deletion flow never runs. Its
// copy and state (a state Secret written a moment ago, not yet in the
// cache, is read live) go once kcp confirms the object is gone.
func TestSyncer_vanishedWithFinalizerCleansUp(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	// The state store's cache has not seen the state Secret; the API
	// server has (writes go to the server).
	emptyCache := withAgentIndexes(fake.NewClientBuilder()).Build()
	cachedReads := interceptor.NewClient(e.service.(ctrlruntimeclient.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, _ ctrlruntimeclient.WithWatch, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
			return emptyCache.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, _ ctrlruntimeclient.WithWatch, list ctrlruntimeclient.ObjectList, opts ...ctrlruntimeclient.ListOption) error {
			return emptyCache.List(ctx, list, opts...)
		},
	})
	e.syncer.State = &state.Store{Client: cachedReads, Live: e.service, Namespace: "agent-ns", AgentName: "agent"}
	e.vanish(t, "default", "foo")
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	ref := fooRef()
	// The pass that deletes the copy asks for a requeue; by then the state
	// cache has caught up.
	res, err := e.syncer.Vanished(ctx, ws, ref)
	if err != nil || !res.Requeue {
		t.Fatalf("got %+v, %v; want the copy deleted and a requeue", res, err)
	}
	e.syncer.State = &state.Store{Client: e.service, Live: e.service, Namespace: "agent-ns", AgentName: "agent"}
	e.vanishedUntilDone(t, ws, ref)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
	secrets := &corev1.SecretList{}
	if err := e.service.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if err := e.service.List(ctx, secrets); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || len(secrets.Items) != 0 {
		t.Errorf("%d copies and %d state Secrets left, want none", len(list.Items), len(secrets.Items))
	}
}

// TestSyncer_vanishedOnlyWhenConfirmed: a kcp object that the workspace
// cache misses (it was just rebuilt) but the server has is not cleaned up;
// neither is one for which the server's 404 does not come from the object
// (a path it does not serve, as while a binding goes away); and when the
// caches know neither a copy nor state, nothing is read from any server
// (every ordinary deletion ends in this check).
func TestSyncer_vanishedOnlyWhenConfirmed(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	ref := fooRef()
	emptyCache := fake.NewClientBuilder().Build()
	res, err := e.syncer.Vanished(ctx, Workspace{Client: emptyCache, Live: e.kcp, Cluster: cluster}, ref)
	if err != nil || res.Writes != 0 {
		t.Fatalf("got %+v, %v; want nothing done", res, err)
	}
	e.localCopy(t)

	// What client-go makes of a 404 whose body is not a Status.
	notServed := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{Get: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.ObjectKey, ctrlruntimeclient.Object, ...ctrlruntimeclient.GetOption) error {
		return apierrors.NewGenericServerResponse(404, "GET", schema.GroupResource{Group: remoteGVK.Group, Resource: "things"}, "foo", "404 page not found", 0, true)
	}})
	res, err = e.syncer.Vanished(ctx, Workspace{Client: emptyCache, Live: notServed, Cluster: cluster}, ref)
	if err != nil || res.Writes != 0 {
		t.Fatalf("not served: got %+v, %v; want nothing done", res, err)
	}
	e.localCopy(t)

	noRead := func() interceptor.Funcs {
		return interceptor.Funcs{
			Get: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.ObjectKey, ctrlruntimeclient.Object, ...ctrlruntimeclient.GetOption) error {
				return errors.New("no read expected")
			},
			List: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.ObjectList, ...ctrlruntimeclient.ListOption) error {
				return errors.New("no read expected")
			},
		}
	}
	live := interceptor.NewClient(e.service.(ctrlruntimeclient.WithWatch), noRead())
	s := *e.syncer
	s.Copies, s.Service = e.service, live
	s.State = &state.Store{Client: e.service, Live: live, Namespace: "agent-ns", AgentName: "agent"}
	other := ref.DeepCopy()
	other.SetName("never-synced")
	if res, err := s.Vanished(ctx, Workspace{Client: interceptor.NewClient(emptyCache, noRead()), Cluster: cluster}, other); err != nil || res.Writes != 0 {
		t.Errorf("got %+v, %v; want nothing read and nothing done", res, err)
	}
}

// TestSyncer_vanishedCopyDeleteFailsOnce: the state is kept until the copy
// is gone, so a failed copy deletion is retried, not forgotten.
func TestSyncer_vanishedCopyDeleteFailsOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	e.vanish(t, "default", "foo")
	failed := false
	e.syncer.Service = interceptor.NewClient(e.service.(ctrlruntimeclient.WithWatch), interceptor.Funcs{
		Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
			if _, isSecret := obj.(*corev1.Secret); !isSecret && !failed {
				failed = true
				return errors.New("admission webhook refused")
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	ref := fooRef()
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	if _, err := e.syncer.Vanished(ctx, ws, ref); err == nil {
		t.Fatal("the failed deletion was not reported")
	}
	e.vanishedUntilDone(t, ws, ref)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
	if err := e.service.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("the copy stayed after one failed deletion")
	}
}

// TestSyncer_vanishedNeedsStateOfItsKind: a copy whose labels match a kcp
// object that does not exist, without state of this kind, may be the copy
// of a same-named object of another PublishedResource with the same source
// kind: it is left alone.
func TestSyncer_vanishedNeedsStateOfItsKind(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	ref := typed(schema.GroupVersionKind{Group: "other.example.com", Version: "v1", Kind: "Widget"})
	ref.SetNamespace("default")
	ref.SetName("foo")
	res, err := e.syncer.Vanished(ctx, Workspace{Client: e.kcp, Cluster: cluster}, ref)
	if err != nil || res.Writes != 0 {
		t.Fatalf("got %+v, %v; want nothing done", res, err)
	}
	e.localCopy(t)
}

// TestSyncer_primaryCompletesItsRelatedRole: a kcp object that is a
// primary and also the kcp-origin related object of another primary
// (contract §7 #31) keeps the shared finalizer until the other primary's
// copy of it and its record are gone; its deletion does that cleanup
// itself (the other primary's sync runs only on its own events, or never
// when its PublishedResource is disabled), then the finalizer goes.
func TestSyncer_primaryCompletesItsRelatedRole(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	e.createRemote(t, "default", "bar", map[string]any{"color": "red"})
	bar := state.Primary{APIVersion: remoteGVK.GroupVersion().String(), Kind: remoteGVK.Kind}
	bar.Cluster, bar.Namespace, bar.Name = cluster, "default", "bar"
	barHoldsFoo := state.Related{Primary: bar, RelatedRecord: state.RelatedRecord{
		Identifier: "peer", OriginSide: "kcp",
		Primary:     state.ObjectRef{APIVersion: bar.APIVersion, Kind: bar.Kind, Namespace: "default", Name: "bar"},
		Origin:      state.ObjectRef{APIVersion: bar.APIVersion, Kind: bar.Kind, Namespace: "default", Name: "foo"},
		Destination: state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: cluster, Name: "foo-peer"},
	}}
	// A record of a primary that is gone (an orphan) holds foo too.
	gone := bar
	gone.Name = "gone"
	goneHoldsFoo := barHoldsFoo
	goneHoldsFoo.Primary = gone
	goneHoldsFoo.RelatedRecord.Primary.Name = "gone"
	goneHoldsFoo.Destination.Name = "foo-gone"
	for _, rec := range []state.Related{barHoldsFoo, goneHoldsFoo} {
		if err := e.syncer.State.PutRelated(ctx, rec, map[string]any{"data": map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		if err := e.service.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: rec.Destination.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	for range 10 {
		obj := e.getRemote(t, "default", "foo")
		if obj == nil {
			break
		}
		// Until bar's copy of foo and its record are gone, foo stays.
		if err := e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "foo-peer"}, &corev1.ConfigMap{}); err == nil && !controllerutil.ContainsFinalizer(obj, ownFinalizer) {
			t.Fatal("the finalizer went before the related role's cleanup")
		}
		if _, err := e.syncer.Process(ctx, ws, obj); err != nil {
			t.Fatal(err)
		}
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Fatal("the object stayed")
	}
	for _, rec := range []state.Related{barHoldsFoo, goneHoldsFoo} {
		if err := e.service.Get(ctx, types.NamespacedName{Namespace: cluster, Name: rec.Destination.Name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s's copy of foo stayed: %v", rec.Name, err)
		}
		if got, err := e.syncer.State.GetRelated(ctx, rec); err != nil || got != nil {
			t.Errorf("%s's record of foo stayed: %v, %v", rec.Name, got, err)
		}
	}
}

// fooRef names default/foo as the controller does for a kcp object its
// cache does not have.
func fooRef() *unstructured.Unstructured {
	ref := typed(remoteGVK)
	ref.SetNamespace("default")
	ref.SetName("foo")
	return ref
}

// vanish removes a kcp object, finalizer or not, as the API server does
// when a delete races with the finalizer patch (or as a consumer who takes
// the finalizer off by hand).
func (e *env) vanish(t *testing.T, namespace, name string) {
	t.Helper()
	obj := e.getRemote(t, namespace, name)
	obj.SetFinalizers(nil)
	if err := e.kcp.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// vanishedUntilDone runs Vanished until it stops asking for a requeue.
func (e *env) vanishedUntilDone(t *testing.T, ws Workspace, ref *unstructured.Unstructured) {
	t.Helper()
	for range 5 {
		res, err := e.syncer.Vanished(context.Background(), ws, ref)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Requeue {
			return
		}
	}
	t.Fatal("Vanished did not finish within 5 passes")
}

// ofKind records a kcp kind on a local object, as the agent does on its copies.
func ofKind(u unstructured.Unstructured, gk string) unstructured.Unstructured {
	u.SetAnnotations(map[string]string{keys.RemoteObjectKind: gk})
	return u
}

// TestSyncer_oldKindsCopyIsNotTakenOver: after a projection change, the
// copy of an old kind's object (released, kept on the service cluster)
// has the workspace, namespace and name of a new object of the new kind.
// The new object does not take it over (ObjectConflict: its name is
// taken), and deleting the new object leaves it.
func TestSyncer_oldKindsCopyIsNotTakenOver(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.createRemote(t, "default", "foo", map[string]any{"color": "red"})
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	old, _, err := e.syncer.NewCopy(ws, e.getRemote(t, "default", "foo"))
	if err != nil {
		t.Fatal(err)
	}
	old.Object["spec"] = map[string]any{"color": "the old kind's"}
	old.SetAnnotations(merge.WithEntries(old.GetAnnotations(), map[string]string{keys.RemoteObjectKind: "Gizmo.kcp.example.com"}))
	if err := e.service.Create(ctx, old); err != nil {
		t.Fatal(err)
	}

	if _, err := e.converge(t, "default", "foo"); !errors.Is(err, ErrConflict) {
		t.Fatalf("the new kind's object: %v, want ErrConflict", err)
	}
	readOld := func() *unstructured.Unstructured {
		t.Helper()
		got := typed(localGVK)
		if err := e.service.Get(ctx, types.NamespacedName{Namespace: old.GetNamespace(), Name: old.GetName()}, got); err != nil {
			t.Fatalf("the old kind's copy: %v", err)
		}
		return got
	}
	if got := readOld(); got.Object["spec"].(map[string]any)["color"] != "the old kind's" {
		t.Errorf("the old kind's copy was written: %v", got.Object["spec"])
	}
	if err := e.kcp.Delete(ctx, e.getRemote(t, "default", "foo")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	if e.getRemote(t, "default", "foo") != nil {
		t.Error("the new kind's object was not released")
	}
	readOld()
}

// TestSyncer_removesTheDeletionMark: a namespace that a sweep marked for
// deletion (found empty) loses the mark before the copy is created in it,
// so the sweep's deletion, conditional on the namespace not changing since
// the mark, fails.
func TestSyncer_removesTheDeletionMark(t *testing.T) {
	marked := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster, ResourceVersion: "7",
		Annotations: map[string]string{keys.DeletionCandidate: "2026-11-28T00:00:00Z", "other": "kept"}}}
	e := newEnv(t, marked)
	e.createRemote(t, "default", "foo", map[string]any{"color": "blue"})
	if _, err := e.converge(t, "default", "foo"); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{}
	if err := e.service.Get(context.Background(), types.NamespacedName{Name: cluster}, ns); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"other": "kept"}, ns.Annotations); diff != "" {
		t.Errorf("annotations of the marked namespace (-want +got):\n%s", diff)
	}
	if ns.ResourceVersion == "7" {
		t.Error("the namespace did not change: a sweep's conditional delete would go through")
	}
	e.localCopy(t)
}
