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
	// removing holds, per informer being removed, a channel closed when
	// its removal is done.
	removing map[informerKey]chan struct{}
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
// If the informer is being removed, it waits for that first, so that the
// caller never finds the informer that is about to go; the wait ends with
// ctx, and then nothing is counted.
func (s *SharedInformers) acquire(ctx context.Context, c cache.Informers, obj ctrlruntimeclient.Object) error {
	k := keyOf(c, obj)
	for {
		s.mu.Lock()
		if done, ok := s.removing[k]; ok {
			s.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return fmt.Errorf("waiting for the removal of the informer of %s: %w", k.gvk, ctx.Err())
			}
		}
		if s.users == nil {
			s.users = map[informerKey]int{}
		}
		s.users[k]++
		s.mu.Unlock()
		return nil
	}
}

// release drops a use; the last one removes the informer (which stops it).
// The removal runs outside the lock: it can wait for the cache's own lock,
// which the cache holds while it asks discovery for another type, and
// meanwhile the uses of every other informer go on.
func (s *SharedInformers) release(c cache.Informers, obj ctrlruntimeclient.Object) error {
	k := keyOf(c, obj)
	s.mu.Lock()
	s.users[k]--
	if s.users[k] > 0 {
		s.mu.Unlock()
		return nil
	}
	delete(s.users, k)
	if s.removing == nil {
		s.removing = map[informerKey]chan struct{}{}
	}
	done := make(chan struct{})
	s.removing[k] = done
	s.mu.Unlock()

	err := c.RemoveInformer(context.Background(), obj)
	s.mu.Lock()
	delete(s.removing, k)
	close(done)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("failed to remove the informer of %s: %w", k.gvk, err)
	}
	return nil
}
