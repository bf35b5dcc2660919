// Package fairqueue is a work queue store that hands out items round robin
// over their tenants (kcp workspaces): one tenant with a backlog of
// thousands of items delays another tenant's next item by at most one item
// per tenant that has work, not by the backlog.
//
// Queue implements client-go's workqueue.Queue, the storage under
// workqueue.Typed, which keeps its de-duplication (an item waits at most
// once), its processing set (an item is never handed to two workers), its
// metrics and, wrapped by the delaying and rate-limiting queues, retries
// with backoff. Queue itself is not safe for concurrent use: the
// workqueue calls it under its own lock.
package fairqueue

import "k8s.io/client-go/util/workqueue"

// Queue is a FIFO per tenant and a round robin over the tenants that have
// items. Push, Pop and Len are O(1).
type Queue[T comparable] struct {
	tenant func(T) string
	// lanes holds the waiting items of each tenant that has any.
	lanes map[string]*fifo[T]
	// turns are the tenants with items, in the order they are served next.
	turns fifo[string]
	n     int
}

var _ workqueue.Queue[int] = &Queue[int]{}

// New returns an empty queue that groups items by tenant(item).
func New[T comparable](tenant func(T) string) *Queue[T] {
	return &Queue[T]{tenant: tenant, lanes: map[string]*fifo[T]{}}
}

// Touch is called when a waiting item is added again; its place is kept.
func (q *Queue[T]) Touch(T) {}

// Push appends item to its tenant's lane; a tenant without waiting items
// takes the last turn.
func (q *Queue[T]) Push(item T) {
	t := q.tenant(item)
	l, ok := q.lanes[t]
	if !ok {
		l = &fifo[T]{}
		q.lanes[t] = l
		q.turns.push(t)
	}
	l.push(item)
	q.n++
}

// Len is the number of waiting items of all tenants.
func (q *Queue[T]) Len() int { return q.n }

// Tenants is the number of tenants with waiting items.
func (q *Queue[T]) Tenants() int { return len(q.lanes) }

// Pop takes the oldest item of the tenant whose turn it is; that tenant
// goes to the end of the turns if it has more. Pop must not be called on
// an empty queue (the workqueue checks Len first).
func (q *Queue[T]) Pop() T {
	t := q.turns.pop()
	l := q.lanes[t]
	item := l.pop()
	q.n--
	if l.len() == 0 {
		delete(q.lanes, t)
	} else {
		q.turns.push(t)
	}
	return item
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
