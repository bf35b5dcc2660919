package sync

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// SharedInformers counts the running sync controllers that use each
// informer of the service-side caches (local copies, related objects) and
// removes an informer when the last of them stops, so that a stopped
// PublishedResource leaves no informer listing and watching behind.
type SharedInformers struct {
	mu    sync.Mutex
	users map[informerKey]int
}

type informerKey struct {
	cache cache.Informers
	gvk   schema.GroupVersionKind
}

func (s *SharedInformers) acquire(c cache.Informers, gvk schema.GroupVersionKind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = map[informerKey]int{}
	}
	s.users[informerKey{c, gvk}]++
}

// release drops a use; the last one removes the informer (which stops it:
// no I/O, so the lock keeps an acquire from racing with the removal).
func (s *SharedInformers) release(c cache.Informers, gvk schema.GroupVersionKind) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := informerKey{c, gvk}
	s.users[k]--
	if s.users[k] > 0 {
		return nil
	}
	delete(s.users, k)
	if err := c.RemoveInformer(context.Background(), typed(gvk)); err != nil {
		return fmt.Errorf("failed to remove the informer of %s: %w", gvk, err)
	}
	return nil
}

// Users returns how many controllers use the cache's informer of gvk.
func (s *SharedInformers) Users(c cache.Informers, gvk schema.GroupVersionKind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[informerKey{c, gvk}]
}
