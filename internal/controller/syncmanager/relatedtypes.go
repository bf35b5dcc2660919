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
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	agentdiscovery "github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// relatedTypes finds the types of the related entries: the service-side one
// on the service cluster, the kcp-side one on every serving endpoint (types
// from other exports are served there through the permission claims; an
// endpoint without one would never deliver its events).
func (r *reconciler) relatedTypes(pr *syncagentv1alpha1.PublishedResource, urls []string) ([]syncctrl.RelatedTypes, error) {
	var out []syncctrl.RelatedTypes
	for i := range pr.Spec.Related {
		rel := &pr.Spec.Related[i]
		kcpGVR, serviceGVR := related.GVRs(rel)
		service, err := r.Resolver.ResourceInfo(serviceGVR)
		if err != nil {
			return nil, fmt.Errorf("related %q: the service cluster: %w", rel.Identifier, err)
		}
		var kcp agentdiscovery.TypeInfo
		for j, url := range urls {
			info, err := r.kcpType(url, kcpGVR)
			if err != nil {
				return nil, fmt.Errorf("related %q: endpoint %s: %w (is the permission claim accepted?)", rel.Identifier, url, err)
			}
			if j == 0 {
				kcp = info
			}
		}
		out = append(out, syncctrl.RelatedTypes{
			Kcp:     related.Type{GVR: kcpGVR, TypeInfo: kcp},
			Service: related.Type{GVR: serviceGVR, TypeInfo: service},
		})
	}
	return out, nil
}

// kcpType looks a resource up in an endpoint's wildcard discovery;
// answers are remembered for relatedTypeMemory.
func (r *reconciler) kcpType(url string, gvr schema.GroupVersionResource) (agentdiscovery.TypeInfo, error) {
	return r.kcpTypes.get(url+"|"+gvr.String(), func() (agentdiscovery.TypeInfo, error) {
		dc, err := r.endpointDiscovery(url)
		if err != nil {
			return agentdiscovery.TypeInfo{}, err
		}
		return agentdiscovery.ResourceInfo(dc, gvr)
	})
}

// relatedTypeMemory is how long an endpoint's answer about a related type
// is trusted. A claimed type can change under a running controller (a kcp
// upgrade gives a built-in type its status subresource, another export's
// schema changes); the periodic re-check of a running controller
// (endpointRecheckInterval) asks again after this and restarts the
// controller when the answer changed.
const relatedTypeMemory = 10 * time.Minute

// typeCache remembers discovery answers (errors are not remembered) for
// relatedTypeMemory; expired answers are dropped when another is added,
// so endpoints that went away leave nothing behind. The zero value is
// ready to use.
type typeCache struct {
	mu      sync.Mutex
	entries map[string]typeEntry
	// now is the clock (time.Now when nil).
	now func() time.Time
}

type typeEntry struct {
	info  agentdiscovery.TypeInfo
	until time.Time
}

// get returns the remembered answer for key, or asks lookup (without
// holding the lock) and remembers a successful answer.
func (c *typeCache) get(key string, lookup func() (agentdiscovery.TypeInfo, error)) (agentdiscovery.TypeInfo, error) {
	c.mu.Lock()
	e, known := c.entries[key]
	now := c.clock()
	c.mu.Unlock()
	if known && now.Before(e.until) {
		return e.info, nil
	}
	info, err := lookup()
	if err != nil {
		return info, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now = c.clock()
	if c.entries == nil {
		c.entries = map[string]typeEntry{}
	}
	for k, e := range c.entries {
		if !now.Before(e.until) {
			delete(c.entries, k)
		}
	}
	c.entries[key] = typeEntry{info: info, until: now.Add(relatedTypeMemory)}
	return info, nil
}

func (c *typeCache) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}
