package syncmanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"

	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// releaseStartRetry: the release workers were not started yet (the
// manager is still starting); the reconcile looks again after this.
const releaseStartRetry = time.Second

// earlierReleaseFunc releases the objects of pr's projections before
// current, counting into progress.
type earlierReleaseFunc func(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, current schema.GroupResource, progress *releaseProgress) error

// earlierRelease starts or follows, on a release worker, release (of the
// objects of the kcp resources pr's earlier projections synced; current is
// synced now), and adds its progress to the PublishedResource's SyncReady
// condition and its requeue to result. A release of the projections before
// another current one (the projection changed again) is stopped first: it
// could release objects the running controller syncs.
func (r *reconciler) earlierRelease(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, current schema.GroupResource, release earlierReleaseFunc, cond *metav1.Condition, result *reconcile.Result) {
	key := earlierOf(pr.Name, current)
	r.releases.cancelWhere(func(k jobKey) bool { return k.pr == pr.Name && k.earlier() && k != key })
	retry := func(d time.Duration) {
		if result.RequeueAfter == 0 || d < result.RequeueAfter {
			result.RequeueAfter = d
		}
	}
	if job := r.releases.finishedJob(key); job != nil && job.err != nil {
		if lifecycle.Quiet(ctx, job.err) {
			return // the agent stops or lost the lead
		}
		r.log.Error(job.err, "Failed to release the objects of an earlier projection", "publishedresource", pr.Name)
		r.prEvents.Event(pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, "The objects of an earlier projection could not all be released; retrying.")
		retry(r.backoff(r.releasing, pr.Name))
		return
	}
	if !slices.ContainsFunc(syncedResources(pr), func(gr schema.GroupResource) bool { return gr != current }) {
		return
	}
	snapshot := pr.DeepCopy()
	job, err := r.releases.start(ctx, key, func(ctx context.Context, p *releaseProgress) error {
		return release(ctx, snapshot, current, p)
	})
	if err != nil {
		retry(releaseStartRetry)
		return
	}
	if job.finished() {
		return // its end reconciles the PublishedResource
	}
	cond.Message += fmt.Sprintf(" Releasing the objects of an earlier projection: %d released of the %d found so far.",
		job.progress.released.Load(), job.progress.found.Load())
	retry(releaseProgressInterval)
}

// releaseEarlier releases, through urls, the objects of the kcp resources
// the earlier projections of the PublishedResource synced (current is
// synced now), counting into progress, and forgets those that were
// released.
func (r *reconciler) releaseEarlier(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, current schema.GroupResource, urls []string, progress *releaseProgress) error {
	failed := map[schema.GroupResource]bool{}
	var errs []error
	if err := r.throughEveryEndpoint(ctx, urls, func(urls []string) error {
		for _, gr := range syncedResources(pr) {
			if gr == current || failed[gr] {
				continue
			}
			n, err := r.releaseResource(ctx, pr.Name, gr, urls, progress)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", gr, err))
				failed[gr] = true
				continue
			}
			r.log.Info("Released the objects of an earlier projection", "publishedresource", pr.Name, "resource", gr.String(), "released", n)
		}
		return nil
	}); err != nil {
		return err // nothing is forgotten
	}
	keep := []schema.GroupResource{current}
	for gr := range failed {
		keep = append(keep, gr)
	}
	if err := r.setSyncedResources(ctx, pr, keep); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.servedMu.Lock()
	delete(r.releasing, pr.Name)
	r.servedMu.Unlock()
	return nil
}
