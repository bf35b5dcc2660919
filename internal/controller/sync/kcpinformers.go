package sync

import (
	gosync "sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// kcpInformers records the kcp types whose informers a controller started
// or read through, per endpoint cache (the provider's wildcard cache, which
// every workspace of the endpoint shares). The pinned kcp provider cannot
// drop an informer (creating it again panics), so the fleet remakes an
// endpoint's connection once it holds informers that no running controller
// uses; this record tells it which those are.
type kcpInformers struct {
	mu    gosync.Mutex
	types map[cache.Informers]sets.Set[schema.GroupVersionKind]
}

// used records that gvk's informer of endpoint ep was used.
func (k *kcpInformers) used(ep cache.Informers, gvk schema.GroupVersionKind) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.types == nil {
		k.types = map[cache.Informers]sets.Set[schema.GroupVersionKind]{}
	}
	if k.types[ep] == nil {
		k.types[ep] = sets.New[schema.GroupVersionKind]()
	}
	k.types[ep].Insert(gvk)
}

// snapshot returns a copy of the record.
func (k *kcpInformers) snapshot() map[cache.Informers]sets.Set[schema.GroupVersionKind] {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[cache.Informers]sets.Set[schema.GroupVersionKind], len(k.types))
	for ep, types := range k.types {
		out[ep] = sets.New(types.UnsortedList()...)
	}
	return out
}

// KcpInformers returns the kcp types whose informers the controller used,
// by endpoint cache (Workspace.Endpoint).
func (c *Controller) KcpInformers() map[cache.Informers]sets.Set[schema.GroupVersionKind] {
	return c.hub.informers.snapshot()
}

// reads returns the kcp client of a reconcile in an engaged workspace:
// reads come from the workspace's cache (related types too: a read through
// the virtual workspace per related object costs kcp far more,
// docs/performance.md), and the informers they use are recorded; writes
// go to the workspace.
func (h *hub) reads(ws Workspace) cachedReads {
	return cachedReads{Client: ws.Cluster.GetClient(), cache: ws.Cluster.GetCache(),
		record: func(gvk schema.GroupVersionKind) { h.informers.used(ws.Endpoint, gvk) }}
}
