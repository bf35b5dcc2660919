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
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// sweepCluster is a workspace whose cache (what the provider's
// GetAPIReader returns) is empty, as right after a reconnect, while the
// server has the object.
type sweepCluster struct {
	cluster.Cluster
	server, cache ctrlruntimeclient.Client
}

func (c sweepCluster) GetClient() ctrlruntimeclient.Client    { return c.server }
func (c sweepCluster) GetAPIReader() ctrlruntimeclient.Reader { return c.cache }
func (c sweepCluster) GetCache() cache.Cache                  { return emptyCache{} }

// emptyCache has nothing (a cache right after a reconnect).
type emptyCache struct{ cache.Cache }

func (emptyCache) Get(_ context.Context, key ctrlruntimeclient.ObjectKey, _ ctrlruntimeclient.Object, _ ...ctrlruntimeclient.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

// TestSweepReadsLive: the orphan sweep deletes a state Secret only when the
// server says the object is gone, not when an empty cache does.
func TestSweepReadsLive(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	thing := &unstructured.Unstructured{}
	thing.SetGroupVersionKind(gvk)
	thing.SetNamespace("default")
	thing.SetName("alive")
	stored, err := json.Marshal(thing.Object)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "obj-state-ws1-x", Labels: map[string]string{keys.RemoteObjectCluster: "ws1"}},
		Data:       map[string][]byte{"k": stored},
	}
	f := newFleet(logr.Discard(), nil, nil, 0)
	cl := sweepCluster{server: fake.NewClientBuilder().WithObjects(thing.DeepCopy()).Build(), cache: fake.NewClientBuilder().Build()}
	f.clusters["ws1"] = engaged{ctx: context.Background(), ws: syncctrl.Workspace{Name: "ws1", Cluster: cl}}
	f.controllers["things"] = &running{key: controllerKey{remoteGVK: gvk}}
	s := &sweeper{fleet: f, log: logr.Discard()}
	if _, gone := s.orphaned(context.Background(), secret); gone {
		t.Fatal("the state of an object the server has was taken for an orphan")
	}
	if err := cl.server.Delete(context.Background(), thing); err != nil {
		t.Fatal(err)
	}
	if _, gone := s.orphaned(context.Background(), secret); !gone {
		t.Error("the state of an object the server does not have was kept")
	}

	// A 404 for the whole resource (the workspace's binding going away,
	// the resource withdrawn from the export) is not the object's.
	cl.server = interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Get: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.ObjectKey, ctrlruntimeclient.Object, ...ctrlruntimeclient.GetOption) error {
			return apierrors.NewGenericServerResponse(404, "GET", schema.GroupResource{Group: gvk.Group, Resource: "things"}, "alive", "", 0, true)
		},
	})
	f.clusters["ws1"] = engaged{ctx: context.Background(), ws: syncctrl.Workspace{Name: "ws1", Cluster: cl}}
	if _, gone := s.orphaned(context.Background(), secret); gone {
		t.Error("a 404 of the whole resource was taken for the object's: its state would go")
	}
}

// TestSweepGoneWorkspaces: this agent's copies and state of a workspace
// that no endpoint binds the export in go once two sweeps in a row over
// the same endpoints found it unbound; a bound and an engaged workspace
// are left alone, as are copies without this agent's label, and any
// sweep that cannot tell (an endpoint that cannot be listed, a binding
// without a workspace, another set of endpoints) starts the count again.
func TestSweepGoneWorkspaces(t *testing.T) {
	localGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	localCopy := func(name, cluster, agent string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(localGVK)
		u.SetNamespace(cluster)
		u.SetName(name)
		l := map[string]string{keys.RemoteObjectCluster: cluster}
		if agent != "" {
			l[keys.AgentName] = agent
		}
		u.SetLabels(l)
		return u
	}
	stateOf := func(name, cluster string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-ns", Name: name,
			Labels: map[string]string{keys.RemoteObjectCluster: cluster, keys.ObjectState: "true", keys.AgentName: "me"}}}
	}
	binding := func(cluster string) runtime.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apis.kcp.io", Version: "v1alpha1", Kind: "APIBinding"})
		u.SetName("export-in-" + cluster)
		if cluster != "" {
			u.SetAnnotations(map[string]string{"kcp.io/cluster": cluster})
		}
		return u
	}
	// A service owner's object claimed by an import that did not finish:
	// not a copy to delete.
	claimedCopy := localCopy("claimed-by-import", "gone", "me")
	claimedCopy.SetAnnotations(map[string]string{keys.Importing: "gone/default/x"})
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	service := fake.NewClientBuilder().WithScheme(s).WithObjects(
		localCopy("gone-copy", "gone", "me"), localCopy("old-agent-copy", "gone", ""), localCopy("theirs", "gone", "other"),
		localCopy("bound-copy", "bound", "me"), localCopy("engaged-copy", "engaged", "me"), claimedCopy,
		stateOf("obj-state-gone-1", "gone"), stateOf("obj-state-bound-1", "bound"),
	).Build()
	endpointDown, anonymous := false, false
	clients := func(string, string) (dynamic.Interface, error) {
		if endpointDown {
			return nil, errors.New("connection refused")
		}
		objs := []runtime.Object{binding("bound")}
		if anonymous {
			objs = append(objs, binding(""))
		}
		return fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiBindings: "APIBindingList"}, objs...), nil
	}
	f := newFleet(logr.Discard(), nil, nil, 0)
	f.providers["https://shard-a"] = &endpoint{}
	f.controllers["things"] = &running{key: controllerKey{localGVK: localGVK}}
	f.clusters["engaged"] = engaged{ctx: context.Background(), ws: syncctrl.Workspace{Name: "engaged", Cluster: sweepCluster{}}}
	sw := &sweeper{fleet: f, client: service, reader: service, clients: clients, namespace: "agent-ns", agentName: "me", unbound: true, log: logr.Discard()}

	left := func() []string {
		var names []string
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(localGVK.GroupVersion().WithKind("ThingList"))
		if err := service.List(context.Background(), list); err != nil {
			t.Fatal(err)
		}
		for _, i := range list.Items {
			names = append(names, i.GetName())
		}
		var secrets corev1.SecretList
		if err := service.List(context.Background(), &secrets); err != nil {
			t.Fatal(err)
		}
		for _, i := range secrets.Items {
			names = append(names, i.Name)
		}
		slices.Sort(names)
		return names
	}
	all := left()
	steps := []struct {
		name         string
		endpointDown bool
		anonymous    bool
		shards       []string
		want         []string
	}{
		{name: "first sweep: suspected only", want: all},
		{name: "an endpoint cannot be listed: nothing, and the count starts again", endpointDown: true, want: all},
		{name: "suspected again", want: all},
		{name: "a binding without a workspace: cannot tell", anonymous: true, want: all},
		{name: "suspected again", want: all},
		{name: "another set of endpoints: suspected only", shards: []string{"https://shard-a", "https://shard-b"}, want: all},
		{name: "back to the first set: suspected only", want: all},
		{name: "second sweep in a row over the same endpoints: this agent's copies and state of the workspace go",
			want: []string{"bound-copy", "claimed-by-import", "engaged-copy", "obj-state-bound-1", "old-agent-copy", "theirs"}},
	}
	for _, step := range steps {
		endpointDown, anonymous = step.endpointDown, step.anonymous
		f.providers = map[string]*endpoint{}
		shards := step.shards
		if shards == nil {
			shards = []string{"https://shard-a"}
		}
		for _, u := range shards {
			f.providers[u] = &endpoint{}
		}
		var secrets corev1.SecretList
		if err := service.List(context.Background(), &secrets); err != nil {
			t.Fatal(err)
		}
		sw.goneWorkspaces(context.Background(), secrets.Items, func() *bindings { return sw.bindings(context.Background()) })
		if diff := cmp.Diff(step.want, left()); diff != "" {
			t.Errorf("%s: objects left (-want +got):\n%s", step.name, diff)
		}
	}
}
