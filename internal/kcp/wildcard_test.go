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

package kcp

import (
	"context"
	"fmt"
	"testing"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// informerCache plays controller-runtime's cache: GetInformer creates the
// informer with the wildcard cache's constructor, once per type.
type informerCache struct {
	cache.Cache
	informers map[schema.GroupVersionKind]toolscache.SharedIndexInformer
	created   map[schema.GroupVersionKind]int
}

func (c *informerCache) GetInformer(_ context.Context, obj ctrlruntimeclient.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		return nil, fmt.Errorf("asked for a %T informer, want an unstructured one", obj)
	}
	if inf, ok := c.informers[gvk]; ok {
		return inf, nil
	}
	c.created[gvk]++
	c.informers[gvk] = newInformer(&toolscache.ListWatch{}, obj, 0, toolscache.Indexers{})
	return c.informers[gvk], nil
}

// TestGetSharedInformer: the informer of a type (asked for by object or by
// list) is created once, carries the workspace indexes the provider's
// readers use, and is told apart by kind (unstructured, typed).
func TestGetSharedInformer(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, apimeta.RESTScopeNamespace)
	fake := &informerCache{informers: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{}, created: map[schema.GroupVersionKind]int{}}
	w := &WildcardCache{Cache: fake, scheme: runtime.NewScheme(), mapper: mapper}

	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	inf, got, scope, err := w.GetSharedInformer(obj)
	if err != nil {
		t.Fatal(err)
	}
	if got != gvk || scope != apimeta.RESTScopeNameNamespace {
		t.Errorf("GVK %v, scope %q", got, scope)
	}
	for _, index := range []string{kcpcache.ClusterIndexName, kcpcache.ClusterAndNamespaceIndexName} {
		if _, ok := inf.GetIndexer().GetIndexers()[index]; !ok {
			t.Errorf("the informer lacks the index %q", index)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind("ThingList"))
	again, _, _, err := w.GetSharedInformer(list)
	if err != nil {
		t.Fatal(err)
	}
	if again != inf || fake.created[gvk] != 1 {
		t.Errorf("the list's informer is another one (%d created), want the object's", fake.created[gvk])
	}
	if _, _, _, err := w.GetSharedInformer(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "other.example.com/v1", "kind": "Nothing"}}); err == nil {
		t.Error("a type without a REST mapping got an informer")
	}
	// A kind that ends in "List" is no list.
	allow := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "AllowList"}
	mapper.Add(allow, apimeta.RESTScopeNamespace)
	obj = &unstructured.Unstructured{}
	obj.SetGroupVersionKind(allow)
	if _, got, _, err := w.GetSharedInformer(obj); err != nil || got != allow {
		t.Errorf("AllowList: GVK %v, %v", got, err)
	}
}

func TestIsList(t *testing.T) {
	withItems := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kcp.example.com/v1", "kind": "AllowList", "items": []any{map[string]any{"a": "b"}}}}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want bool
	}{
		{"an unstructured object with items in its content", withItems, false},
		{"an unstructured list", &unstructured.UnstructuredList{}, true},
		{"a metadata list", &metav1.PartialObjectMetadataList{}, true},
		{"a typed list", &corev1.SecretList{}, true},
		{"a typed object", &corev1.Secret{}, false},
	} {
		if got := IsList(tc.obj); got != tc.want {
			t.Errorf("%s: IsList = %v, want %v", tc.name, got, tc.want)
		}
	}
}
