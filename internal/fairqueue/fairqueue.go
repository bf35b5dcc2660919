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

// Package fairqueue is a work queue store that hands out items round robin
// over their tenants (kcp workspaces), with a limit on each tenant's items
// in process: one tenant with a backlog of thousands of items delays
// another tenant's next item by at most one item per tenant that has work,
// not by the backlog, and it cannot hold every worker.
//
// Queue implements client-go's workqueue.Queue, the storage under
// workqueue.Typed, which keeps its de-duplication (an item waits at most
// once), its processing set (an item is never handed to two workers), its
// metrics and, wrapped by the delaying and rate-limiting queues, retries
// with backoff. The workqueue does not tell its store when an item is
// done, so a limit per tenant is only offered by NewRateLimiting, which
// builds the whole stack and reports Done to the store.
package fairqueue

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Queue is a FIFO per tenant and a round robin over the tenants that have
// items and fewer than the limit in process. Every method is O(1) and
// safe for concurrent use (the workqueue calls Push, Pop, Len and Touch
// under its own lock, Done comes from the worker).
type Queue[T comparable] struct {
	tenant func(T) string
	// limit is the most items of one tenant in process; 0: no limit.
	limit int

	mu sync.Mutex
	// inProcess: the items handed out and not done yet (limit > 0).
	inProcess map[T]struct{}
	// lanes holds each tenant that has waiting items or items in process.
	lanes map[string]*lane[T]
	// turns are the tenants whose next item may be handed out (it has
	// waiting items and is below the limit), in the order they are served.
	turns fifo[string]
	// waiting counts the waiting items of every tenant, ready those of the
	// tenants in turns.
	waiting, ready int
}

// lane is one tenant's waiting items and its count in process.
type lane[T any] struct {
	items      fifo[T]
	processing int
	// inTurns: the tenant is in Queue.turns.
	inTurns bool
}

var _ workqueue.Queue[int] = &Queue[int]{}

// New returns an empty queue that groups items by tenant(item), without a
// limit: the store to put under workqueue.Typed.
func New[T comparable](tenant func(T) string) *Queue[T] {
	return newQueue(tenant, 0)
}

// newQueue returns an empty queue that hands out at most limit items of one
// tenant until they are Done (limit 0: no limit).
func newQueue[T comparable](tenant func(T) string, limit int) *Queue[T] {
	return &Queue[T]{tenant: tenant, limit: max(limit, 0), lanes: map[string]*lane[T]{}, inProcess: map[T]struct{}{}}
}

// Touch is called when a waiting item is added again; its place is kept.
func (q *Queue[T]) Touch(T) {}

// Push appends item to its tenant's lane; a tenant without waiting items
// takes the last turn.
func (q *Queue[T]) Push(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.tenant(item)
	l, ok := q.lanes[t]
	if !ok {
		l = &lane[T]{}
		q.lanes[t] = l
	}
	l.items.push(item)
	q.waiting++
	if !q.atLimit(l) {
		q.ready++
		q.takeTurn(t, l)
	}
}

// Len is the number of waiting items of the tenants below the limit: 0
// when Pop has nothing to hand out (the workqueue's Get waits then), else
// Pop hands out at least one of them.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready
}

// Waiting is the number of waiting items, including those of tenants at
// the limit.
func (q *Queue[T]) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting
}

// Tenants is the number of tenants with waiting items or items in process.
func (q *Queue[T]) Tenants() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.lanes)
}

// Pop hands out the oldest item of the tenant whose turn it is and, with a
// limit, counts it in process until Done; that tenant goes to the end of
// the turns if it has more and is still below the limit. Pop must not be
// called when Len is 0 (the workqueue checks it first).
func (q *Queue[T]) Pop() T {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.turns.pop()
	l := q.lanes[t]
	l.inTurns = false
	item := l.items.pop()
	q.waiting--
	q.ready--
	if q.limit > 0 {
		l.processing++
		q.inProcess[item] = struct{}{}
	}
	switch {
	case q.atLimit(l):
		q.ready -= l.items.len()
	case l.items.len() > 0:
		q.takeTurn(t, l)
	case l.processing == 0:
		delete(q.lanes, t)
	}
	return item
}

// Done ends the processing of an item that Pop handed out; its tenant's
// waiting items become ready again when it was at the limit. Done of an
// item that is not in process (never handed out, done already, or any item
// without a limit) is ignored.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.inProcess[item]; !ok {
		return
	}
	delete(q.inProcess, item)
	t := q.tenant(item)
	l := q.lanes[t]
	wasAtLimit := q.atLimit(l)
	l.processing--
	if wasAtLimit && l.items.len() > 0 {
		q.ready += l.items.len()
		q.takeTurn(t, l)
	}
	if l.processing == 0 && l.items.len() == 0 {
		delete(q.lanes, t)
	}
}

func (q *Queue[T]) atLimit(l *lane[T]) bool {
	return q.limit > 0 && l.processing >= q.limit
}

// takeTurn puts tenant t at the end of the turns unless it is in them.
func (q *Queue[T]) takeTurn(t string, l *lane[T]) {
	if !l.inTurns {
		l.inTurns = true
		q.turns.push(t)
	}
}

// fifo is a slice queue that reuses its array: popped slots are cleared
// (so that items can be collected) and the live part is moved to the front
// when it is at most half the array.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) push(v T) { f.items = append(f.items, v) }

func (f *fifo[T]) len() int { return len(f.items) - f.head }

func (f *fifo[T]) pop() T {
	var zero T
	v := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	if f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	} else if f.head >= 64 && f.head*2 >= len(f.items) {
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return v
}

// RateLimiting is client-go's rate-limiting queue over a fair Queue that
// learns when each item is done.
type RateLimiting[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	store *Queue[T]
}

// NewRateLimiting returns client-go's rate-limiting queue (de-duplication,
// processing set, delayed and rate-limited retries, metrics under name)
// over a Queue that groups items by tenant(item) and hands out at most
// limit items of one tenant until they are Done (limit 0: no limit).
func NewRateLimiting[T comparable](name string, rl workqueue.TypedRateLimiter[T], tenant func(T) string, limit int) *RateLimiting[T] {
	store := newQueue(tenant, limit)
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: store})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, Queue: q})
	return &RateLimiting[T]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[T]{Name: name, DelayingQueue: delaying}),
		store:                      store,
	}
}

// Done tells the store first, then the workqueue (which puts a re-added
// item back into the store). The caller must call Get after Done, as
// controller-runtime's workers do: the workqueue wakes a waiting worker on
// an Add, on a Done of a re-added item and when nothing is left in
// process, but not when a tenant drops below the limit, so that tenant's
// next item is taken by the worker that returns from Done (or by another
// that wakes for its own reason). A Done from a goroutine that then stops
// can leave a ready item while every worker sleeps.
func (q *RateLimiting[T]) Done(item T) {
	q.store.Done(item)
	q.TypedRateLimitingInterface.Done(item)
}

// Waiting is the number of items waiting, including those of tenants at
// the limit (Len counts only the items a worker may take now).
func (q *RateLimiting[T]) Waiting() int { return q.store.Waiting() }
