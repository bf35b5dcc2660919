package syncmanager

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
// The types of stopped controllers are held per endpoint cache; a type a
// running controller uses is no longer held (that controller's record
// holds it when it stops). An endpoint that has held an unused type for
// the whole grace period is remade, and forgotten: its cache is replaced.
type unusedInformers struct {
	grace time.Duration
	held  map[cache.Informers]sets.Set[schema.GroupVersionKind]
	since map[cache.Informers]time.Time
}

func newUnusedInformers(grace time.Duration) *unusedInformers {
	return &unusedInformers{grace: grace,
		held:  map[cache.Informers]sets.Set[schema.GroupVersionKind]{},
		since: map[cache.Informers]time.Time{}}
}

// retired holds the informers a controller used before it stopped.
func (u *unusedInformers) retired(used map[cache.Informers]sets.Set[schema.GroupVersionKind]) {
	for ep, types := range used {
		if u.held[ep] == nil {
			u.held[ep] = sets.New[schema.GroupVersionKind]()
		}
		u.held[ep] = u.held[ep].Union(types)
	}
}

// check returns the endpoint caches to remake now, given the current
// endpoint caches and the types the running controllers use, and how many
// unused types the current endpoints hold afterwards.
func (u *unusedInformers) check(now time.Time, current sets.Set[cache.Informers], inUse map[cache.Informers]sets.Set[schema.GroupVersionKind]) (remake []cache.Informers, unused int) {
	for ep, types := range u.held {
		types = types.Difference(inUse[ep])
		if !current.Has(ep) || types.Len() == 0 {
			delete(u.held, ep)
			delete(u.since, ep)
			continue
		}
		u.held[ep] = types
		if _, ok := u.since[ep]; !ok {
			u.since[ep] = now
		}
		if u.grace > 0 && now.Sub(u.since[ep]) >= u.grace {
			remake = append(remake, ep)
			delete(u.held, ep)
			delete(u.since, ep)
			continue
		}
		unused += types.Len()
	}
	return remake, unused
}
