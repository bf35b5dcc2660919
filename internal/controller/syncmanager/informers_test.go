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
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// TestUnusedInformers walks the decision through its transitions: a type
// only stopped controllers used is held and, once it has been held for the
// timeout, its connection is remade (once, and then forgotten); a type a
// running controller uses is not held; each type has its own timeout; a
// connection that is gone is forgotten; a timeout of 0 counts and never
// remakes.
func TestUnusedInformers(t *testing.T) {
	thing := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	types := func(ep string, gvks ...schema.GroupVersionKind) map[string]sets.Set[schema.GroupVersionKind] {
		return map[string]sets.Set[schema.GroupVersionKind]{ep: sets.New(gvks...)}
	}
	both := sets.New("a#1", "b#1")
	type step struct {
		after   time.Duration // since the start
		retired map[string]sets.Set[schema.GroupVersionKind]
		current sets.Set[string]
		inUse   map[string]sets.Set[schema.GroupVersionKind]
		remake  []string
		unused  int
	}
	const timeout = 10 * time.Minute
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		steps   []step
	}{{
		name: "a deleted PublishedResource's types are dropped after the timeout, once",
		steps: []step{
			{retired: types("a#1", thing, secret), current: both, unused: 2},
			{after: timeout - time.Second, current: both, unused: 2},
			{after: timeout, current: both, remake: []string{"a#1"}},
			{after: 2 * timeout, current: both},
		},
	}, {
		name: "a type a running controller uses is not held, the others are",
		steps: []step{
			{retired: types("a#1", thing, secret), current: both, inUse: types("a#1", thing), unused: 1},
			// The running controller stops later: its own record holds it.
			{after: time.Minute, retired: types("a#1", thing), current: both, unused: 2},
			{after: timeout, current: both, remake: []string{"a#1"}},
		},
	}, {
		name: "a restarted controller that uses its types again holds nothing",
		steps: []step{
			{retired: types("a#1", thing), current: both, inUse: types("a#1", thing)},
			{after: 2 * timeout, current: both, inUse: types("a#1", thing)},
		},
	}, {
		name: "each type has its own timeout",
		steps: []step{
			{retired: types("a#1", gadget), current: both, unused: 1},
			{after: timeout / 2, current: both, inUse: types("a#1", gadget)},
			{after: timeout - time.Minute, retired: types("a#1", gadget), current: both, unused: 1},
			{after: timeout + time.Minute, current: both, unused: 1},
			{after: 2*timeout - time.Minute, current: both, remake: []string{"a#1"}},
		},
	}, {
		name: "the same type on another connection is that connection's",
		steps: []step{
			{retired: types("b#1", thing), current: both, inUse: types("a#1", thing), unused: 1},
			{after: timeout, current: both, inUse: types("a#1", thing), remake: []string{"b#1"}},
		},
	}, {
		name: "a connection replaced or left is forgotten",
		steps: []step{
			{retired: types("a#1", thing), current: both, unused: 1},
			{after: time.Minute, current: sets.New("a#2", "b#1")},
			{after: timeout, current: sets.New("a#2", "b#1")},
		},
	}, {
		name:    "a timeout of 0 counts but never remakes",
		timeout: -1,
		steps: []step{
			{retired: types("a#1", thing), current: both, unused: 1},
			{after: 100 * timeout, current: both, unused: 1},
			{after: 101 * timeout, current: sets.New("b#1")},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := timeout
			if tc.timeout < 0 {
				d = 0
			}
			u := newUnusedInformers(d)
			start := time.Unix(1000, 0)
			for i, s := range tc.steps {
				now := start.Add(s.after)
				if s.retired != nil {
					u.retired(now, s.retired)
				}
				remake, unused := u.check(now, s.current, s.inUse)
				slices.Sort(remake)
				if diff := cmp.Diff(s.remake, remake); diff != "" || unused != s.unused {
					t.Fatalf("step %d: remake (-want +got):\n%s\nunused %d, want %d", i, diff, unused, s.unused)
				}
			}
		})
	}
}
