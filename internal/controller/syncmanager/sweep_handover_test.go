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
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/logtest"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// TestSweepHandsOverVanishedObjectsWithACopy (soak seed 43, sixth run): a
// kcp object deleted while nothing synced it (its PublishedResource
// deselected) leaves its copy and state. The sweep must not delete that
// state while this agent's copy of the object is there: the sync's pass
// needs it to clean the copy up, and a later same-named object needs it
// as its three-way base. It hands the object to its kind's controller
// instead. A copy of another kind, another agent's copy, or a copy of a
// namespaced object of the same name is not the object's.
func TestSweepHandsOverVanishedObjectsWithACopy(t *testing.T) {
	remoteGVK := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Widget"}
	localGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widget := objmeta.Remote{Cluster: "ws1", Namespace: "team", Name: "obj-6"}
	clusterWidget := objmeta.Remote{Cluster: "ws1", Name: "obj-6"}

	stateOf := func(r objmeta.Remote) *corev1.Secret {
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(remoteGVK)
		stored.SetNamespace(r.Namespace)
		stored.SetName(r.Name)
		stored.SetLabels(map[string]string{"team": "black"})
		data, err := json.Marshal(stored.Object)
		if err != nil {
			t.Fatal(err)
		}
		l := r.Labels("me")
		l[keys.ObjectState] = "true"
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-ns", Name: "obj-state-ws1-x", Labels: l},
			Data: map[string][]byte{"k": data}}
	}
	copyOf := func(r objmeta.Remote, agent, kind string) *unstructured.Unstructured {
		cp := &unstructured.Unstructured{}
		cp.SetGroupVersionKind(localGVK)
		cp.SetNamespace("ws1-team")
		cp.SetName("obj-6")
		l := r.Labels(agent)
		l["team"] = "black"
		cp.SetLabels(l)
		if kind != "" {
			cp.SetAnnotations(map[string]string{keys.RemoteObjectKind: kind})
		}
		return cp
	}
	relatedStateOf := func(r objmeta.Remote) *corev1.Secret {
		rec := state.RelatedRecord{
			Primary:    state.ObjectRef{APIVersion: remoteGVK.GroupVersion().String(), Kind: remoteGVK.Kind, Namespace: r.Namespace, Name: r.Name},
			Identifier: "creds", OriginSide: "service",
			Origin:      state.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "ws1-team", Name: "creds"},
			Destination: state.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: r.Namespace, Name: "creds"},
		}
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		l := r.Labels("me")
		l[keys.ObjectState] = "true"
		l[keys.RelatedIdentifier] = "creds"
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-ns", Name: "obj-state-ws1-related", Labels: l},
			Data: map[string][]byte{"record": data}}
	}
	withoutAgentLabel := func(cp *unstructured.Unstructured) *unstructured.Unstructured {
		l := cp.GetLabels()
		delete(l, keys.AgentName)
		cp.SetLabels(l)
		return cp
	}
	request := func(r objmeta.Remote) []mcreconcile.Request {
		return []mcreconcile.Request{{ClusterName: r.Cluster, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}}}}
	}
	listFails := interceptor.Funcs{List: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.ObjectList, ...ctrlruntimeclient.ListOption) error {
		return errors.New("connection refused")
	}}

	stopFails := interceptor.Funcs{List: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.ObjectList, ...ctrlruntimeclient.ListOption) error {
		return fmt.Errorf("client rate limiter Wait returned an error: %w", context.Canceled)
	}}

	for _, tc := range []struct {
		name      string
		state     *corev1.Secret
		copy      *unstructured.Unstructured
		readerErr bool
		// stopping: the copies cannot be listed because the agent stops
		// (the sweep's context is cancelled): no ERROR in the log.
		stopping bool
		// secrets: the copies are Secrets (in the agent's namespace, as
		// state Secrets are), else Widgets.
		secrets bool
		// ownState: the object's own state is there too (state is a
		// related object's).
		ownState bool
		wantKept bool
		wantReqs []mcreconcile.Request
	}{
		{name: "copy present: kept and handed over", state: stateOf(widget), copy: copyOf(widget, "me", ""), wantKept: true, wantReqs: request(widget)},
		{name: "copy recording its kind: kept and handed over", state: stateOf(widget), copy: copyOf(widget, "me", "Widget.kcp.example.com"), wantKept: true, wantReqs: request(widget)},
		{name: "no copy: deleted", state: stateOf(widget)},
		{name: "copy of the reference or an older version (no agent label): kept and handed over", state: stateOf(widget), copy: withoutAgentLabel(copyOf(widget, "me", "")), wantKept: true, wantReqs: request(widget)},
		{name: "related object's state, the primary's copy and state there: kept and handed over", state: relatedStateOf(widget), ownState: true, copy: copyOf(widget, "me", ""), wantKept: true, wantReqs: request(widget)},
		{name: "related object's state, the primary's copy there but no state of its own: deleted", state: relatedStateOf(widget), copy: copyOf(widget, "me", "")},
		{name: "copy of another kind: deleted", state: stateOf(widget), copy: copyOf(widget, "me", "Gadget.kcp.example.com")},
		{name: "another agent's copy: deleted", state: stateOf(widget), copy: copyOf(widget, "other", "")},
		{name: "cluster-scoped object, copy of a namespaced one: deleted", state: stateOf(clusterWidget), copy: copyOf(widget, "me", "")},
		{name: "cluster-scoped object with its copy: kept", state: stateOf(clusterWidget), copy: copyOf(clusterWidget, "me", ""), wantKept: true, wantReqs: request(clusterWidget)},
		{name: "Secrets synced, no copy (the state Secret is none): deleted", state: stateOf(widget), secrets: true},
		{name: "copies cannot be listed: kept", state: stateOf(widget), copy: copyOf(widget, "me", ""), readerErr: true, wantKept: true},
		{name: "copies cannot be listed, the agent stops: kept, quietly", state: stateOf(widget), copy: copyOf(widget, "me", ""), readerErr: true, stopping: true, wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := corev1.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			// The service cluster serves the copies' type.
			s.AddKnownTypeWithName(localGVK, &unstructured.Unstructured{})
			s.AddKnownTypeWithName(localGVK.GroupVersion().WithKind("WidgetList"), &unstructured.UnstructuredList{})
			objs := []ctrlruntimeclient.Object{tc.state}
			if tc.copy != nil {
				objs = append(objs, tc.copy)
			}
			service := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
				WithIndex(&corev1.Secret{}, objmeta.RemoteIndex, objmeta.RemoteIndexValues).Build()
			var reader ctrlruntimeclient.Reader = service
			if tc.readerErr {
				fails := listFails
				if tc.stopping {
					fails = stopFails
				}
				reader = interceptor.NewClient(service.(ctrlruntimeclient.WithWatch), fails)
			}
			if tc.ownState {
				store := &state.Store{Client: service, Namespace: "agent-ns", AgentName: "me"}
				p := state.Primary{Remote: widget, APIVersion: remoteGVK.GroupVersion().String(), Kind: remoteGVK.Kind}
				if err := store.Put(context.Background(), p, map[string]any{"spec": map[string]any{}}); err != nil {
					t.Fatal(err)
				}
			}
			f := newFleet(logr.Discard(), nil, nil, 0)
			// The kcp object is gone on the server, which has another one
			// of its kind.
			other := &unstructured.Unstructured{}
			other.SetGroupVersionKind(remoteGVK)
			other.SetNamespace("team")
			other.SetName("another")
			cl := sweepCluster{server: fake.NewClientBuilder().WithObjects(other).Build(), cache: fake.NewClientBuilder().Build()}
			f.clusters["ws1"] = engaged{ctx: context.Background(), ws: syncctrl.Workspace{Name: "ws1", Cluster: cl}}
			ctrl := newFakeController()
			key := controllerKey{remoteGVK: remoteGVK, localGVK: localGVK}
			if tc.secrets {
				key.localGVK = corev1.SchemeGroupVersion.WithKind("Secret")
			}
			f.controllers["widgets"] = &running{key: key, ctrl: ctrl}
			errs := &logtest.ErrorCounter{}
			sw := &sweeper{fleet: f, client: service, reader: reader, namespace: "agent-ns", agentName: "me", log: logr.New(errs)}

			ctx, stop := context.WithCancel(context.Background())
			if tc.stopping {
				stop()
			}
			sw.sweep(ctx)
			stop()
			if logged := errs.Errors(); tc.readerErr && logged != map[bool]int32{true: 0, false: 1}[tc.stopping] {
				t.Errorf("%d ERROR lines logged, want one for a failure and none when the agent stops", logged)
			}

			err := service.Get(context.Background(), ctrlruntimeclient.ObjectKeyFromObject(tc.state), &corev1.Secret{})
			switch {
			case tc.wantKept && apierrors.IsNotFound(err):
				t.Error("the sweep deleted the state of a vanished kcp object whose local copy is still there: the copy can no longer be cleaned up, and a later same-named object takes it over without a base")
			case !tc.wantKept && err == nil:
				t.Error("the sweep kept the state of a vanished kcp object without a local copy of its own")
			case err != nil && !apierrors.IsNotFound(err):
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantReqs, ctrl.enqueued); diff != "" {
				t.Errorf("requests handed to the controller (-want +got):\n%s", diff)
			}
		})
	}
}
