package syncmanager

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestEarlierReleaseRunsOffTheWorker: after a projection change, the
// objects of the earlier projection are released on a release worker, not
// on the syncmanager's single one. The transitions: none to release → no
// job; a release in flight → the reconcile returns at once with the
// progress in SyncReady and looks again after releaseProgressInterval, and
// a second reconcile follows the same job; the projection changes again →
// the release before the old current one stops (it could take the running
// controller's objects); a failed release → a Warning and a backoff; a
// finished one → nothing more.
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
		if cur != current || len(syncedResources(p)) != 2 {
			t.Errorf("the release got current %v and records %v", cur, syncedResources(p))
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

	// The projection changes again: the release before current stops.
	unblockNewer := make(chan struct{})
	call(pr(old, current, newer), newer, func(ctx context.Context, _ *syncagentv1alpha1.PublishedResource, _ schema.GroupResource, _ *releaseProgress) error {
		select {
		case <-unblockNewer:
			return errors.New("shard down")
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the release before the former current projection still runs")
	}

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
	call(pr(old, current, newer), newer, func(context.Context, *syncagentv1alpha1.PublishedResource, schema.GroupResource, *releaseProgress) error {
		return nil
	})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r.releases.finishedJob(earlierOf("things", newer)) != nil {
			break
		}
	}
	if cond, res := call(pr(newer), newer, never); cond.Message != "Synchronizing." || !res.IsZero() {
		t.Errorf("after the release: %q, %+v", cond.Message, res)
	}
}
