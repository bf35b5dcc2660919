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
	"strings"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kcp-syncagent/api-syncagent/internal/compact"
)

// WildcardCache is the cache of one virtual workspace endpoint: its
// informers list and watch /clusters/* and index by workspace, and the kcp
// provider's per-workspace caches read through them. It does what the
// provider's own does, with one difference: objects are compacted
// (internal/compact: no managedFields, which no code reads from the kcp
// caches, and shared strings) before they are stored, so each synced
// object costs less memory.
//
// It implements the provider's WildcardCache interface (cache.Cache plus
// GetSharedInformer). Unlike the provider's, GetSharedInformer does not
// wait for a new informer to sync: a read through a workspace cache of a
// type whose informer has not synced sees what it has so far. The sync
// controllers start and wait for their informers (with a deadline) before
// they read.
type WildcardCache struct {
	cache.Cache
	scheme *runtime.Scheme
	mapper apimeta.RESTMapper
}

// NewWildcardCache returns the cache of the endpoint whose base URL (without
// /clusters/...) is cfg.Host.
func NewWildcardCache(cfg *rest.Config, scheme *runtime.Scheme) (*WildcardCache, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/") + "/clusters/*"
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the HTTP client of %s: %w", cfg.Host, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("failed to create the REST mapper of %s: %w", cfg.Host, err)
	}
	c := &WildcardCache{scheme: scheme, mapper: mapper}
	c.Cache, err = cache.New(cfg, cache.Options{
		Scheme: scheme, HTTPClient: httpClient, Mapper: mapper,
		DefaultTransform: compact.Transform,
		NewInformer:      newInformer,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newInformer makes a kcp-aware informer (keys carry the workspace) with
// the workspace indexes the provider's readers use.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := kcpinformers.NewSharedIndexInformer(lw, obj, resync, indexers)
	if err := inf.AddIndexers(toolscache.Indexers{
		kcpcache.ClusterIndexName:             kcpcache.ClusterIndexFunc,
		kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc,
	}); err != nil {
		// Only fails on a started informer or an index name taken twice;
		// neither can happen on a new one.
		panic(fmt.Sprintf("indexing a new informer of %T: %v", obj, err))
	}
	return inf
}

// GetSharedInformer returns the informer of obj's type (of the items for a
// list), created if there is none, its GVK and its scope.
func (c *WildcardCache) GetSharedInformer(obj runtime.Object) (toolscache.SharedIndexInformer, schema.GroupVersionKind, apimeta.RESTScopeName, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, gvk, "", fmt.Errorf("no GVK for %T: %w", obj, err)
	}
	if IsList(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, gvk, "", fmt.Errorf("no REST mapping for %s: %w", gvk, err)
	}
	o, err := c.newObject(obj, gvk)
	if err != nil {
		return nil, gvk, "", err
	}
	// controller-runtime keeps one informer per type and kind of object
	// (unstructured, metadata, typed); a new one is made by newInformer.
	inf, err := c.Cache.GetInformer(context.TODO(), o, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, gvk, "", fmt.Errorf("failed to get the informer of %s: %w", gvk, err)
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, gvk, "", fmt.Errorf("the informer of %s is a %T", gvk, inf)
	}
	return shared, gvk, mapping.Scope.Name(), nil
}

// IsList tells lists from objects by their Go type: an unstructured object
// whose content has a top-level "items" field is no list, and a kind that
// ends in "List" (AllowList) is not one either.
func IsList(obj runtime.Object) bool {
	switch obj.(type) {
	case *unstructured.UnstructuredList, *metav1.PartialObjectMetadataList:
		return true
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		return false
	}
	return apimeta.IsListType(obj)
}

// newObject returns an empty object of gvk of the same kind as obj
// (unstructured, metadata or typed).
func (c *WildcardCache) newObject(obj runtime.Object, gvk schema.GroupVersionKind) (ctrlruntimeclient.Object, error) {
	switch obj.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m, nil
	}
	o, err := c.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("no type for %s: %w", gvk, err)
	}
	co, ok := o.(ctrlruntimeclient.Object)
	if !ok {
		return nil, fmt.Errorf("%T is no object", o)
	}
	return co, nil
}

// IndexField adds a field index whose keys carry the workspace
// ("<cluster>/<value>") and a wildcard ("*/<value>"), under the name
// "cluster/<field>", as the provider's readers expect.
func (c *WildcardCache) IndexField(ctx context.Context, obj ctrlruntimeclient.Object, field string, extract ctrlruntimeclient.IndexerFunc) error {
	return c.Cache.IndexField(ctx, obj, "cluster/"+field, func(o ctrlruntimeclient.Object) []string {
		values := extract(o)
		keys := make([]string, 0, 2*len(values))
		cluster := logicalcluster.From(o).String()
		for _, v := range values {
			keys = append(keys, cluster+"/"+v)
		}
		for _, v := range values {
			keys = append(keys, "*/"+v)
		}
		return keys
	})
}
