package sync

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// SharedInformers counts the running sync controllers that use each
// informer of the service-side caches (local copies, related objects) and
// removes an informer when the last of them stops, so that a stopped
// PublishedResource leaves no informer listing and watching behind.
type SharedInformers struct {
	mu    sync.Mutex
	users map[informerKey]int
}

// informerKey: a cache has an unstructured and a typed informer per type.
type informerKey struct {
	cache        cache.Informers
	gvk          schema.GroupVersionKind
	unstructured bool
}

func keyOf(c cache.Informers, obj ctrlruntimeclient.Object) informerKey {
	_, u := obj.(runtime.Unstructured)
	return informerKey{c, obj.GetObjectKind().GroupVersionKind(), u}
}

// acquire counts a use of the informer of obj's type (obj carries its GVK).
func (s *SharedInformers) acquire(c cache.Informers, obj ctrlruntimeclient.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = map[informerKey]int{}
	}
	s.users[keyOf(c, obj)]++
}

// release drops a use; the last one removes the informer (which stops it:
// no I/O, so the lock keeps an acquire from racing with the removal).
func (s *SharedInformers) release(c cache.Informers, obj ctrlruntimeclient.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf(c, obj)
	s.users[k]--
	if s.users[k] > 0 {
		return nil
	}
	delete(s.users, k)
	if err := c.RemoveInformer(context.Background(), obj); err != nil {
		return fmt.Errorf("failed to remove the informer of %s: %w", k.gvk, err)
	}
	return nil
}
