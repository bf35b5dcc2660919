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
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
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
