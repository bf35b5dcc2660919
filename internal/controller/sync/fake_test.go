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

package sync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// fakeInformers is a cache whose informers count their handlers and
// deliver events synchronously. Only the methods the controller uses are
// implemented.
type fakeInformers struct {
	cache.Cache // unused methods panic

	mu        sync.Mutex
	informers map[schema.GroupVersionKind]*fakeInformer
	removed   int
}

func newFakeInformers() *fakeInformers {
	return &fakeInformers{informers: map[schema.GroupVersionKind]*fakeInformer{}}
}

func (f *fakeInformers) informer(gvk schema.GroupVersionKind) *fakeInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	inf := f.informers[gvk]
	if inf == nil {
		inf = &fakeInformer{handlers: map[*fakeRegistration]toolscache.ResourceEventHandler{}}
		f.informers[gvk] = inf
	}
	return inf
}

func (f *fakeInformers) has(gvk schema.GroupVersionKind) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.informers[gvk]
	return ok
}

func (f *fakeInformers) GetInformer(_ context.Context, obj ctrlruntimeclient.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	return f.informer(obj.GetObjectKind().GroupVersionKind()), nil
}

func (f *fakeInformers) IndexField(context.Context, ctrlruntimeclient.Object, string, ctrlruntimeclient.IndexerFunc) error {
	return nil
}

func (f *fakeInformers) RemoveInformer(_ context.Context, obj ctrlruntimeclient.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.informers, obj.GetObjectKind().GroupVersionKind())
	f.removed++
	return nil
}

// List lists the objects of the informer of the list's type.
func (f *fakeInformers) List(_ context.Context, list ctrlruntimeclient.ObjectList, _ ...ctrlruntimeclient.ListOption) error {
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return errors.New("unstructured lists only")
	}
	gvk := ul.GroupVersionKind()
	gvk.Kind = gvk.Kind[:len(gvk.Kind)-len("List")]
	inf := f.informer(gvk)
	inf.mu.Lock()
	defer inf.mu.Unlock()
	for _, o := range inf.objects {
		ul.Items = append(ul.Items, *o.DeepCopy())
	}
	return nil
}

// handlerCount counts the handlers of all informers.
func (f *fakeInformers) handlerCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, inf := range f.informers {
		inf.mu.Lock()
		n += len(inf.handlers)
		inf.mu.Unlock()
	}
	return n
}

type fakeInformer struct {
	cache.Informer // unused methods panic

	mu       sync.Mutex
	handlers map[*fakeRegistration]toolscache.ResourceEventHandler
	objects  []*unstructured.Unstructured
	indexes  map[string]bool
}

// fakeRegistration is not zero-sized: pointers to distinct zero-sized
// values may be equal, and the handlers are keyed by it.
type fakeRegistration struct{ _ byte }

func (*fakeRegistration) HasSynced() bool { return true }

// AddIndexers records the indexes' names and, as client-go does, refuses
// a name it has (reads of the fake are not indexed).
func (i *fakeInformer) AddIndexers(indexers toolscache.Indexers) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.indexes == nil {
		i.indexes = map[string]bool{}
	}
	for name := range indexers {
		if i.indexes[name] {
			return fmt.Errorf("indexer conflict: map[%s:{}]", name)
		}
		i.indexes[name] = true
	}
	return nil
}

func (i *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	reg := &fakeRegistration{}
	i.handlers[reg] = h
	for _, o := range i.objects {
		h.OnAdd(o, true)
	}
	return reg, nil
}

func (i *fakeInformer) RemoveEventHandler(reg toolscache.ResourceEventHandlerRegistration) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.handlers, reg.(*fakeRegistration))
	return nil
}

// add stores an object and tells every handler.
func (i *fakeInformer) add(o *unstructured.Unstructured) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.objects = append(i.objects, o)
	for _, h := range i.handlers {
		h.OnAdd(o, false)
	}
}

// fakeCluster is a workspace whose cache is its endpoint's, scoped to the
// workspace.
type fakeCluster struct {
	cluster.Cluster // unused methods panic
	name            string
	endpoint        *fakeInformers
}

func (c *fakeCluster) GetCache() cache.Cache {
	return &fakeScoped{fakeInformers: c.endpoint, name: c.name}
}

func (c *fakeCluster) GetClient() ctrlruntimeclient.Client { return fake.NewClientBuilder().Build() }

type fakeScoped struct {
	*fakeInformers
	name string
}

func (s *fakeScoped) List(ctx context.Context, list ctrlruntimeclient.ObjectList, opts ...ctrlruntimeclient.ListOption) error {
	if err := s.fakeInformers.List(ctx, list, opts...); err != nil {
		return err
	}
	ul := list.(*unstructured.UnstructuredList)
	ul.Items = slices.DeleteFunc(ul.Items, func(o unstructured.Unstructured) bool { return logicalcluster.From(&o).String() != s.name })
	return nil
}

// testOptions are the options of a sync controller for Things whose
// service-side clients are fakes.
func testOptions(t *testing.T) Options {
	t.Helper()
	return Options{
		PublishedResource: &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things"}},
		AgentName:         "agent",
		Namespace:         "kcp-system",
		LocalGVK:          thingGVK,
		RemoteGVK:         thingGVK,
		LocalNamespaced:   true,
		RemoteNamespaced:  true,
		Service:           fake.NewClientBuilder().Build(),
		ServiceReader:     fake.NewClientBuilder().Build(),
		Log:               logr.Discard(),
		Events:            record.NewFakeRecorder(100),
	}
}

// relatedSpecs: kcp-origin Secrets watched by owner, service-origin
// ConfigMaps watched by selector.
func relatedSpecs() []syncagentv1alpha1.RelatedResourceSpec {
	ref := syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
		Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.ref"},
	}}
	return []syncagentv1alpha1.RelatedResourceSpec{
		{Identifier: "creds", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Kind: "Secret", Object: ref,
			Watch: &syncagentv1alpha1.RelatedResourceWatch{ByOwner: &syncagentv1alpha1.RelatedResourceWatchByOwner{}}},
		{Identifier: "config", Origin: syncagentv1alpha1.RelatedResourceOriginService, Kind: "ConfigMap", Object: ref,
			Watch: &syncagentv1alpha1.RelatedResourceWatch{BySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}},
	}
}

func relatedType(gvk schema.GroupVersionKind, resource string) related.Type {
	return related.Type{GVR: gvk.GroupVersion().WithResource(resource), TypeInfo: discovery.TypeInfo{GVK: gvk, Namespaced: true}}
}
