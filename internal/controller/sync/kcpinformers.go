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
	gosync "sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// kcpInformers records the kcp types whose informers a controller started
// or read through, per endpoint connection (its wildcard cache, which every
// workspace of the endpoint shares), named by Workspace.EndpointID (a name
// holds no cache alive). Informers are not removed one by one (the
// provider's own cache panicked when one was created again; every
// workspace cache of the endpoint reads through them, and nothing counts
// those readers), so the fleet remakes an endpoint's connection once it
// holds informers that no running controller uses; this record tells it
// which those are.
type kcpInformers struct {
	mu    gosync.Mutex
	types map[string]sets.Set[schema.GroupVersionKind]
}

// used records that gvk's informer of endpoint ep (Workspace.EndpointID;
// empty: no endpoint) was used.
func (k *kcpInformers) used(ep string, gvk schema.GroupVersionKind) {
	if ep == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.types == nil {
		k.types = map[string]sets.Set[schema.GroupVersionKind]{}
	}
	if k.types[ep] == nil {
		k.types[ep] = sets.New[schema.GroupVersionKind]()
	}
	k.types[ep].Insert(gvk)
}

// snapshot returns a copy of the record.
func (k *kcpInformers) snapshot() map[string]sets.Set[schema.GroupVersionKind] {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]sets.Set[schema.GroupVersionKind], len(k.types))
	for ep, types := range k.types {
		out[ep] = types.Clone()
	}
	return out
}

// KcpInformers returns the kcp types whose informers the controller used,
// by endpoint (Workspace.EndpointID). Once Start returned, it is complete:
// nothing of the controller starts an informer any more.
func (c *Controller) KcpInformers() map[string]sets.Set[schema.GroupVersionKind] {
	return c.hub.informers.snapshot()
}

// reads returns the kcp client of a reconcile in an engaged workspace:
// reads come from the workspace's cache (related types too: a read through
// the virtual workspace per related object costs kcp far more,
// docs/performance.md), and the informers they use are recorded; writes
// go to the workspace.
func (h *hub) reads(ws Workspace) cachedReads {
	return cachedReads{Client: ws.Cluster.GetClient(), cache: ws.Cluster.GetCache(),
		record: func(gvk schema.GroupVersionKind) { h.informers.used(ws.EndpointID, gvk) }}
}
