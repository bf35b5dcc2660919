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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

func TestFailureMessage(t *testing.T) {
	req := func(namespace, name string) mcreconcile.Request {
		return mcreconcile.Request{ClusterName: "1x2y", Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}}
	}
	secretText := "token=s3cr3t"
	testcases := []struct {
		name string
		req  mcreconcile.Request
		err  error
		want string
	}{
		{
			name: "an API error names its reason, not its message",
			req:  req("default", "db"),
			err:  fmt.Errorf("failed to patch the local copy: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "Thing"}, "db", nil)),
			want: "Synchronizing Thing default/db in workspace 1x2y failed with an API error: Invalid.",
		},
		{
			name: "a related read the agent may not make (an unwatched type needs get, not list/watch)",
			req:  req("default", "db"),
			err:  fmt.Errorf("related \"creds\": %w", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db-creds", errors.New("no RBAC"))),
			want: "Synchronizing Thing default/db in workspace 1x2y failed with an API error: Forbidden.",
		},
		{
			name: "a refused adoption",
			req:  req("default", "db"),
			err:  fmt.Errorf("%w: Thing x/y", syncer.ErrConflict),
			want: "Synchronizing Thing default/db in workspace 1x2y failed with its local object belongs to someone else.",
		},
		{
			name: "a related namespace that is not allowed is named (for the service owner)",
			req:  req("default", "db"),
			err:  fmt.Errorf("related \"creds\": namespace: %w", &related.NamespaceNotAllowedError{Namespace: "kube-system"}),
			want: `Synchronizing Thing default/db in workspace 1x2y failed with a related object in service namespace "kube-system", which is neither the workspace's own, nor fixed by the PublishedResource, nor in spec.related[].allowedNamespaces.`,
		},
		{
			name: "a related object kcp refused to write names the entry and kind, never kcp's text",
			req:  req("default", "db"),
			err: &syncer.RefusedError{Identifier: "creds", Kind: "Secret", Namespace: "default", Name: "db-creds",
				Err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db-creds", errors.New("object does not match required labels "+secretText))},
			want: `Synchronizing Thing default/db in workspace 1x2y failed with kcp refusing to write related object "creds" (Secret) into the workspace: ` +
				`the consumer's APIBinding does not allow it (its permission claim not accepted, accepted with fewer verbs, or with a label selector the object does not match).`,
		},
		{
			name: "an empty related selector",
			req:  req("default", "db"),
			err:  fmt.Errorf("related \"creds\": %w", related.ErrEmptySelector),
			want: "Synchronizing Thing default/db in workspace 1x2y failed with a related label selector whose templated keys all rendered empty (nothing is selected).",
		},
		{
			name: "any other error points to the log and never shows its text",
			req:  req("", "cluster-wide"),
			err:  errors.New("template failed on " + secretText),
			want: "Synchronizing Thing cluster-wide in workspace 1x2y failed with an error; see the agent's log.",
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			if got := failureMessage("Thing", tc.req, tc.err); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestWaitBackoff(t *testing.T) {
	h := newHubHarness(t)
	h.start()
	h.engage("ws", "a")
	r := &reconciler{workspaces: h.hub, waits: newRecords[int]()}
	req := mcreconcile.Request{ClusterName: "ws", Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: "x"}}}
	var got []time.Duration
	for range 10 {
		got = append(got, waitBackoff(r.waited(req, true)))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	if n := r.waited(req, false); n != 0 || r.waits.len() != 0 {
		t.Errorf("a pass that does not wait must forget the count: %d, %v", n, r.waits)
	}
	if n := r.waited(req, true); n != 1 {
		t.Errorf("a new wait starts at 1, got %d", n)
	}
}

// blockingCache models the kcp provider's workspace cache for a type the
// virtual workspace does not serve: its own reads wait for the informer
// without a deadline (context.TODO inside the provider), GetInformer waits
// until the caller's context ends.
type blockingCache struct {
	cache.Cache
}

func (blockingCache) GetInformer(ctx context.Context, _ ctrlruntimeclient.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (blockingCache) Get(context.Context, ctrlruntimeclient.ObjectKey, ctrlruntimeclient.Object, ...ctrlruntimeclient.GetOption) error {
	select {} // never returns
}

// TestCachedReadsHaveADeadline: a typed read of the workspace cache (the
// namespace filter's Namespace, the LogicalCluster for workspace paths)
// ends with the reconcile's deadline instead of blocking a worker forever.
func TestCachedReadsHaveADeadline(t *testing.T) {
	c := cachedReads{Client: fake.NewClientBuilder().Build(), cache: blockingCache{}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Get(ctx, types.NamespacedName{Name: "default"}, &corev1.Namespace{}) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not end with its context")
	}
}

// timeoutCache models controller-runtime's informer cache for a type whose
// informer has not synced when the caller's context ends: it answers with
// a Timeout API error that does not wrap the context's error.
type timeoutCache struct {
	cache.Cache
}

func (timeoutCache) GetInformer(ctx context.Context, _ ctrlruntimeclient.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	<-ctx.Done()
	return nil, apierrors.NewTimeoutError("failed waiting for *v1.Secret Informer to sync", 0)
}

// TestCachedReadsCutOffByAStop: a read cut off by the controller's stop
// says so (lifecycle.Stopping), so that no error is logged for it.
func TestCachedReadsCutOffByAStop(t *testing.T) {
	recorded := false
	c := cachedReads{Client: fake.NewClientBuilder().Build(), cache: timeoutCache{}, record: func(schema.GroupVersionKind) { recorded = true }}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "token"}, &corev1.Secret{})
	if !lifecycle.Stopping(ctx, err) {
		t.Errorf("err = %v: not seen as a stop", err)
	}
	if recorded {
		t.Error("an informer the cache did not hand out was recorded as used")
	}
}

// The controller's queue takes the workspaces in turn (a backlog of one
// delays another's object by one pass) and keeps client-go's delayed and
// rate-limited retries.
func TestQueueIsFairPerWorkspace(t *testing.T) {
	req := func(ws, name string) mcreconcile.Request {
		return mcreconcile.Request{ClusterName: ws, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}}
	}
	q := newFairQueue("", workqueue.NewTypedItemExponentialFailureRateLimiter[mcreconcile.Request](time.Millisecond, time.Second), 4)
	defer q.ShutDown()
	for i := range 500 {
		q.Add(req("noisy", fmt.Sprint(i)))
	}
	q.Add(req("quiet", "a"))
	q.AddRateLimited(req("retried", "b"))
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 502 {
		if time.Now().After(deadline) {
			t.Fatalf("the rate-limited retry never came back; got %v", got)
		}
		if q.Len() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		item, _ := q.Get()
		got = append(got, item.ClusterName+"/"+item.Name)
		q.Done(item)
	}
	if got[0] != "noisy/0" || got[1] != "quiet/a" {
		t.Fatalf("first two passes %v, want noisy/0 then quiet/a", got[:2])
	}
	if n := len(got); n != 502 || slices.Index(got, "retried/b") < 0 {
		t.Fatalf("%d passes, the retry at %d; want 502 with the retry", n, slices.Index(got, "retried/b"))
	}
}

// A workspace holds at most perWorkspace passes; the queue-depth gauge
// still counts its waiting requests.
func TestQueueLimitsAWorkspacesPasses(t *testing.T) {
	req := func(ws, name string) mcreconcile.Request {
		return mcreconcile.Request{ClusterName: ws, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}}
	}
	q := newTimedQueue(newFairQueue("", workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request](), 1), time.Now)
	defer q.ShutDown()
	for i := range 3 {
		q.Add(req("noisy", fmt.Sprint(i)))
	}
	first, _ := q.Get()
	if q.Len() != 0 || q.depth() != 2 {
		t.Fatalf("with noisy/0 in process: Len %d and depth %d, want 0 and 2", q.Len(), q.depth())
	}
	q.Add(req("quiet", "a"))
	if second, _ := q.Get(); second.ClusterName != "quiet" {
		t.Fatalf("took %s/%s while noisy held its pass, want quiet/a", second.ClusterName, second.Name)
	}
	q.Done(first)
	if q.Len() != 2 || q.depth() != 2 {
		t.Fatalf("after noisy/0 was done: Len %d and depth %d, want 2 and 2", q.Len(), q.depth())
	}
}
