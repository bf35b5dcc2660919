package syncmanager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// TestUnusedInformers walks the decision through its transitions: a type
// only stopped controllers used is held and, after the timeout, its
// endpoint is remade (once, and then forgotten); a type a running
// controller uses is not held; an endpoint the fleet left is forgotten; a
// timeout of 0 never remakes.
func TestUnusedInformers(t *testing.T) {
	a, b := fakeEndpoint("a"), fakeEndpoint("b")
	thing := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	types := func(ep cache.Informers, gvks ...schema.GroupVersionKind) map[cache.Informers]sets.Set[schema.GroupVersionKind] {
		return map[cache.Informers]sets.Set[schema.GroupVersionKind]{ep: sets.New(gvks...)}
	}
	both := sets.New[cache.Informers](a, b)
	type step struct {
		after   time.Duration // since the start
		retired map[cache.Informers]sets.Set[schema.GroupVersionKind]
		current sets.Set[cache.Informers]
		inUse   map[cache.Informers]sets.Set[schema.GroupVersionKind]
		remake  []cache.Informers
		unused  int
	}
	const grace = 10 * time.Minute
	for _, tc := range []struct {
		name  string
		grace time.Duration
		steps []step
	}{{
		name: "a deleted PublishedResource's types are dropped after the timeout, once",
		steps: []step{
			{retired: types(a, thing, secret), current: both, unused: 2},
			{after: grace - time.Second, current: both, unused: 2},
			{after: grace, current: both, remake: []cache.Informers{a}},
			{after: 2 * grace, current: both},
		},
	}, {
		name: "a type a running controller uses is not held, the others are",
		steps: []step{
			{retired: types(a, thing, secret), current: both, inUse: types(a, thing), unused: 1},
			// The running controller stops later: its own record holds it.
			{after: time.Minute, retired: types(a, thing), current: both, unused: 2},
			{after: grace, current: both, remake: []cache.Informers{a}},
		},
	}, {
		name: "a restarted controller that uses its types again holds nothing",
		steps: []step{
			{retired: types(a, thing), current: both, inUse: types(a, thing)},
			{after: 2 * grace, current: both, inUse: types(a, thing)},
		},
	}, {
		name: "used again before the timeout: no remake, and a later stop starts a new timeout",
		steps: []step{
			{retired: types(a, gadget), current: both, unused: 1},
			{after: grace / 2, current: both, inUse: types(a, gadget)},
			{after: grace, retired: types(a, gadget), current: both, unused: 1},
			{after: grace + grace/2, current: both, unused: 1},
			{after: 2 * grace, current: both, remake: []cache.Informers{a}},
		},
	}, {
		name: "the same type on another endpoint is that endpoint's",
		steps: []step{
			{retired: types(b, thing), current: both, inUse: types(a, thing), unused: 1},
			{after: grace, current: both, inUse: types(a, thing), remake: []cache.Informers{b}},
		},
	}, {
		name: "an endpoint replaced or left is forgotten",
		steps: []step{
			{retired: types(a, thing), current: both, unused: 1},
			{after: time.Minute, current: sets.New[cache.Informers](b)},
			{after: grace, current: both},
		},
	}, {
		name:  "a timeout of 0 counts but never remakes",
		grace: -1,
		steps: []step{
			{retired: types(a, thing), current: both, unused: 1},
			{after: 100 * grace, current: both, unused: 1},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := grace
			if tc.grace < 0 {
				g = 0
			}
			u := newUnusedInformers(g)
			start := time.Unix(1000, 0)
			for i, s := range tc.steps {
				if s.retired != nil {
					u.retired(s.retired)
				}
				remake, unused := u.check(start.Add(s.after), s.current, s.inUse)
				if diff := cmp.Diff(s.remake, remake); diff != "" || unused != s.unused {
					t.Fatalf("step %d: remake (-want +got):\n%s\nunused %d, want %d", i, diff, unused, s.unused)
				}
			}
		})
	}
}
