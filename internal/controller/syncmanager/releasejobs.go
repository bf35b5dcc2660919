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
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// releaseWorkers bounds the releases that run at once: each patches
// objects one at a time through the virtual workspace, so a few in
// parallel keep kcp's load bounded while one slow release (many objects,
// a slow shard) does not hold up the others.
const releaseWorkers = 2

// releaseProgressInterval: a running release's progress is reported this
// often (its end reconciles the PublishedResource at once).
const releaseProgressInterval = 5 * time.Second

// releaseStartWait bounds how long a reconcile waits for the job runner
// to be started by the manager before it gives up and tries again.
const releaseStartWait = 10 * time.Second

// errReleasesNotStarted: the manager has not started the job runner yet.
var errReleasesNotStarted = errors.New("the release workers are not started yet")

// releaseProgress counts a release's objects: found holding the agent's
// finalizer, and released. Safe for concurrent use; a nil one counts
// nothing.
type releaseProgress struct {
	found, released atomic.Int64
}

func (p *releaseProgress) count(found, released int) {
	if p != nil {
		p.found.Add(int64(found))
		p.released.Add(int64(released))
	}
}

// releaseJob is one PublishedResource's release in the background.
type releaseJob struct {
	progress releaseProgress
	cancel   context.CancelFunc
	// done is closed when the release returned; err is its result.
	done chan struct{}
	err  error
}

// finished reports whether the release returned.
func (j *releaseJob) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// jobKey names a release job: a PublishedResource's release of everything
// it synced (deleted, deselected, in release-only mode, in SourceConflict;
// current is empty), or of the objects of its earlier projections while it
// syncs current.
type jobKey struct {
	pr      string
	current schema.GroupResource
}

// allOf is the key of the release of everything pr synced.
func allOf(pr string) jobKey { return jobKey{pr: pr} }

// earlierOf is the key of the release of pr's projections before current.
func earlierOf(pr string, current schema.GroupResource) jobKey {
	return jobKey{pr: pr, current: current}
}

// earlier reports whether the job releases earlier projections.
func (k jobKey) earlier() bool { return !k.current.Empty() }

// releaseJobs runs the releases of PublishedResources on workers of their
// own, so that the syncmanager's single worker only starts them and looks
// at their progress. A job goes: absent → running (start; it waits for one
// of releaseWorkers slots first) → finished (its PublishedResource is
// reconciled: notify) → absent (finishedJob, which hands out the result). A
// PublishedResource that syncs again cancels the release of everything it
// synced; one that stops syncing, or syncs another projection, the release
// of its earlier projections (cancel, cancelWhere). No lock is held while a release runs.
type releaseJobs struct {
	mu   sync.Mutex
	jobs map[jobKey]*releaseJob
	// ctx is the manager's (set by Start): jobs end when the agent stops
	// or loses the lead.
	ctx     context.Context
	started chan struct{}
	slots   chan struct{}
	// notify reconciles a PublishedResource once its release finished.
	notify func(prName string)
}

func newReleaseJobs(workers int, notify func(prName string)) *releaseJobs {
	return &releaseJobs{jobs: map[jobKey]*releaseJob{}, started: make(chan struct{}), slots: make(chan struct{}, workers), notify: notify}
}

// Start makes the runner accept jobs until ctx ends (a leader-only
// runnable of the manager).
func (j *releaseJobs) Start(ctx context.Context) error {
	j.mu.Lock()
	j.ctx = ctx
	j.mu.Unlock()
	close(j.started)
	<-ctx.Done()
	return nil
}

// NeedLeaderElection: releases run on the leader only.
func (j *releaseJobs) NeedLeaderElection() bool { return true }

// start returns key's job, starting fn for it if none runs or waits to be
// taken. fn gets the job's context and progress.
func (j *releaseJobs) start(ctx context.Context, key jobKey, fn func(context.Context, *releaseProgress) error) (*releaseJob, error) {
	select {
	case <-j.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(releaseStartWait):
		return nil, errReleasesNotStarted
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if job, ok := j.jobs[key]; ok {
		return job, nil
	}
	jobCtx, cancel := context.WithCancel(j.ctx)
	job := &releaseJob{cancel: cancel, done: make(chan struct{})}
	j.jobs[key] = job
	go j.run(jobCtx, key.pr, job, fn)
	return job, nil
}

func (j *releaseJobs) run(ctx context.Context, prName string, job *releaseJob, fn func(context.Context, *releaseProgress) error) {
	defer job.cancel()
	select {
	case j.slots <- struct{}{}:
		// A slot and the end can come at once: the end wins.
		if job.err = ctx.Err(); job.err == nil {
			job.err = fn(ctx, &job.progress)
		}
		<-j.slots
	case <-ctx.Done():
		job.err = ctx.Err()
	}
	close(job.done)
	if j.notify != nil {
		j.notify(prName)
	}
}

// finishedJob forgets key's finished job and returns it (its err and
// progress are final); nil if no finished job is there.
func (j *releaseJobs) finishedJob(key jobKey) *releaseJob {
	j.mu.Lock()
	defer j.mu.Unlock()
	job, found := j.jobs[key]
	if !found || !job.finished() {
		return nil
	}
	delete(j.jobs, key)
	return job
}

// forgetFinished forgets the finished jobs whose key matches.
func (j *releaseJobs) forgetFinished(match func(jobKey) bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for k, job := range j.jobs {
		if match(k) && job.finished() {
			delete(j.jobs, k)
		}
	}
}

// cancel stops key's job, if any, and forgets it.
func (j *releaseJobs) cancel(key jobKey) {
	j.cancelWhere(func(k jobKey) bool { return k == key })
}

// cancelWhere stops and forgets the jobs whose key matches, and returns
// them (their done closes once they returned).
func (j *releaseJobs) cancelWhere(match func(jobKey) bool) []*releaseJob {
	j.mu.Lock()
	var stop []*releaseJob
	for k, job := range j.jobs {
		if match(k) {
			stop = append(stop, job)
			delete(j.jobs, k)
		}
	}
	j.mu.Unlock()
	for _, job := range stop {
		job.cancel()
	}
	return stop
}
