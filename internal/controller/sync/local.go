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
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// localSyncPoll is how often WaitForSync looks at a local handler.
const localSyncPoll = 100 * time.Millisecond

// localSource watches a type in a service-cluster cache: changes enqueue
// the requests keys maps them to (the object's previous version is nil
// except on updates). Its handler is removed when the controller stops;
// the controller waits for it to have seen every object before it starts
// its workers.
type localSource struct {
	cache cache.Informers
	obj   *unstructured.Unstructured
	keys  func(ctx context.Context, old, obj *unstructured.Unstructured) []mcreconcile.Request

	// ready is closed once the handler was added (or could not be);
	// synced once WaitForSync saw it synced.
	ready      chan struct{}
	synced     chan struct{}
	syncedOnce sync.Once
	mu         sync.Mutex
	// started: Start ran; closed: the controller stopped, a later Start
	// does nothing.
	started, closed bool
	handle          handle
	err             error
}

func newLocalSource(c cache.Informers, obj *unstructured.Unstructured, keys func(ctx context.Context, old, obj *unstructured.Unstructured) []mcreconcile.Request) *localSource {
	return &localSource{cache: c, obj: obj, keys: keys, ready: make(chan struct{}), synced: make(chan struct{})}
}

func (s *localSource) String() string {
	return fmt.Sprintf("service cluster %s", s.obj.GroupVersionKind())
}

// Start adds the handler in the background (finding the informer may ask
// discovery) and removes it when ctx ends.
func (s *localSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[mcreconcile.Request]) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%s: %w", s, errSourceShut)
	}
	s.started = true
	s.mu.Unlock()
	go func() {
		hd, err := s.add(ctx, queue)
		s.mu.Lock()
		s.handle, s.err = hd, err
		s.mu.Unlock()
		close(s.ready)
		if err == nil {
			context.AfterFunc(ctx, func() { removeHandles([]handle{hd}) })
		}
	}()
	return nil
}

// errSourceShut: controller-runtime started a source after its controller
// stopped.
var errSourceShut = errors.New("the controller has stopped")

// shut keeps the source from starting from now on and waits until a
// source that was started has looked up its informer, so that the caller
// can release the informer without the source creating it again.
func (s *localSource) shut() {
	s.mu.Lock()
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.ready
	}
}

func (s *localSource) add(ctx context.Context, queue workqueue.TypedRateLimitingInterface[mcreconcile.Request]) (handle, error) {
	inf, err := s.cache.GetInformer(ctx, s.obj.DeepCopy(), cache.BlockUntilSynced(false))
	if err != nil {
		return handle{}, fmt.Errorf("failed to get the informer of %s: %w", s.obj.GroupVersionKind(), err)
	}
	enqueue := func(old, obj any) {
		o := asUnstructured(obj)
		if o == nil {
			return
		}
		for _, r := range s.keys(ctx, asUnstructured(old), o) {
			queue.Add(r)
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue(nil, obj) },
		UpdateFunc: enqueue,
		DeleteFunc: func(obj any) { enqueue(nil, obj) },
	})
	if err != nil {
		return handle{}, err
	}
	if ctx.Err() != nil {
		_ = inf.RemoveEventHandler(reg)
		return handle{}, ctx.Err()
	}
	return handle{informer: inf, reg: reg}, nil
}

// WaitForSync implements source.SyncingSource: it returns when the handler
// has been told of every object, or with an error when ctx's deadline
// passes first. A stop (ctx canceled) is no failure: nil, as
// controller-runtime logs an error at ERROR (found by the soak: a
// PublishedResource changed while its controller started), and its Start
// ends with the stop.
func (s *localSource) WaitForSync(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return stopIsNoFailure(ctx, fmt.Errorf("%s: %w", s, ctx.Err()))
	}
	s.mu.Lock()
	hd, err := s.handle, s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	t := time.NewTicker(localSyncPoll)
	defer t.Stop()
	for !hd.reg.HasSynced() {
		select {
		case <-ctx.Done():
			return stopIsNoFailure(ctx, fmt.Errorf("%s has not synced: %w", s, errors.Join(ctx.Err(), ErrLocalTypeNotSynced)))
		case <-t.C:
		}
	}
	s.syncedOnce.Do(func() { close(s.synced) })
	return nil
}

// stopIsNoFailure returns err unless ctx was canceled (stopped) rather
// than timed out.
func stopIsNoFailure(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return err
}
