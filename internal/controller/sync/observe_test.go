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
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// TestTimedQueue: an event's time is its first Add since a worker took
// it; a requeue after a delay is not timed; the time is read once.
func TestTimedQueue(t *testing.T) {
	now := time.Unix(1000, 0)
	q := newTimedQueue(workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]()), func() time.Time { return now })
	defer q.ShutDown()
	a := mcreconcile.Request{ClusterName: "ws", Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: "a"}}}
	b := mcreconcile.Request{ClusterName: "ws", Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: "b"}}}

	if age := q.oldestAge(); age != 0 {
		t.Errorf("empty queue: oldest age %v", age)
	}
	q.Add(a)
	now = now.Add(3 * time.Second)
	q.Add(a) // de-duplicated: the first time counts
	q.Add(b)
	now = now.Add(2 * time.Second)
	if age := q.oldestAge(); age != 5 {
		t.Errorf("oldest age = %v, want 5", age)
	}
	item, _ := q.Get()
	if item != a {
		t.Fatalf("got %v first", item)
	}
	if got, ok := q.observed(a); !ok || !got.Equal(time.Unix(1000, 0)) {
		t.Errorf("observed(a) = %v, %v; want its first Add", got, ok)
	}
	if _, ok := q.observed(a); ok {
		t.Error("observed twice")
	}
	if age := q.oldestAge(); age != 2 {
		t.Errorf("oldest age after a was taken = %v, want b's 2", age)
	}
	q.Done(a)
	q.AddAfter(a, time.Millisecond)
	item, _ = q.Get() // b
	q.Done(item)
	item, _ = q.Get() // a, requeued
	if _, ok := q.observed(item); item != a || ok {
		t.Errorf("a requeue was timed (%v, %v)", item, ok)
	}

	// A pass that did not write the event's effect puts its time back for
	// the next pass (a requeue), outside the queue's age.
	q.Done(a)
	q.putBack(a, time.Unix(900, 0))
	if age := q.oldestAge(); age != 0 {
		t.Errorf("a put-back event counts in the queue's age: %v", age)
	}
	q.AddAfter(a, time.Millisecond)
	item, _ = q.Get()
	if got, ok := q.observed(item); !ok || !got.Equal(time.Unix(900, 0)) {
		t.Errorf("observed after a put-back = %v, %v; want the event's time", got, ok)
	}
}

// TestPassOpsClassifies: each write of a pass is named by what it wrote.
func TestPassOpsClassifies(t *testing.T) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	localGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	remoteGVK := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	conflict := false
	base := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(typed(remoteGVK)).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.CreateOption) error {
			if conflict {
				return apierrors.NewAlreadyExists(schema.GroupResource{}, obj.GetName())
			}
			return c.Create(ctx, obj, opts...)
		}, Patch: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.PatchOption) error {
			if data, _ := patch.Data(obj); string(data) == "{}" {
				return nil // as a server answers a patch that changes nothing: the same version
			}
			return c.Patch(ctx, obj, patch, opts...)
		}}).Build()
	ops := &passOps{start: time.Now()}
	service := ops.counted(base, side{localGVK: localGVK, namespace: "agent"})
	kcp := ops.counted(base, side{kcp: true, remoteGVK: remoteGVK, primary: types.NamespacedName{Namespace: "default", Name: "foo"}})
	ctx := t.Context()
	obj := func(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
		u := typed(gvk)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	copy := obj(localGVK, "ws", "copy")
	must(service.Create(ctx, copy))
	must(service.Patch(ctx, copy, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"a":1}}`))))
	must(service.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}))
	stateSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Name: "obj-state-x", Labels: map[string]string{"syncagent.kcp.io/object-state": "true"}}}
	must(service.Create(ctx, stateSecret))
	must(service.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Name: "obj-state-x"}}))
	must(service.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "token"}}))
	must(service.Delete(ctx, copy))
	if err := service.Delete(ctx, copy); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
	primary := obj(remoteGVK, "default", "foo")
	must(base.Create(ctx, primary))
	created := primary.GetResourceVersion()
	must(kcp.Patch(ctx, primary, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["x"]}}`))))
	patched := primary.GetResourceVersion()
	must(kcp.Status().Update(ctx, primary))
	must(kcp.Patch(ctx, primary, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{}`))))
	// Another primary, a related object of this one: its finalizer.
	other := obj(remoteGVK, "default", "other")
	must(base.Create(ctx, other))
	must(kcp.Patch(ctx, other, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["x"]}}`))))
	must(kcp.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}}))
	conflict = true
	if err := service.Create(ctx, obj(localGVK, "ws", "taken")); err == nil {
		t.Fatal("the create did not conflict")
	}

	var got []string
	for _, o := range ops.ops {
		got = append(got, fmt.Sprintf("%s/%s", o.op, o.result))
	}
	want := []string{
		"create/success", "update/success", "namespace/success", "state/success", "state/success", "related/success",
		"delete/success", "delete/notfound", "metadata/success", "status/success", "metadata/success", "related/success", "related/success", "create/conflict",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
	if !ops.wrote(opStatus) || !ops.wrote(opCreate) || ops.wrote("nothing") {
		t.Error("wrote() is wrong")
	}
	// Only the kcp object's own writes that changed it count for the
	// cache check (not the third, a patch that changed nothing, nor the
	// other primary's finalizer).
	var changedKcp []string
	for _, o := range ops.ops {
		if o.overwritten != "" {
			changedKcp = append(changedKcp, o.op)
		}
	}
	if want := []string{opMetadata, opStatus}; !slices.Equal(changedKcp, want) {
		t.Errorf("writes with an overwritten version: %v, want %v", changedKcp, want)
	}
	if got, want := ops.overwritten(), []string{created, patched}; !slices.Equal(got, want) || created == patched {
		t.Errorf("overwritten() = %v, want the kcp object's versions before its metadata and status writes %v", got, want)
	}
	// Each write is timed from the pass's start, one after the other.
	elapsed := time.Since(ops.start)
	for i, o := range ops.ops {
		if o.at < 0 || o.took <= 0 || o.at+o.took > elapsed || (i > 0 && o.at < ops.ops[i-1].at+ops.ops[i-1].took) {
			t.Errorf("write %d (%s) at %s for %s: not within the pass (%s) after the one before", i, o.op, o.at, o.took, elapsed)
		}
	}
}

func TestErrorReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", syncer.ErrConflict), "ObjectConflict"},
		{fmt.Errorf("x: %w", &related.NamespaceNotAllowedError{Namespace: "vault"}), "NamespaceNotAllowed"},
		{fmt.Errorf("x: %w", related.ErrEmptySelector), "EmptySelector"},
		{fmt.Errorf("failed: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "things"}, "a", errors.New("no"))), "Forbidden"},
		{errors.New("spec mutation: bad path"), "Mutation"},
		{&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: "MadeUpByAWebhook"}}, "Other"},
		{errors.New("something"), "Unknown"},
	} {
		if got := errorReason(tc.err); got != tc.want {
			t.Errorf("errorReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestPassTrace: at debug level a pass logs its queue wait, its writes
// with their start and duration, and what it asks for next; above debug
// level nothing.
func TestPassTrace(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	p := &pass{observed: start.Add(-250 * time.Millisecond), start: start, ops: &passOps{start: start}}
	p.ops.add(passOp{op: opMetadata, at: 2 * time.Millisecond, took: 310 * time.Millisecond}, nil)
	p.ops.add(passOp{op: opCreate, at: 313 * time.Millisecond, took: 9 * time.Millisecond}, apierrors.NewAlreadyExists(schema.GroupResource{}, "x"))

	for _, tc := range []struct {
		verbosity int
		res       reconcile.Result
		err       error
		cause     error
		want      string
	}{
		{0, reconcile.Result{}, nil, nil, ""},
		{1, reconcile.Result{RequeueAfter: time.Second}, nil, errors.New("fenced"),
			`"level"=1 "msg"="Sync pass" "took"="<t>" "queued"="250ms" "event"="2026-11-26T09:59:59.75Z" "writes"="metadata success at 2ms for 310ms, create conflict at 313ms for 9ms" "requeueAfter"="1s" "cause"="fenced"`},
		{1, reconcile.Result{}, errors.New("boom"), nil, `"level"=1 "msg"="Sync pass" "took"="<t>" "queued"="250ms" "event"="2026-11-26T09:59:59.75Z" "writes"="metadata success at 2ms for 310ms, create conflict at 313ms for 9ms" "error"="boom"`},
	} {
		var got string
		l := funcr.New(func(_, args string) { got = args }, funcr.Options{Verbosity: tc.verbosity})
		p.trace(log.IntoContext(t.Context(), l), tc.res, tc.err, tc.cause)
		// The pass's duration is measured now; the rest is fixed.
		if i, j := strings.Index(got, `"took"="`), strings.Index(got, `" "queued"`); i >= 0 && j > i {
			got = got[:i] + `"took"="<t>` + got[j:]
		}
		if got != tc.want {
			t.Errorf("verbosity %d: logged\n%s\nwant\n%s", tc.verbosity, got, tc.want)
		}
	}
}

// TestCacheBehind: a pass that finds the kcp object at a version its last
// pass wrote over waits for the cache, for cacheBehindMax at most; any
// other version, a gone workspace or object, or a pass without such
// writes forgets the record.
func TestCacheBehind(t *testing.T) {
	r, h := newRecordingReconciler(t)
	h.engage("ws", "a")
	a, b := recordReq("ws", "a"), recordReq("ws", "b")
	t0 := time.Unix(1000, 0)
	for i, step := range []struct {
		do   func()
		req  mcreconcile.Request
		rv   string
		at   time.Duration // after t0
		want bool
	}{
		{req: a, rv: "5", want: false},
		{do: func() { r.wroteOver(a, []string{"5", "6"}, t0) }, req: a, rv: "5", want: true},
		{req: a, rv: "6", at: time.Second, want: true},
		{req: b, rv: "5", want: false},
		{req: a, rv: "7", want: false},
		{req: a, rv: "5", want: false}, // forgotten once the cache caught up
		{do: func() { r.wroteOver(a, []string{"8"}, t0); r.wroteOver(a, nil, t0) }, req: a, rv: "8", want: false},
		// A cache that never catches up is waited for cacheBehindMax.
		{do: func() { r.wroteOver(a, []string{"9"}, t0) }, req: a, rv: "9", at: cacheBehindMax - time.Second, want: true},
		{req: a, rv: "9", at: cacheBehindMax, want: false},
		{req: a, rv: "9", want: false},
	} {
		if step.do != nil {
			step.do()
		}
		if got := r.cacheBehind(step.req, step.rv, t0.Add(step.at)); got != step.want {
			t.Errorf("step %d: cacheBehind(%s, %s) = %v, want %v", i, step.req.Name, step.rv, got, step.want)
		}
	}
	if n := r.overwritten.len(); n != 0 {
		t.Errorf("%d records left", n)
	}
}

func recordReq(ws, name string) mcreconcile.Request {
	return mcreconcile.Request{ClusterName: ws, Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}}
}

// newRecordingReconciler is a reconciler with records over a started hub
// whose disengagements reach it.
func newRecordingReconciler(t *testing.T) (*reconciler, *hubHarness) {
	h := newHubHarness(t)
	r := &reconciler{workspaces: h.hub, waits: newRecords[int](), conflicts: newRecords[int](), refusals: newRecords[int](), unresolved: newRecords[int](), overwritten: newRecords[overwrite]()}
	h.hub.disengaged = r.forgetWorkspace
	h.start()
	return r, h
}

// countRecords returns the reconciler's records: waits, conflicts and
// overwritten versions.
func countRecords(r *reconciler) (int, int, int) {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	return r.waits.len(), r.conflicts.len(), r.overwritten.len()
}

// TestRecordsFollowEngagement: a workspace that disengages takes its
// records along, a pass that ends after that records nothing, and a
// disengagement reported late does not take the records of the
// workspace's next engagement.
func TestRecordsFollowEngagement(t *testing.T) {
	r, h := newRecordingReconciler(t)
	forgotten := make(chan string, 4)
	release := make(chan struct{})
	h.hub.disengaged = func(name string) {
		<-release
		r.forgetWorkspace(name)
		forgotten <- name
	}
	h.engage("ws", "a")
	h.engage("other", "a")
	a, c := recordReq("ws", "a"), recordReq("other", "c")
	t0 := time.Unix(1000, 0)

	record := func(req mcreconcile.Request) {
		r.wroteOver(req, []string{"10"}, t0)
		r.streak(r.conflicts, req, true)
		r.waited(req, true)
	}
	record(a)
	record(c)
	h.cancel["ws"]()
	close(release)
	if got := <-forgotten; got != "ws" {
		t.Fatalf("forgot %s, want ws", got)
	}
	// A pass of ws that ends now records nothing.
	record(recordReq("ws", "b"))
	if w, cf, o := countRecords(r); w != 1 || cf != 1 || o != 1 {
		t.Errorf("after ws left: %d waits, %d conflicts, %d versions; want other/c's only (1, 1, 1)", w, cf, o)
	}

	// ws leaves and comes back before its leaving is reported.
	release = make(chan struct{})
	h.engage("ws", "a")
	h.cancel["ws"]()
	eventually(t, "ws to leave the hub", func() bool { _, ok := h.hub.workspace("ws"); return !ok })
	h.engage("ws", "a")
	record(a)
	close(release)
	<-forgotten
	if !r.cacheBehind(a, "10", t0) {
		t.Error("a late report of ws leaving dropped the records of its new engagement")
	}
	if w, cf, _ := countRecords(r); w != 2 || cf != 2 {
		t.Errorf("after ws came back: %d waits, %d conflicts; want ws/a's and other/c's", w, cf)
	}
}
