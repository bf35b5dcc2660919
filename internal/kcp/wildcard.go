package kcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
)

// WildcardCache is the cache of one virtual workspace endpoint: its
// informers list and watch /clusters/* and index by workspace, and the kcp
// provider's per-workspace caches read through them. It does what the
// provider's own does, with one difference: managedFields are dropped
// before an object is stored (no code reads them from the kcp caches; they
// are a third of a cached object), so each synced object costs less memory.
//
// It implements the provider's WildcardCache interface (cache.Cache plus
// GetSharedInformer).
type WildcardCache struct {
	cache.Cache
	scheme *runtime.Scheme
	mapper apimeta.RESTMapper

	mu sync.RWMutex
	// informers by the kind of object they hold and GVK.
	informers map[informerKind]map[schema.GroupVersionKind]toolscache.SharedIndexInformer
}

type informerKind int

const (
	structuredInformer informerKind = iota
	unstructuredInformer
	metadataInformer
)

func kindOf(obj runtime.Object) informerKind {
	switch obj.(type) {
	case runtime.Unstructured:
		return unstructuredInformer
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return metadataInformer
	default:
		return structuredInformer
	}
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
	c := &WildcardCache{
		scheme: scheme,
		mapper: mapper,
		informers: map[informerKind]map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
			structuredInformer: {}, unstructuredInformer: {}, metadataInformer: {},
		},
	}
	c.Cache, err = cache.New(cfg, cache.Options{
		Scheme: scheme, HTTPClient: httpClient, Mapper: mapper,
		DefaultTransform: cache.TransformStripManagedFields(),
		NewInformer:      c.newInformer,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newInformer makes a kcp-aware informer (keys carry the workspace) with
// the workspace indexes the provider's readers use, and records it.
func (c *WildcardCache) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		// controller-runtime resolved this GVK with the same scheme just
		// before it asked for the informer.
		panic(fmt.Sprintf("no GVK for %T: %v", obj, err))
	}
	inf := kcpinformers.NewSharedIndexInformer(lw, obj, resync, indexers)
	if err := inf.AddIndexers(toolscache.Indexers{
		kcpcache.ClusterIndexName:             kcpcache.ClusterIndexFunc,
		kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc,
	}); err != nil {
		// Only fails on a started informer or a name taken twice; neither
		// can happen on a new one.
		panic(fmt.Sprintf("indexing the informer of %s: %v", gvk, err))
	}
	c.mu.Lock()
	c.informers[kindOf(obj)][gvk] = inf
	c.mu.Unlock()
	return inf
}

// GetSharedInformer returns the informer of obj's type (created if there is
// none), its GVK and its scope.
func (c *WildcardCache) GetSharedInformer(obj runtime.Object) (toolscache.SharedIndexInformer, schema.GroupVersionKind, apimeta.RESTScopeName, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, gvk, "", fmt.Errorf("no GVK for %T: %w", obj, err)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, gvk, "", fmt.Errorf("no REST mapping for %s: %w", gvk, err)
	}
	kind := kindOf(obj)
	if inf, ok := c.lookup(kind, gvk); ok {
		return inf, gvk, mapping.Scope.Name(), nil
	}
	// controller-runtime creates the informer through newInformer.
	o, err := c.newObject(kind, gvk)
	if err != nil {
		return nil, gvk, "", err
	}
	if _, err := c.Cache.GetInformer(context.TODO(), o, cache.BlockUntilSynced(false)); err != nil {
		return nil, gvk, "", fmt.Errorf("failed to create the informer of %s: %w", gvk, err)
	}
	inf, ok := c.lookup(kind, gvk)
	if !ok {
		return nil, gvk, "", fmt.Errorf("the informer of %s was not created", gvk)
	}
	return inf, gvk, mapping.Scope.Name(), nil
}

func (c *WildcardCache) lookup(kind informerKind, gvk schema.GroupVersionKind) (toolscache.SharedIndexInformer, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	inf, ok := c.informers[kind][gvk]
	return inf, ok
}

// newObject returns an empty object of gvk held by informers of kind.
func (c *WildcardCache) newObject(kind informerKind, gvk schema.GroupVersionKind) (ctrlruntimeclient.Object, error) {
	switch kind {
	case unstructuredInformer:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	case metadataInformer:
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
