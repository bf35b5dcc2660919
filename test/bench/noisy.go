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

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// The noisy-neighbour scenario (issue 17 #1): workspace 0 creates
// NoisyObjects as fast as P clients can; once its backlog has built up,
// every other workspace creates QuietObjects at one per second. With a FIFO
// queue the quiet objects wait behind the backlog; with a fair one they
// wait about one pass per busy workspace.
const (
	// quietInterval is each quiet workspace's pace.
	quietInterval = time.Second
	// quietDelay: the quiet workspaces start when the noisy workspace has
	// been creating for this long (its backlog exists).
	quietDelay = 5 * time.Second
)

// noisyResult is one run of the noisy-neighbour scenario.
type noisyResult struct {
	Agent string `json:"agent"`
	Rep   int    `json:"rep"`
	// Noisy: the noisy workspace's create → local copy; Quiet: that of the
	// quiet objects created while the noisy backlog drained, from the start
	// of their create call.
	Noisy *phaseResult `json:"noisy"`
	Quiet *phaseResult `json:"quiet"`
	// QuietCalls: the create calls of those quiet objects into kcp (kcp's
	// own share of their latency). From the call's start, QuietSeen: until
	// the bench's watch of the workspace saw the object; QuietDelivered:
	// until the bench's watch through the virtual workspace (the agent's
	// view) saw it. QuietAccepted: from then until the workspace's watch
	// saw the agent's finalizer (the agent's queue, its finalizer PATCH);
	// QuietPlaced: from then until the local copy appeared (the agent's
	// service-side writes).
	QuietCalls     *phaseResult `json:"quietCalls"`
	QuietSeen      *phaseResult `json:"quietSeen"`
	QuietDelivered *phaseResult `json:"quietDelivered"`
	QuietAccepted  *phaseResult `json:"quietAccepted"`
	QuietPlaced    *phaseResult `json:"quietPlaced"`
	// From our agent's pass traces (nil for an agent without them), the
	// span from the bench's virtual-workspace watch until the finalizer is
	// seen split further: until the agent's queue got the event
	// (QuietEnqueued), then until the pass that wrote the finalizer started
	// (QuietQueued: the queue, and any pass before it that did not write
	// it), then until that pass started the PATCH (QuietBeforePatch), the
	// PATCH (QuietPatch), and from its end until the bench's watch of the
	// workspace saw the finalizer (QuietPatchSeen).
	QuietEnqueued    *phaseResult `json:"quietEnqueued,omitempty"`
	QuietQueued      *phaseResult `json:"quietQueued,omitempty"`
	QuietBeforePatch *phaseResult `json:"quietBeforePatch,omitempty"`
	QuietPatch       *phaseResult `json:"quietPatch,omitempty"`
	QuietPatchSeen   *phaseResult `json:"quietPatchSeen,omitempty"`
	// NoisyCalls: the bench's create calls into kcp for the noisy workspace.
	NoisyCalls *phaseResult `json:"noisyCalls"`
	// QuietDuringBacklog counts the quiet objects created before the
	// noisy workspace's last copy appeared (the figure is about them).
	QuietDuringBacklog int `json:"quietDuringBacklog"`
	// QuietAfterBacklog: the quiet objects created after it (nil: none).
	QuietAfterBacklog *phaseResult `json:"quietAfterBacklog,omitempty"`
	QuietObjects      int          `json:"quietObjects"`
	TotalSeconds      float64      `json:"totalSeconds"`
	// BacklogCPU: the CPU seconds of each process of the test bed from the
	// noisy workspace's first create until its last copy appeared
	// (BacklogSeconds of wall time; n cores give n CPU-s per second).
	BacklogCPU     map[string]float64 `json:"backlogCPUSeconds"`
	BacklogSeconds float64            `json:"backlogSeconds"`
	// KcpCPUProfile: kcp's CPU profile from the noisy workspace's first
	// create (-kcp-cpu-profile).
	KcpCPUProfile string `json:"kcpCPUProfile,omitempty"`
}

func noisyName(i int) string { return fmt.Sprintf("noisy-%05d", i) }
func quietName(i int) string { return fmt.Sprintf("quiet-%02d", i) }

// runNoisy runs the noisy-neighbour scenario once with one agent.
func runNoisy(root *benchT, k *framework.Kcp, cfg *config, rep int, au agentUnderTest) *noisyResult {
	name := fmt.Sprintf("noisy-rep%d-%s", rep, au.Label)
	t := root.child(name)
	defer t.cleanup()
	started := time.Now()
	e := &env{t: t, cfg: cfg, k: k, au: au, dir: framework.ArtifactsDir(t)}
	e.res = &runResult{Phases: map[string]*phaseResult{}}
	logf("[%s] setting up: service cluster, organisation workspace, %d consumer workspaces", name, cfg.Workspaces)
	e.setupKcpAndService(fmt.Sprintf("bench-noisy-%d-%s", rep, au.Label))
	e.startAgent()
	e.waitExported()
	e.bindConsumers()
	e.rec = newRecorder(e)
	e.rec.watchVirtualWorkspace(e)
	e.warmup()

	res := &noisyResult{Agent: au.Label, Rep: rep}
	noisyWS := e.consumers[0].ClusterName
	logf("[%s] workspace 0 creates %d objects (P=%d); after %s the other %d create %d each at 1/s", name, cfg.NoisyObjects, cfg.Parallel, quietDelay, cfg.Workspaces-1, cfg.QuietObjects)

	type quietCall struct {
		key string
		// started: the create call's start (the kcp create's own latency
		// counts, and a copy may appear before the call returns).
		started time.Time
		// call: the create call's duration.
		call time.Duration
	}
	var (
		mu     sync.Mutex
		quiets []quietCall
		qwg    sync.WaitGroup
	)
	qwg.Add(len(e.consumers) - 1)
	time.AfterFunc(quietDelay, func() {
		for w := 1; w < len(e.consumers); w++ {
			go func() {
				defer qwg.Done()
				tick := time.NewTicker(quietInterval)
				defer tick.Stop()
				for i := range cfg.QuietObjects {
					if i > 0 {
						<-tick.C
					}
					t0 := time.Now()
					_, err := e.kcpDyn[w].Resource(kcpGVR).Namespace(kcpNamespace).Create(t.Context(), newThing(kcpGVR, kcpNamespace, quietName(i)), metav1.CreateOptions{})
					call := time.Since(t0)
					if err != nil {
						logf("[%s] quiet create in workspace %d failed: %v", name, w, err)
						return
					}
					mu.Lock()
					quiets = append(quiets, quietCall{key: e.consumers[w].ClusterName + "/" + quietName(i), started: t0, call: call})
					mu.Unlock()
				}
			}()
		}
	})

	cpuBefore := takeCPU()
	var profile chan struct{}
	if cfg.KcpProfileSeconds > 0 {
		profile = e.captureProfile("kcp", cfg.kcpProfiler, cfg.KcpProfileSeconds, "kcp-cpu.pprof", &res.KcpCPUProfile)
	}
	start, done, calls := e.parallel(cfg.NoisyObjects, func(ctx context.Context, i int) error {
		_, err := e.kcpDyn[0].Resource(kcpGVR).Namespace(kcpNamespace).Create(ctx, newThing(kcpGVR, kcpNamespace, noisyName(i)), metav1.CreateOptions{})
		return err
	})
	res.NoisyCalls = callPhase(start, done, calls)
	noisySynced := make([]time.Time, cfg.NoisyObjects)
	framework.WaitFor(t, e.phaseTimeoutFor(cfg.NoisyObjects), "every noisy object's local copy", func(context.Context) (bool, error) {
		if e.agent.Exited() {
			t.Fatalf("the agent exited with code %d, see %s", e.agent.ExitCode(), e.agent.LogPath)
		}
		for i := range noisySynced {
			if noisySynced[i].IsZero() {
				ts, ok := e.rec.synced(noisyWS + "/" + noisyName(i))
				if !ok {
					return false, nil
				}
				noisySynced[i] = ts
			}
		}
		return true, nil
	})
	res.BacklogCPU, res.BacklogSeconds = cpuDelta(cpuBefore, takeCPU()), time.Since(start).Seconds()
	res.Noisy = newPhase(start, done, noisySynced)
	backlogEnd := start
	for _, ts := range noisySynced {
		backlogEnd = later(backlogEnd, ts)
	}
	qwg.Wait()
	mu.Lock()
	calledQuiet := slices.Clone(quiets)
	mu.Unlock()
	res.QuietObjects = len(calledQuiet)
	if want := (len(e.consumers) - 1) * cfg.QuietObjects; len(calledQuiet) != want {
		t.Fatalf("%d quiet objects were created, want %d (see the log above)", len(calledQuiet), want)
	}
	synced := make([]time.Time, len(calledQuiet))
	framework.WaitFor(t, setupTimeout, "every quiet object's local copy", func(context.Context) (bool, error) {
		for i, q := range calledQuiet {
			ts, ok := e.rec.synced(q.key)
			if !ok {
				return false, nil
			}
			synced[i] = ts
		}
		return true, nil
	})
	// The figure is about the quiet objects created while the backlog
	// drained; those created after it are reported apart.
	traces, err := readPassTraces(e.agent.LogPath)
	t.check(err)
	var during, duringCalls, seen, delivered, accepted, placed, after []float64
	var enqueued, queued, beforePatch, patch, patchSeen []float64
	var afterStart, afterEnd time.Time
	for i, q := range calledQuiet {
		lat := ms(synced[i].Sub(q.started))
		if q.started.Before(backlogEnd) {
			during = append(during, lat)
			duringCalls = append(duringCalls, ms(q.call))
			s, _ := e.rec.get(e.rec.kcpSeen, q.key)
			v, _ := e.rec.get(e.rec.vwSeen, q.key)
			a, _ := e.rec.get(e.rec.kcpAccepted, q.key)
			if s.IsZero() || v.IsZero() || a.IsZero() {
				t.Fatalf("the bench's kcp watches missed %s or its finalizer", q.key)
			}
			seen = append(seen, max(0, ms(s.Sub(q.started))))
			delivered = append(delivered, max(0, ms(v.Sub(q.started))))
			accepted = append(accepted, max(0, ms(a.Sub(v))))
			placed = append(placed, max(0, ms(synced[i].Sub(a))))
			if tr, ok := traces[q.key]; ok {
				// Clocks are the machine's; a step may show a little
				// below zero where two watches race.
				enqueued = append(enqueued, ms(tr.event.Sub(v)))
				queued = append(queued, ms(tr.start.Sub(tr.event)))
				beforePatch = append(beforePatch, ms(tr.patchAt.Sub(tr.start)))
				patch = append(patch, ms(tr.patchEnded.Sub(tr.patchAt)))
				patchSeen = append(patchSeen, ms(a.Sub(tr.patchEnded)))
			}
			continue
		}
		after = append(after, lat)
		if afterStart.IsZero() || q.started.Before(afterStart) {
			afterStart = q.started
		}
		afterEnd = later(afterEnd, synced[i])
	}
	res.QuietDuringBacklog = len(during)
	if len(during) == 0 {
		t.Fatalf("no quiet object was created while the backlog drained (it drained in %s): raise -noisy-objects", backlogEnd.Sub(start).Round(time.Second))
	}
	res.Quiet = distribution(calledQuiet[0].started, backlogEnd, during)
	res.QuietCalls = distribution(calledQuiet[0].started, backlogEnd, duringCalls)
	res.QuietSeen = distribution(calledQuiet[0].started, backlogEnd, seen)
	res.QuietDelivered = distribution(calledQuiet[0].started, backlogEnd, delivered)
	res.QuietAccepted = distribution(calledQuiet[0].started, backlogEnd, accepted)
	res.QuietPlaced = distribution(calledQuiet[0].started, backlogEnd, placed)
	if n := len(enqueued); n > 0 {
		if n < len(during) {
			logf("[%s] warning: the agent's log %s traces the finalizer pass of %d of the %d quiet objects; the split is over those", name, e.agent.LogPath, n, len(during))
		}
		res.QuietEnqueued = distribution(calledQuiet[0].started, backlogEnd, enqueued)
		res.QuietQueued = distribution(calledQuiet[0].started, backlogEnd, queued)
		res.QuietBeforePatch = distribution(calledQuiet[0].started, backlogEnd, beforePatch)
		res.QuietPatch = distribution(calledQuiet[0].started, backlogEnd, patch)
		res.QuietPatchSeen = distribution(calledQuiet[0].started, backlogEnd, patchSeen)
	}
	if len(after) > 0 {
		res.QuietAfterBacklog = distribution(afterStart, afterEnd, after)
	}
	res.TotalSeconds = time.Since(started).Seconds()
	if profile != nil {
		<-profile
	}
	logf("[%s] done in %s: noisy %.1f obj/s, quiet p99 %.0f ms (%d of %d quiet objects created during the backlog)", name,
		time.Since(started).Round(time.Second), res.Noisy.Throughput, res.Quiet.P99Ms, res.QuietDuringBacklog, res.QuietObjects)
	return res
}

// phaseTimeoutFor bounds a wait for n objects.
func (e *env) phaseTimeoutFor(n int) time.Duration {
	return 3*time.Minute + time.Duration(n)*100*time.Millisecond
}

func printNoisy(w io.Writer, cfg *config, runs []*noisyResult) {
	_, _ = fmt.Fprintf(w, "\nnoisy neighbour: W=%d, workspace 0 creates %d objects with P=%d; after %s the other %d create %d each at 1/s\n\n",
		cfg.Workspaces, cfg.NoisyObjects, cfg.Parallel, quietDelay, cfg.Workspaces-1, cfg.QuietObjects)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "agent\trep\tquiet create→local during the backlog p50 / p99 / max ms\ttheir create calls p50 / p99 ms\tquiet created during the backlog\tnoisy create→local obj/s\tnoisy p50 / p99 s\tbench's noisy creates obj/s")
	for _, r := range runs {
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s / %s / %s\t%s / %s\t%d of %d\t%s\t%s / %s\t%s\n", r.Agent, r.Rep,
			num(r.Quiet.P50Ms), num(r.Quiet.P99Ms), num(r.Quiet.MaxMs), num(r.QuietCalls.P50Ms), num(r.QuietCalls.P99Ms), r.QuietDuringBacklog, r.QuietObjects,
			num(r.Noisy.Throughput), num(r.Noisy.P50Ms/1000), num(r.Noisy.P99Ms/1000), num(r.NoisyCalls.Throughput))
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintln(w, "\nthe quiet objects' latency in steps (p50 / p99 ms): from the create call's start until a watch of the workspace and one through the virtual workspace (the agent's view) see the object; from then until the agent's finalizer is seen in the workspace; from then until the local copy appears")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "agent\trep\tseen in the workspace\tseen through the virtual workspace\t→ finalizer\t→ local copy")
	for _, r := range runs {
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s / %s\t%s / %s\t%s / %s\t%s / %s\n", r.Agent, r.Rep, num(r.QuietSeen.P50Ms), num(r.QuietSeen.P99Ms),
			num(r.QuietDelivered.P50Ms), num(r.QuietDelivered.P99Ms),
			num(r.QuietAccepted.P50Ms), num(r.QuietAccepted.P99Ms), num(r.QuietPlaced.P50Ms), num(r.QuietPlaced.P99Ms))
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintf(w, "\nCPU seconds by process while the noisy backlog drained (%d cores = %d CPU-s/s):\n", runtime.NumCPU(), runtime.NumCPU())
	for _, r := range runs {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.BacklogCPU)) {
			parts = append(parts, fmt.Sprintf("%s %s", k, num(r.BacklogCPU[k])))
		}
		profile := ""
		if r.KcpCPUProfile != "" {
			profile = "; kcp profile " + r.KcpCPUProfile
		}
		_, _ = fmt.Fprintf(w, "  %s %d, wall %s: %s%s\n", r.Agent, r.Rep, num(r.BacklogSeconds), strings.Join(parts, ", "), profile)
	}
	if !slices.ContainsFunc(runs, func(r *noisyResult) bool { return r.QuietEnqueued != nil }) {
		return
	}
	_, _ = fmt.Fprintln(w, "\n→ finalizer split by the agent's pass traces (p50 / p99 ms): until the agent's queue has the event; then until the pass that writes the finalizer starts (the queue, and any pass before it that did not write it); then until that pass starts the PATCH; the PATCH (with any wait for the agent's client-side rate limit); from its end until the workspace's watch sees the finalizer")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "agent\trep\t→ queue\t→ pass\t→ PATCH\tPATCH\t→ seen")
	for _, r := range runs {
		if r.QuietEnqueued == nil {
			continue
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s / %s\t%s / %s\t%s / %s\t%s / %s\t%s / %s\n", r.Agent, r.Rep,
			num(r.QuietEnqueued.P50Ms), num(r.QuietEnqueued.P99Ms), num(r.QuietQueued.P50Ms), num(r.QuietQueued.P99Ms),
			num(r.QuietBeforePatch.P50Ms), num(r.QuietBeforePatch.P99Ms), num(r.QuietPatch.P50Ms), num(r.QuietPatch.P99Ms),
			num(r.QuietPatchSeen.P50Ms), num(r.QuietPatchSeen.P99Ms))
	}
	_ = tw.Flush()
}
