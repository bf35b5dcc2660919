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
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// unusedInformers decides when an endpoint's connection is remade to drop
// kcp informers that no running controller uses. An endpoint's informers
// (its provider's wildcard cache) hold the objects of their type in every
// workspace of the endpoint; the pinned kcp provider cannot remove one
// (creating it again panics), so a deleted PublishedResource, or one whose
// related types changed, would leave them for as long as the connection
// lives. A fresh connection starts only the informers the running
// controllers ask for again; it costs one list of those types.
//
// Endpoint connections are named (endpointID), so that nothing here holds
// a cache alive. The types of stopped controllers (and of the sweeper's
// reads) are held per connection with the time they were first held; a
// type a running controller uses is no longer held (that controller's own
// record holds it when it stops). A connection that has held an unused
// type for the whole timeout is remade and forgotten; so is one that is
// gone. A timeout of 0 counts unused types but never remakes.
type unusedInformers struct {
	timeout time.Duration
	held    map[string]map[schema.GroupVersionKind]time.Time
}

func newUnusedInformers(timeout time.Duration) *unusedInformers {
	return &unusedInformers{timeout: timeout, held: map[string]map[schema.GroupVersionKind]time.Time{}}
}

// retired holds, from now, the informers a stopped user used.
func (u *unusedInformers) retired(now time.Time, used map[string]sets.Set[schema.GroupVersionKind]) {
	for ep, types := range used {
		if u.held[ep] == nil {
			u.held[ep] = map[schema.GroupVersionKind]time.Time{}
		}
		for gvk := range types {
			if _, ok := u.held[ep][gvk]; !ok {
				u.held[ep][gvk] = now
			}
		}
	}
}

// check returns the connections to remake now, given the current ones and
// the types the running controllers use, and how many unused types the
// current connections hold afterwards.
func (u *unusedInformers) check(now time.Time, current sets.Set[string], inUse map[string]sets.Set[schema.GroupVersionKind]) (remake []string, unused int) {
	for ep, types := range u.held {
		if !current.Has(ep) {
			delete(u.held, ep)
			continue
		}
		expired := false
		for gvk, since := range types {
			switch {
			case inUse[ep].Has(gvk):
				delete(types, gvk)
			case u.timeout > 0 && now.Sub(since) >= u.timeout:
				expired = true
			}
		}
		switch {
		case len(types) == 0:
			delete(u.held, ep)
		case expired:
			remake = append(remake, ep)
			delete(u.held, ep)
		default:
			unused += len(types)
		}
	}
	return remake, unused
}
