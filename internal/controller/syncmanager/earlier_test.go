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

package syncmanager

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestEarlierReleaseRunsOffTheWorker: after a projection change, the
// objects of the earlier projection are released on a release worker, not
// on the syncmanager's single one. The transitions: none to release → no
// job; a release in flight → the reconcile returns at once with the
// progress in SyncReady and looks again after releaseProgressInterval, and
// a second reconcile follows the same job; the projection changes again →
// the release before the old current one stops, and is waited for, before
// the new controller starts (it could take that controller's objects); a
// failed release → a Warning and a backoff; a finished one → nothing more,
// even while the PublishedResource read still names what it released (a
// cache that lags, or a record the agent may not write).
func TestEarlierReleaseRunsOffTheWorker(t *testing.T) {
	old := schema.GroupResource{Group: "old.example.com", Resource: "things"}
	current := schema.GroupResource{Group: "kcp.example.com", Resource: "things"}
	newer := schema.GroupResource{Group: "new.example.com", Resource: "things"}
	pr := func(recorded ...schema.GroupResource) *syncagentv1alpha1.PublishedResource {
		var names []string
		for _, gr := range recorded {
			names = append(names, gr.String())
		}
		return &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things",
			Annotations: map[string]string{keys.SyncedResources: strings.Join(names, ",")}}}
	}
	events := record.NewFakeRecorder(10)
	r := &reconciler{releases: startedReleases(t), log: logr.Discard(), prEvents: events, releasing: map[string]int{}}
	ctx := context.Background()
	call := func(p *syncagentv1alpha1.PublishedResource, cur schema.GroupResource, release earlierReleaseFunc) (metav1.Condition, reconcile.Result) {
		t.Helper()
		cond := metav1.Condition{Type: syncagentv1alpha1.ConditionSyncReady, Status: metav1.ConditionTrue, Message: "Synchronizing."}
		var result reconcile.Result
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.earlierRelease(ctx, p, cur, release, &cond, &result)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the reconcile waited for the release")
		}
		return cond, result
	}
	never := func(context.Context, *syncagentv1alpha1.PublishedResource, schema.GroupResource, *releaseProgress) error {
		t.Error("a release started with nothing to release")
		return nil
	}

	// Nothing of an earlier projection recorded: no job.
	if cond, res := call(pr(current), current, never); cond.Message != "Synchronizing." || !res.IsZero() {
		t.Errorf("nothing to release: %q, %+v", cond.Message, res)
	}

	// In flight: 2000 found, 700 released, blocked until unblock.
	unblock, stopped := make(chan struct{}), make(chan struct{})
	var starts atomic.Int32
	slow := func(ctx context.Context, p *syncagentv1alpha1.PublishedResource, cur schema.GroupResource, progress *releaseProgress) error {
		starts.Add(1)
		if cur != current || len(r.syncedResources(p)) != 2 {
			t.Errorf("the release got current %v and records %v", cur, r.syncedResources(p))
		}
		progress.count(2000, 700)
		select {
		case <-unblock:
			return nil
		case <-ctx.Done():
			close(stopped)
			return ctx.Err()
		}
	}
	var cond metav1.Condition
	var res reconcile.Result
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if cond, res = call(pr(old, current), current, slow); strings.Contains(cond.Message, "700 released of the 2000 found so far") {
			break
		}
	}
	if !strings.HasPrefix(cond.Message, "Synchronizing. Releasing the objects of an earlier projection: 700 released of the 2000 found so far.") {
		t.Errorf("SyncReady during the release: %q, want its progress", cond.Message)
	}
	if res.RequeueAfter != releaseProgressInterval {
		t.Errorf("a reconcile during the release: %+v, want a look again after %s", res, releaseProgressInterval)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("the release started %d times, want once", n)
	}

	// The projection changes again: before the new controller starts, the
	// release before the former current stops, and is waited for.
	if err := r.stopOtherEarlier(ctx, "things", newer); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("stopOtherEarlier returned before the release it stopped")
	}
	unblockNewer := make(chan struct{})
	call(pr(old, current, newer), newer, func(ctx context.Context, _ *syncagentv1alpha1.PublishedResource, _ schema.GroupResource, _ *releaseProgress) error {
		select {
		case <-unblockNewer:
			return errors.New("shard down")
		case <-ctx.Done():
			return ctx.Err()
		}
	})

	// It fails: a Warning and a backoff, no new release in that reconcile.
	close(unblockNewer)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		// Until it ended, a reconcile finds it running (or just ended:
		// its end reconciles again).
		if _, res = call(pr(old, current, newer), newer, never); res.RequeueAfter != releaseProgressInterval && res.RequeueAfter != 0 {
			break
		}
	}
	if res.RequeueAfter == 0 || res.RequeueAfter == releaseProgressInterval {
		t.Errorf("after a failed release: %+v, want a backoff", res)
	}
	select {
	case e := <-events.Events:
		if !strings.Contains(e, "Warning") || !strings.Contains(e, "earlier projection") {
			t.Errorf("Event %q, want a Warning about the earlier projection", e)
		}
	default:
		t.Error("no Event says that the release failed")
	}

	// It works the next time; once it finished and its record is gone,
	// nothing more.
	succeed := func(context.Context, *syncagentv1alpha1.PublishedResource, schema.GroupResource, *releaseProgress) error {
		return nil
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// The first call starts it; one after its end takes its result.
		if cond, res := call(pr(old, current, newer), newer, succeed); res.IsZero() && cond.Message == "Synchronizing." && !hasJob(r.releases, earlierOf("things", newer)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the release did not end")
		}
	}
	if cond, res := call(pr(old, current, newer), newer, never); cond.Message != "Synchronizing." || !res.IsZero() {
		t.Errorf("after the release, with the record not yet updated: %q, %+v", cond.Message, res)
	}
	if cond, res := call(pr(newer), newer, never); cond.Message != "Synchronizing." || !res.IsZero() {
		t.Errorf("after the release: %q, %+v", cond.Message, res)
	}

	// A condition carried over from an earlier reconcile loses its old
	// progress.
	carried := metav1.Condition{Message: "Synchronizing." + earlierProgress + " 5 released of the 9 found so far."}
	var result reconcile.Result
	r.earlierRelease(ctx, pr(newer), newer, never, &carried, &result)
	if carried.Message != "Synchronizing." {
		t.Errorf("carried-over message: %q", carried.Message)
	}
}

// hasJob reports whether j holds a job for key (running, or finished and
// not taken).
func hasJob(j *releaseJobs, key jobKey) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.jobs[key]
	return ok
}

// TestForgetSyncedResources: a finished release of earlier projections
// removes what it released from the live record, keeping what was recorded
// since (a newer projection), writes with an optimistic lock and tries
// again after a conflict, and leaves a PublishedResource of the same name
// created since alone.
func TestForgetSyncedResources(t *testing.T) {
	a := schema.GroupResource{Group: "a.example.com", Resource: "things"}
	s := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		uid       types.UID
		conflicts int
		want      string
	}{
		{name: "released ones go, one recorded since stays", uid: "1", want: "things.b.example.com,things.c.example.com"},
		{name: "a conflict is tried again", uid: "1", conflicts: 2, want: "things.b.example.com,things.c.example.com"},
		{name: "created again since: untouched", uid: "2", want: "things.a.example.com,things.b.example.com,things.c.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", UID: "1",
				Annotations: map[string]string{keys.SyncedResources: "things.a.example.com,things.b.example.com,things.c.example.com"}}}
			conflicts := tc.conflicts
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(live).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, cl ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.PatchOption) error {
					data, _ := patch.Data(obj)
					if !strings.Contains(string(data), `"resourceVersion"`) {
						t.Errorf("a write without the optimistic lock: %s", data)
					}
					if conflicts > 0 {
						conflicts--
						return apierrors.NewConflict(schema.GroupResource{Resource: "publishedresources"}, obj.GetName(), errors.New("changed"))
					}
					return cl.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			r := &reconciler{client: c, status: &conditions.Writer{Client: c, Reader: c, FieldOwner: ControllerName, Log: logr.Discard()}, log: logr.Discard()}
			// The release started when the record named a and b only; c
			// was recorded since.
			started := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", UID: tc.uid}}
			if err := r.forgetSyncedResources(context.Background(), started, []schema.GroupResource{a}); err != nil {
				t.Fatal(err)
			}
			got := &syncagentv1alpha1.PublishedResource{}
			if err := c.Get(context.Background(), types.NamespacedName{Name: "things"}, got); err != nil {
				t.Fatal(err)
			}
			if got.Annotations[keys.SyncedResources] != tc.want {
				t.Errorf("record %q, want %q", got.Annotations[keys.SyncedResources], tc.want)
			}
		})
	}
}
