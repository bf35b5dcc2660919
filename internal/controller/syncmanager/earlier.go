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
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"

	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// releaseStartRetry: the release workers were not started yet (the
// manager is still starting); the reconcile looks again after this.
const releaseStartRetry = time.Second

// earlierStopWait bounds the wait for a stopped release of earlier
// projections to return (a patch in flight ends within its own timeout).
const earlierStopWait = 30 * time.Second

// recordConflictRetries bounds the attempts to update the record of synced
// resources when the PublishedResource changes in between.
const recordConflictRetries = 5

// earlierProgress starts what SyncReady's message says while the objects
// of an earlier projection are released.
const earlierProgress = " Releasing the objects of an earlier projection:"

// errEarlierStillRunning: a stopped release of earlier projections did not
// return within earlierStopWait.
var errEarlierStillRunning = errors.New("the release of an earlier projection has not stopped yet")

// earlierReleaseFunc releases the objects of pr's projections before
// current, counting into progress.
type earlierReleaseFunc func(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, current schema.GroupResource, progress *releaseProgress) error

// earlierDone remembers the resources a finished release of earlier
// projections released, until the PublishedResource's record (read from a
// cache that may lag, or never written without the permission to patch)
// no longer names them.
type earlierDone struct {
	key      jobKey
	released []schema.GroupResource
}

// forgetEarlier stops the releases of pr's earlier projections and
// forgets what they released: everything pr synced is released at once,
// or pr is gone.
func (r *reconciler) forgetEarlier(prName string) {
	r.releases.cancelWhere(func(k jobKey) bool { return k.pr == prName && k.earlier() })
	r.servedMu.Lock()
	delete(r.earlierDone, prName)
	r.servedMu.Unlock()
}

// stopOtherEarlier stops the releases of pr's earlier projections started
// for another current resource than current, and waits for them: one
// could take the finalizers of objects the controller of current syncs
// (the projection went back to an earlier one). Called before that
// controller starts.
func (r *reconciler) stopOtherEarlier(ctx context.Context, prName string, current schema.GroupResource) error {
	stopped := r.releases.cancelWhere(func(k jobKey) bool { return k.pr == prName && k.earlier() && k.current != current })
	timeout := time.After(earlierStopWait)
	for _, job := range stopped {
		select {
		case <-job.done:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return errEarlierStillRunning
		}
	}
	return nil
}

// earlierRelease starts or follows, on a release worker, release (of the
// objects of the kcp resources pr's earlier projections synced; current is
// synced now), and adds its progress to the PublishedResource's SyncReady
// condition and its requeue to result.
func (r *reconciler) earlierRelease(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, current schema.GroupResource, release earlierReleaseFunc, cond *metav1.Condition, result *reconcile.Result) {
	key := earlierOf(pr.Name, current)
	// A condition carried over from an earlier reconcile has the progress
	// of then.
	cond.Message, _, _ = strings.Cut(cond.Message, earlierProgress)
	retry := func(d time.Duration) {
		if result.RequeueAfter == 0 || d < result.RequeueAfter {
			result.RequeueAfter = d
		}
	}
	pending := r.earlierPending(pr, key)
	if job := r.releases.finishedJob(key); job != nil {
		if job.err == nil {
			r.servedMu.Lock()
			if r.earlierDone == nil {
				r.earlierDone = map[string]earlierDone{}
			}
			r.earlierDone[pr.Name] = earlierDone{key: key, released: pending}
			r.servedMu.Unlock()
			return
		}
		if lifecycle.Quiet(ctx, job.err) {
			return // the agent stops or lost the lead
		}
		r.log.Error(job.err, "Failed to release the objects of an earlier projection", "publishedresource", pr.Name)
		r.prEvents.Event(pr, corev1.EventTypeWarning, syncer.ReasonReconcilingError, "The objects of an earlier projection could not all be released; retrying.")
		retry(r.backoff(r.releasing, pr.Name))
		return
	}
	if len(pending) == 0 {
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
	cond.Message += fmt.Sprintf("%s %d released of the %d found so far.", earlierProgress, job.progress.released.Load(), job.progress.found.Load())
	retry(releaseProgressInterval)
}

// earlierPending returns the resources of pr's record that the release of
// key has to release: all but current, less what a finished release of
// key released already (forgotten once the record no longer names them).
func (r *reconciler) earlierPending(pr *syncagentv1alpha1.PublishedResource, key jobKey) []schema.GroupResource {
	r.servedMu.Lock()
	defer r.servedMu.Unlock()
	done, ok := r.earlierDone[pr.Name]
	recorded := r.syncedResources(pr)
	var pending []schema.GroupResource
	for _, gr := range recorded {
		if gr != key.current && !(ok && done.key == key && slices.Contains(done.released, gr)) {
			pending = append(pending, gr)
		}
	}
	if ok && !slices.ContainsFunc(recorded, func(gr schema.GroupResource) bool { return slices.Contains(done.released, gr) }) {
		delete(r.earlierDone, pr.Name)
	}
	return pending
}

// releaseEarlier releases, through urls, the objects of the kcp resources
// the earlier projections of the PublishedResource synced (current is
// synced now), counting into progress, and forgets those that were
// released in the live PublishedResource's record.
func (r *reconciler) releaseEarlier(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, current schema.GroupResource, urls []string, progress *releaseProgress) error {
	failed := map[schema.GroupResource]bool{}
	var errs []error
	if err := r.throughEveryEndpoint(ctx, urls, func(urls []string) error {
		for _, gr := range r.syncedResources(pr) {
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
	var released []schema.GroupResource
	for _, gr := range r.syncedResources(pr) {
		if gr != current && !failed[gr] {
			released = append(released, gr)
		}
	}
	if err := r.forgetSyncedResources(ctx, pr, released); err != nil {
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

// forgetSyncedResources removes grs from the record on the live
// PublishedResource, if it is still the one pr is (its UID), keeping what
// others wrote meanwhile (the reconcile records a new projection while a
// release runs): read from the server, written with its resourceVersion,
// tried again on a conflict.
func (r *reconciler) forgetSyncedResources(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, grs []schema.GroupResource) error {
	for attempt := 0; ; attempt++ {
		live := &syncagentv1alpha1.PublishedResource{}
		if err := r.status.Reader.Get(ctx, types.NamespacedName{Name: pr.Name}, live); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("failed to read PublishedResource %s: %w", pr.Name, err)
		}
		if live.UID != pr.UID {
			return nil // deleted and created again: not this release's record
		}
		keep := slices.DeleteFunc(r.syncedResources(live), func(gr schema.GroupResource) bool { return slices.Contains(grs, gr) })
		err := r.setSyncedResources(ctx, live, keep, true)
		if !apierrors.IsConflict(err) || attempt == recordConflictRetries {
			return err
		}
	}
}
