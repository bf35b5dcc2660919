package fairqueue

import (
	"fmt"
	"strings"
	"testing"

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
	if c := cap(q.lanes["a"].items); c > 256 {
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
