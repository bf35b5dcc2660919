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

// Package cacheindextest builds real controller-runtime caches over fixed
// objects, for tests of what reads through cache indexes: no API server,
// the informers list the objects given and never see a change.
package cacheindextest

import (
	"context"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewCache returns a controller-runtime cache of the namespaced types of
// objs (registered in scheme) whose informers list objs. It is started
// once setup, which may add indexes, has run, and runs until the test ends
// or for 30 s at most.
func NewCache(t *testing.T, scheme *runtime.Scheme, setup func(context.Context, cache.Cache) error, objs ...ctrlruntimeclient.Object) cache.Cache {
	t.Helper()
	mapper := apimeta.NewDefaultRESTMapper(nil)
	byType := map[string][]runtime.Object{}
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			t.Fatal(err)
		}
		mapper.Add(gvk, apimeta.RESTScopeNamespace)
		byType[gvk.String()] = append(byType[gvk.String()], o)
	}
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:1"}, cache.Options{
		Scheme: scheme, Mapper: mapper,
		NewInformer: func(_ toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			gvk, err := apiutil.GVKForObject(obj, scheme)
			if err != nil {
				panic(err)
			}
			items := byType[gvk.String()]
			lw := &toolscache.ListWatch{
				ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
					list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
					if err != nil {
						return nil, err
					}
					if err := apimeta.SetList(list, items); err != nil {
						return nil, err
					}
					list.(metav1.ListInterface).SetResourceVersion("1")
					return list, nil
				},
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if setup != nil {
		if err := setup(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not start")
	}
	return c
}
