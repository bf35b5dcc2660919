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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

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
