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

package fairqueue

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func tenantOf(item string) string {
	t, _, ok := strings.Cut(item, "/")
	if !ok {
		return ""
	}
	return t
}

// step is one operation on the queue: push an item, or pop and expect one.
type step struct {
	push, pop string
}

func TestQueueOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one tenant is FIFO", []step{
			{push: "a/1"}, {push: "a/2"}, {push: "a/3"},
			{pop: "a/1"}, {pop: "a/2"}, {pop: "a/3"},
		}},
		{"tenants take turns", []step{
			{push: "a/1"}, {push: "a/2"}, {push: "a/3"}, {push: "b/1"}, {push: "c/1"}, {push: "b/2"},
			{pop: "a/1"}, {pop: "b/1"}, {pop: "c/1"}, {pop: "a/2"}, {pop: "b/2"}, {pop: "a/3"},
		}},
		{"a tenant that arrives waits for one item of each tenant ahead", []step{
			{push: "a/1"}, {push: "a/2"}, {push: "a/3"},
			{pop: "a/1"},
			{push: "b/1"},
			{pop: "a/2"}, {pop: "b/1"}, {pop: "a/3"},
		}},
		{"an emptied tenant takes the last turn when it comes back", []step{
			{push: "a/1"}, {push: "b/1"}, {push: "b/2"},
			{pop: "a/1"},
			{push: "a/2"},
			{pop: "b/1"}, {pop: "a/2"}, {pop: "b/2"},
		}},
		{"the empty tenant name is a tenant", []step{
			{push: "x"}, {push: "y"}, {push: "a/1"},
			{pop: "x"}, {pop: "a/1"}, {pop: "y"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(tenantOf)
			want := 0
			for i, s := range tc.steps {
				if s.push != "" {
					q.Push(s.push)
					want++
				} else {
					if got := q.Pop(); got != s.pop {
						t.Fatalf("step %d: popped %q, want %q", i, got, s.pop)
					}
					want--
				}
				if q.Len() != want {
					t.Fatalf("step %d: Len %d, want %d", i, q.Len(), want)
				}
			}
			if q.Tenants() != 0 && want == 0 {
				t.Fatalf("%d tenants left in an empty queue", q.Tenants())
			}
		})
	}
}

// lstep is one operation on a queue with a limit: push, pop (and expect an
// item) or done; ready and waiting are Len and Waiting after it.
type lstep struct {
	push, pop, done string
	ready, waiting  int
}

func TestQueueLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		steps []lstep
	}{
		{"a tenant at the limit is skipped until one of its items is done", 2, []lstep{
			{push: "a/1", ready: 1, waiting: 1},
			{push: "a/2", ready: 2, waiting: 2},
			{push: "a/3", ready: 3, waiting: 3},
			{pop: "a/1", ready: 2, waiting: 2},
			{pop: "a/2", ready: 0, waiting: 1},
			{push: "a/4", ready: 0, waiting: 2},
			{done: "a/1", ready: 2, waiting: 2},
			{pop: "a/3", ready: 0, waiting: 1},
			{done: "a/2", ready: 1, waiting: 1},
			{done: "a/3", ready: 1, waiting: 1},
			{pop: "a/4", ready: 0, waiting: 0},
			{done: "a/4", ready: 0, waiting: 0},
		}},
		{"another tenant is served while one is at the limit", 1, []lstep{
			{push: "noisy/1", ready: 1, waiting: 1},
			{push: "noisy/2", ready: 2, waiting: 2},
			{pop: "noisy/1", ready: 0, waiting: 1},
			{push: "quiet/1", ready: 1, waiting: 2},
			{pop: "quiet/1", ready: 0, waiting: 1},
			{push: "quiet/2", ready: 0, waiting: 2},
			{done: "noisy/1", ready: 1, waiting: 2},
			{done: "quiet/1", ready: 2, waiting: 2},
			{pop: "noisy/2", ready: 1, waiting: 1},
			{pop: "quiet/2", ready: 0, waiting: 0},
			{done: "quiet/2", ready: 0, waiting: 0},
			{done: "noisy/2", ready: 0, waiting: 0},
		}},
		{"a tenant back below the limit takes the last turn", 1, []lstep{
			{push: "a/1", ready: 1, waiting: 1},
			{push: "a/2", ready: 2, waiting: 2},
			{pop: "a/1", ready: 0, waiting: 1},
			{push: "b/1", ready: 1, waiting: 2},
			{push: "c/1", ready: 2, waiting: 3},
			{done: "a/1", ready: 3, waiting: 3},
			{pop: "b/1", ready: 2, waiting: 2},
			{pop: "c/1", ready: 1, waiting: 1},
			{pop: "a/2", ready: 0, waiting: 0},
			{done: "a/2", ready: 0, waiting: 0},
			{done: "b/1", ready: 0, waiting: 0},
			{done: "c/1", ready: 0, waiting: 0},
		}},
		{"a done of an item not in process changes nothing", 1, []lstep{
			{push: "a/1", ready: 1, waiting: 1},
			{push: "a/2", ready: 2, waiting: 2},
			{done: "a/1", ready: 2, waiting: 2},
			{pop: "a/1", ready: 0, waiting: 1},
			{done: "a/2", ready: 0, waiting: 1},
			{done: "b/1", ready: 0, waiting: 1},
			{done: "a/1", ready: 1, waiting: 1},
			{done: "a/1", ready: 1, waiting: 1},
			{pop: "a/2", ready: 0, waiting: 0},
			{done: "a/2", ready: 0, waiting: 0},
		}},
		{"no limit: done is not needed", 0, []lstep{
			{push: "a/1", ready: 1, waiting: 1},
			{push: "a/2", ready: 2, waiting: 2},
			{pop: "a/1", ready: 1, waiting: 1},
			{pop: "a/2", ready: 0, waiting: 0},
			{done: "a/1", ready: 0, waiting: 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(tenantOf, tc.limit)
			for i, s := range tc.steps {
				switch {
				case s.push != "":
					q.Push(s.push)
				case s.pop != "":
					if got := q.Pop(); got != s.pop {
						t.Fatalf("step %d: popped %q, want %q", i, got, s.pop)
					}
				default:
					q.Done(s.done)
				}
				if q.Len() != s.ready || q.Waiting() != s.waiting {
					t.Fatalf("step %d: Len %d and Waiting %d, want %d and %d", i, q.Len(), q.Waiting(), s.ready, s.waiting)
				}
			}
			if q.Tenants() != 0 {
				t.Fatalf("%d tenants left after every item was done", q.Tenants())
			}
		})
	}
}

// Under the rate-limiting queue with workers: a tenant never has more
// than the limit in process, every item is processed once, and another
// tenant's item is taken while one tenant holds its limit.
func TestRateLimitingKeepsTheLimit(t *testing.T) {
	const limit, workers = 2, 3
	q := NewRateLimiting("test", workqueue.DefaultTypedControllerRateLimiter[string](), tenantOf, limit)
	defer q.ShutDown()
	for i := range 200 {
		q.Add(fmt.Sprintf("noisy/%d", i))
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]int{}
		worst    int
		seen     = map[string]int{}
		wg       sync.WaitGroup
	)
	quietTaken := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				tn := tenantOf(item)
				mu.Lock()
				inFlight[tn]++
				worst = max(worst, inFlight[tn])
				seen[item]++
				mu.Unlock()
				if tn == "quiet" {
					close(quietTaken)
				} else {
					time.Sleep(time.Millisecond)
				}
				mu.Lock()
				inFlight[tn]--
				mu.Unlock()
				q.Done(item)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	q.Add("quiet/1")
	select {
	case <-quietTaken:
	case <-time.After(10 * time.Second):
		t.Fatal("the quiet item was not taken within 10 s")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 201 items processed within 30 s", n)
		}
		time.Sleep(time.Millisecond)
	}
	q.ShutDown()
	wg.Wait()
	if worst > limit {
		t.Fatalf("a tenant had %d items in process, the limit is %d", worst, limit)
	}
	for item, n := range seen {
		if n != 1 {
			t.Fatalf("%s processed %d times", item, n)
		}
	}
	if q.Waiting() != 0 || q.store.Tenants() != 0 {
		t.Fatalf("Waiting %d and %d tenants after the drain", q.Waiting(), q.store.Tenants())
	}
}

// The lane's array is reused and compacted: a long-lived tenant with a
// steady trickle does not grow it without bound.
func TestLaneIsCompacted(t *testing.T) {
	q := New(tenantOf)
	for i := range 10 {
		q.Push(fmt.Sprintf("a/%d", i))
	}
	for i := range 100_000 {
		q.Push(fmt.Sprintf("a/%d", i+10))
		if got, want := q.Pop(), fmt.Sprintf("a/%d", i); got != want {
			t.Fatalf("popped %q, want %q", got, want)
		}
	}
	if c := cap(q.lanes["a"].items.items); c > 256 {
		t.Fatalf("lane array holds %d slots for 10 waiting items", c)
	}
}

// Under client-go's workqueue: de-duplication and the processing set are
// kept, and a quiet tenant's item is handed out second although a noisy
// tenant has a backlog.
func TestUnderTheWorkqueue(t *testing.T) {
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: New(tenantOf)})
	defer q.ShutDown()
	for i := range 1000 {
		q.Add(fmt.Sprintf("noisy/%d", i))
	}
	q.Add("noisy/0") // waiting: not added twice
	if q.Len() != 1000 {
		t.Fatalf("Len %d, want 1000", q.Len())
	}
	first, _ := q.Get()
	q.Add("quiet/1")
	q.Add(first) // being processed: comes back after Done
	second, _ := q.Get()
	third, _ := q.Get()
	if first != "noisy/0" || second != "noisy/1" || third != "quiet/1" {
		t.Fatalf("got %q, %q, %q; want noisy/0, noisy/1, quiet/1", first, second, third)
	}
	q.Done(first)
	q.Done(second)
	q.Done(third)
	if q.Len() != 999 {
		t.Fatalf("Len %d after the re-add of an item in process, want 999", q.Len())
	}
	seen := map[string]int{}
	for q.Len() > 0 {
		item, _ := q.Get()
		seen[item]++
		q.Done(item)
	}
	if seen["noisy/0"] != 1 || len(seen) != 999 {
		t.Fatalf("drained %d distinct items, noisy/0 %d times; want 999 and once", len(seen), seen["noisy/0"])
	}
}

func BenchmarkPushPop(b *testing.B) {
	q := New(tenantOf)
	items := make([]string, 1000)
	for i := range items {
		items[i] = fmt.Sprintf("ws%d/%d", i%10, i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.Push(items[i%len(items)])
		if q.Len() > 500 {
			q.Pop()
		}
	}
}
