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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// startedReleases returns release workers that run until the test ends.
func startedReleases(t *testing.T) *releaseJobs {
	t.Helper()
	j := newReleaseJobs(releaseWorkers, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = j.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return j
}

// TestReleaseJobs: the state transitions of a release job (absent →
// running → finished → absent), the bound on releases at once, cancel,
// and the end of the agent.
func TestReleaseJobs(t *testing.T) {
	errFailed := errors.New("shard down")
	type step struct {
		notified chan string
		jobs     *releaseJobs
		stop     context.CancelFunc
	}
	setup := func(t *testing.T, workers int) *step {
		t.Helper()
		s := &step{notified: make(chan string, 10)}
		s.jobs = newReleaseJobs(workers, func(pr string) { s.notified <- pr })
		ctx, cancel := context.WithCancel(context.Background())
		s.stop = cancel
		go func() { _ = s.jobs.Start(ctx) }()
		t.Cleanup(cancel)
		return s
	}
	waitNotified := func(t *testing.T, s *step, want string) {
		t.Helper()
		select {
		case got := <-s.notified:
			if got != want {
				t.Fatalf("notified %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification for %q", want)
		}
	}
	// waitNotifiedAll waits for one notification of each of want, in any
	// order.
	waitNotifiedAll := func(t *testing.T, s *step, want ...string) {
		t.Helper()
		got := map[string]bool{}
		for range want {
			select {
			case pr := <-s.notified:
				got[pr] = true
			case <-time.After(10 * time.Second):
				t.Fatalf("notified only %v, want %v", got, want)
			}
		}
		for _, pr := range want {
			if !got[pr] {
				t.Fatalf("notified %v, want %v", got, want)
			}
		}
	}
	ctx := context.Background()

	t.Run("a release runs on its own, is started once, and hands out its result once", func(t *testing.T) {
		s := setup(t, 2)
		release, calls := make(chan struct{}), 0
		fn := func(_ context.Context, p *releaseProgress) error {
			calls++
			p.count(3, 2)
			<-release
			return errFailed
		}
		job, err := s.jobs.start(ctx, allOf("a"), fn)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := s.jobs.start(ctx, allOf("a"), fn); again != job {
			t.Error("a second start while it runs made another job")
		}
		if job.finished() || s.jobs.finishedJob(allOf("a")) != nil {
			t.Fatal("finished before the release returned")
		}
		close(release)
		waitNotified(t, s, "a")
		got := s.jobs.finishedJob(allOf("a"))
		if got != job || !errors.Is(got.err, errFailed) || got.progress.found.Load() != 3 || got.progress.released.Load() != 2 {
			t.Fatalf("finished job %+v, want the started one with its error and progress 2 of 3", got)
		}
		if s.jobs.finishedJob(allOf("a")) != nil {
			t.Error("the result was handed out twice")
		}
		if calls != 1 {
			t.Errorf("the release ran %d times, want 1", calls)
		}
	})

	t.Run("workers bound the releases that run at once", func(t *testing.T) {
		s := setup(t, 1)
		release, running, second := make(chan struct{}), make(chan struct{}), make(chan struct{})
		if _, err := s.jobs.start(ctx, allOf("first"), func(context.Context, *releaseProgress) error { close(running); <-release; return nil }); err != nil {
			t.Fatal(err)
		}
		<-running
		if _, err := s.jobs.start(ctx, allOf("second"), func(context.Context, *releaseProgress) error { close(second); return nil }); err != nil {
			t.Fatal(err)
		}
		select {
		case <-second:
			t.Fatal("the second release ran while the only worker was busy")
		case <-time.After(100 * time.Millisecond):
		}
		close(release)
		// The first frees its slot before it reports, so the second may
		// report first: both must report, in either order.
		waitNotifiedAll(t, s, "first", "second")
	})

	t.Run("cancel stops a running release and forgets it; a new start runs anew", func(t *testing.T) {
		s := setup(t, 2)
		running, stopped := make(chan struct{}), make(chan error, 1)
		if _, err := s.jobs.start(ctx, allOf("a"), func(ctx context.Context, _ *releaseProgress) error {
			close(running)
			<-ctx.Done()
			stopped <- ctx.Err()
			return ctx.Err()
		}); err != nil {
			t.Fatal(err)
		}
		<-running
		s.jobs.cancel(allOf("a"))
		if err := <-stopped; !errors.Is(err, context.Canceled) {
			t.Fatalf("the release saw %v, want context.Canceled", err)
		}
		waitNotified(t, s, "a")
		if s.jobs.finishedJob(allOf("a")) != nil {
			t.Error("a cancelled release handed out a result")
		}
		job, err := s.jobs.start(ctx, allOf("a"), func(context.Context, *releaseProgress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		waitNotified(t, s, "a")
		if !job.finished() || s.jobs.finishedJob(allOf("a")) != job {
			t.Error("the new release did not run")
		}
	})

	t.Run("the agent stopping ends releases, waiting ones too", func(t *testing.T) {
		s := setup(t, 1)
		running := make(chan struct{})
		if _, err := s.jobs.start(ctx, allOf("running"), func(ctx context.Context, _ *releaseProgress) error { close(running); <-ctx.Done(); return ctx.Err() }); err != nil {
			t.Fatal(err)
		}
		<-running
		waiting, err := s.jobs.start(ctx, allOf("waiting"), func(context.Context, *releaseProgress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		s.stop()
		waitNotifiedAll(t, s, "running", "waiting")
		<-waiting.done
		if job := s.jobs.finishedJob(allOf("waiting")); job == nil || !errors.Is(job.err, context.Canceled) {
			t.Errorf("the waiting release: %+v, want it ended with context.Canceled", job)
		}
	})

	t.Run("a reconcile does not wait beyond its context for the workers to start", func(t *testing.T) {
		j := newReleaseJobs(1, nil)
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := j.start(short, allOf("a"), func(context.Context, *releaseProgress) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("start before the workers started: %v, want the context's deadline", err)
		}
	})
}

// reconcileReleased reconciles a PublishedResource until its release, run
// by r.releases, is through: a reconcile that finds it running asks to be
// called again after releaseProgressInterval.
func reconcileReleased(t *testing.T, r *reconciler, name string) (reconcile.Result, error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		if err != nil || res.RequeueAfter != releaseProgressInterval {
			return res, err
		}
		if time.Now().After(deadline) {
			t.Fatalf("the release of %s did not end", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
