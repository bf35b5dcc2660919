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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

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
