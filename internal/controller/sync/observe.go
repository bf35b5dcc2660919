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
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// timedQueue is the controller's queue; it remembers when each request
// was first added (by an event: Add) since a worker last took it, for the
// queue's oldest-age gauge and the sync latency. Requeues after a delay or
// an error are not events and are not timed.
type timedQueue struct {
	workqueue.TypedRateLimitingInterface[mcreconcile.Request]
	now func() time.Time

	mu sync.Mutex
	// added: waiting in the queue; taken: handed to a worker, until its
	// pass reads it (observed); put back: events whose pass did not write
	// their effect, for the next pass (not in the queue's age).
	added, taken, putBacks map[mcreconcile.Request]time.Time
}

func newTimedQueue(q workqueue.TypedRateLimitingInterface[mcreconcile.Request], now func() time.Time) *timedQueue {
	return &timedQueue{
		TypedRateLimitingInterface: q, now: now,
		added: map[mcreconcile.Request]time.Time{}, taken: map[mcreconcile.Request]time.Time{}, putBacks: map[mcreconcile.Request]time.Time{},
	}
}

func (q *timedQueue) Add(item mcreconcile.Request) {
	q.mu.Lock()
	if _, ok := q.added[item]; !ok {
		q.added[item] = q.now()
	}
	q.mu.Unlock()
	q.TypedRateLimitingInterface.Add(item)
}

func (q *timedQueue) Get() (mcreconcile.Request, bool) {
	item, shutdown := q.TypedRateLimitingInterface.Get()
	q.mu.Lock()
	t, ok := q.putBacks[item]
	if a, added := q.added[item]; added && (!ok || a.Before(t)) {
		t, ok = a, true
	}
	delete(q.added, item)
	delete(q.putBacks, item)
	if ok {
		q.taken[item] = t
	}
	q.mu.Unlock()
	return item, shutdown
}

// putBack keeps the time of an event whose pass did not write its effect
// (it failed or asked to be looked at again) for the next pass of item.
func (q *timedQueue) putBack(item mcreconcile.Request, t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cur, ok := q.putBacks[item]; !ok || t.Before(cur) {
		q.putBacks[item] = t
	}
}

// observed returns (and forgets) when the event that a worker's pass of
// item handles entered the queue; false for a requeue.
func (q *timedQueue) observed(item mcreconcile.Request) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.taken[item]
	delete(q.taken, item)
	return t, ok
}

// depth is the number of requests waiting, including those of workspaces
// at the fair queue's limit (which the queue's Len leaves out).
func (q *timedQueue) depth() int {
	if w, ok := q.TypedRateLimitingInterface.(interface{ Waiting() int }); ok {
		return w.Waiting()
	}
	return q.Len()
}

// oldestAge is how long the oldest timed request has waited, in seconds.
func (q *timedQueue) oldestAge() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var oldest time.Time
	for _, t := range q.added {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return q.now().Sub(oldest).Seconds()
}

// Operations of the sync, as sync_agent_sync_operations_total names them.
const (
	opCreate    = "create"
	opUpdate    = "update"
	opDelete    = "delete"
	opStatus    = "status"
	opMetadata  = "metadata"
	opRelated   = "related"
	opState     = "state"
	opNamespace = "namespace"
)

// passOps records the writes of one pass: operation, result, and when
// each started (from the pass's start) and how long it took.
type passOps struct {
	start time.Time
	mu    sync.Mutex
	ops   []passOp
}

type passOp struct {
	op, result string
	at, took   time.Duration
	// overwritten: the resourceVersion that a write of the kcp object (its
	// metadata or status) changed it from.
	overwritten string
}

// timed runs write of obj and records it as op.
func (p *passOps) timed(obj ctrlruntimeclient.Object, op func() string, write func() error) error {
	rv := obj.GetResourceVersion()
	t0 := time.Now()
	err := write()
	o := passOp{op: op(), at: t0.Sub(p.start), took: time.Since(t0)}
	// A write that changed nothing keeps the version: the cache is not
	// behind then.
	if err == nil && (o.op == opMetadata || o.op == opStatus) && obj.GetResourceVersion() != rv {
		o.overwritten = rv
	}
	p.add(o, err)
	return err
}

// overwritten lists the resourceVersions the pass's writes of the kcp
// object changed it from.
func (p *passOps) overwritten() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var rvs []string
	for _, o := range p.ops {
		if o.overwritten != "" && !slices.Contains(rvs, o.overwritten) {
			rvs = append(rvs, o.overwritten)
		}
	}
	return rvs
}

// add records o with the result of its err.
func (p *passOps) add(o passOp, err error) {
	o.result = "success"
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		o.result = "conflict"
	case apierrors.IsNotFound(err):
		o.result = "notfound" // gone meanwhile: the sync takes it as done
	case err != nil:
		o.result = "error"
	}
	p.mu.Lock()
	p.ops = append(p.ops, o)
	p.mu.Unlock()
}

// String lists the writes for the pass trace, e.g. "metadata success at
// 2ms for 310ms, create success at 313ms for 9ms".
func (p *passOps) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	parts := make([]string, len(p.ops))
	for i, o := range p.ops {
		parts[i] = fmt.Sprintf("%s %s at %s for %s", o.op, o.result, o.at.Round(time.Millisecond), o.took.Round(time.Millisecond))
	}
	return strings.Join(parts, ", ")
}

// wrote reports whether the pass wrote one of ops successfully.
func (p *passOps) wrote(ops ...string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.ops, func(o passOp) bool { return o.result == "success" && slices.Contains(ops, o.op) })
}

// side tells the counting client which cluster it writes to, and the
// types that name an operation there.
type side struct {
	kcp bool
	// primary: the kcp object of the pass (kcp side); other kcp objects
	// of its type are related objects.
	primary   types.NamespacedName
	localGVK  schema.GroupVersionKind
	remoteGVK schema.GroupVersionKind
	namespace string // the agent's namespace (state Secrets)
}

// counted returns c with every write recorded in ops.
func (p *passOps) counted(c ctrlruntimeclient.Client, s side) ctrlruntimeclient.Client {
	if c == nil {
		return nil
	}
	// The pass's own kcp object; another of its type is a related object
	// (a primary can be another's related object).
	isPrimary := func(obj ctrlruntimeclient.Object) bool {
		gvk, _ := apiutil.GVKForObject(obj, c.Scheme())
		return s.kcp && gvk == s.remoteGVK && obj.GetNamespace() == s.primary.Namespace && obj.GetName() == s.primary.Name
	}
	// A subresource written in kcp for the primary is its status; any
	// other is a related object's.
	subresourceOp := func(obj ctrlruntimeclient.Object) string {
		if isPrimary(obj) {
			return opStatus
		}
		return opRelated
	}
	classify := func(obj ctrlruntimeclient.Object, verb string) string {
		gvk, _ := apiutil.GVKForObject(obj, c.Scheme())
		switch {
		case isPrimary(obj):
			return opMetadata
		case !s.kcp && gvk == s.localGVK:
			return verb
		case !s.kcp && gvk.Group == "" && gvk.Kind == "Namespace":
			return opNamespace
		case !s.kcp && gvk.Group == "" && gvk.Kind == "Secret" && obj.GetNamespace() == s.namespace && obj.GetLabels()[keys.ObjectState] == "true":
			return opState
		case !s.kcp && gvk.Group == "" && gvk.Kind == "Secret" && obj.GetNamespace() == s.namespace && obj.GetLabels()[keys.ObjectState] == "" && verb == opDelete:
			return opState // deleted by name: only state Secrets are deleted in the agent's namespace
		}
		return opRelated
	}
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Create: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.CreateOption) error {
			return p.timed(obj, func() string { return classify(obj, opCreate) }, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.UpdateOption) error {
			return p.timed(obj, func() string { return classify(obj, opUpdate) }, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.PatchOption) error {
			return p.timed(obj, func() string { return classify(obj, opUpdate) }, func() error { return c.Patch(ctx, obj, patch, opts...) })
		},
		Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
			return p.timed(obj, func() string { return classify(obj, opDelete) }, func() error { return c.Delete(ctx, obj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c ctrlruntimeclient.Client, sub string, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.SubResourceUpdateOption) error {
			return p.timed(obj, func() string { return subresourceOp(obj) }, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c ctrlruntimeclient.Client, sub string, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.SubResourcePatchOption) error {
			return p.timed(obj, func() string { return subresourceOp(obj) }, func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
	})
}

var errNoWatch = errors.New("this client does not watch")

// withWatch lets a client without Watch be intercepted (the interceptor
// needs a WithWatch; the sync never watches through these clients).
type withWatch struct{ ctrlruntimeclient.Client }

func (w withWatch) Watch(ctx context.Context, list ctrlruntimeclient.ObjectList, opts ...ctrlruntimeclient.ListOption) (watch.Interface, error) {
	if ww, ok := w.Client.(ctrlruntimeclient.WithWatch); ok {
		return ww.Watch(ctx, list, opts...)
	}
	return nil, errNoWatch
}
