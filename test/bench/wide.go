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
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// The wide scenario (issue 17 #2): many workspaces with few objects each.
// It measures what each engaged workspace costs the agent, how long an
// agent takes to engage them all, and whether anything per event or per
// pass grows with the number of workspaces.

// wideBindParallel: workspaces created and bound at once (kcp's CPU is the
// bound; more only queue there).
const wideBindParallel = 8

// widePoint is the agent's footprint at one moment.
type widePoint struct {
	RSSMiB      float64 `json:"rssMiB"`
	LiveHeapMiB float64 `json:"liveHeapMiB"`
	Goroutines  float64 `json:"goroutines"`
}

// wideResult is one run of the wide scenario.
type wideResult struct {
	Agent      string `json:"agent"`
	Workspaces int    `json:"workspaces"`
	Objects    int    `json:"objects"`
	// BindSeconds: the bench's creation and binding of every workspace.
	BindSeconds float64 `json:"bindSeconds"`
	// Start: an agent started with every workspace bound (no objects):
	// /readyz, and every workspace engaged.
	ReadySeconds   float64 `json:"readySeconds"`
	EngagedSeconds float64 `json:"engagedSeconds"`
	// Footprint with no workspace, with every workspace engaged (no
	// objects), and with every object synced.
	None    widePoint `json:"none"`
	Engaged widePoint `json:"engaged"`
	Synced  widePoint `json:"synced"`
	// Create: Objects created (P clients) → local copies.
	Create *phaseResult `json:"create"`
	// ReconcilesPerKcpEvent: see runResult.
	ReconcilesPerKcpEvent float64 `json:"reconcilesPerKcpEvent"`
	// Restart with everything in sync: /readyz, every workspace engaged,
	// every object reconciled; its writes (want 0).
	RestartReadySeconds      float64 `json:"restartReadySeconds"`
	RestartEngagedSeconds    float64 `json:"restartEngagedSeconds"`
	RestartReconciledSeconds float64 `json:"restartReconciledSeconds"`
	RestartWrites            float64 `json:"restartWrites"`
	TotalSeconds             float64 `json:"totalSeconds"`
}

// footprint reads the agent's RSS, goroutines and live heap (after a
// forced GC).
func (e *env) footprint() widePoint {
	if _, _, err := getLong(e.t.Context(), "http://"+e.pprofAddress+"/debug/pprof/heap?gc=1", time.Minute); err != nil {
		logf("forced GC failed: %v", err)
	}
	s := e.scrapeAgent()
	return widePoint{
		RSSMiB:      procMemory(e.agent.Pid()).RSS,
		LiveHeapMiB: s.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20),
		Goroutines:  s.sum("go_goroutines", nil),
	}
}

// waitEngaged waits until the agent is engaged with every consumer
// workspace and returns when.
func (e *env) waitEngaged(timeout time.Duration) time.Time {
	framework.WaitFor(e.t, timeout, fmt.Sprintf("the agent to engage %d workspaces", len(e.consumers)), func(context.Context) (bool, error) {
		if e.agent.Exited() {
			e.t.Fatalf("the agent exited with code %d, see %s", e.agent.ExitCode(), e.agent.LogPath)
		}
		return e.scrapeAgent().sum("sync_agent_workspaces_engaged", nil) >= float64(len(e.consumers)), nil
	})
	return time.Now()
}

// waitReady waits for the agent's /readyz and returns when it answered.
func (e *env) waitReady() time.Time {
	framework.WaitFor(e.t, setupTimeout, "the agent's /readyz", func(ctx context.Context) (bool, error) {
		if e.agent.Exited() {
			e.t.Fatalf("the agent exited with code %d, see %s", e.agent.ExitCode(), e.agent.LogPath)
		}
		code, _, err := framework.Get(ctx, "http://"+e.agent.HealthAddress+"/readyz")
		return err == nil && code == 200, nil
	})
	return time.Now()
}

// runWide runs the wide scenario once with one agent.
func runWide(root *benchT, k *framework.Kcp, cfg *config, rep int, au agentUnderTest) *wideResult {
	name := fmt.Sprintf("wide-rep%d-%s", rep, au.Label)
	t := root.child(name)
	defer t.cleanup()
	started := time.Now()
	au.Pprof = true
	wideCfg := *cfg
	wideCfg.Objects = cfg.Workspaces * cfg.WideObjects
	e := &env{t: t, cfg: &wideCfg, k: k, au: au, dir: framework.ArtifactsDir(t), onlyLocalWatch: true}
	e.res = &runResult{Phases: map[string]*phaseResult{}}
	res := &wideResult{Agent: au.Label, Workspaces: cfg.Workspaces, Objects: wideCfg.Objects}

	logf("[%s] setting up the service cluster and the organisation workspace", name)
	e.setupKcpAndService(fmt.Sprintf("bench-wide-%d-%s", rep, au.Label))
	e.startAgent()
	e.waitExported()
	e.settle()
	res.None = e.footprint()
	e.agent.Stop(agentStopGrace)

	logf("[%s] creating and binding %d workspaces (%d at a time), the agent stopped", name, cfg.Workspaces, wideBindParallel)
	bindStart := time.Now()
	e.bindConsumersParallel(wideBindParallel)
	res.BindSeconds = time.Since(bindStart).Seconds()
	logf("[%s] %d workspaces bound in %s", name, cfg.Workspaces, time.Since(bindStart).Round(time.Second))
	e.rec = newRecorder(e)

	agentStart := time.Now()
	e.startAgent()
	res.ReadySeconds = e.waitReady().Sub(agentStart).Seconds()
	res.EngagedSeconds = e.waitEngaged(setupTimeout + time.Duration(cfg.Workspaces)*100*time.Millisecond).Sub(agentStart).Seconds()
	logf("[%s] agent ready after %.1f s, %d workspaces engaged after %.1f s", name, res.ReadySeconds, cfg.Workspaces, res.EngagedSeconds)
	e.settle()
	res.Engaged = e.footprint()

	logf("[%s] creating %d objects (%d per workspace, P=%d)", name, wideCfg.Objects, cfg.WideObjects, cfg.Parallel)
	start, done, _ := e.parallel(wideCfg.Objects, func(ctx context.Context, i int) error {
		_, err := e.kcpDyn[e.workspaceOf(i)].Resource(kcpGVR).Namespace(kcpNamespace).Create(ctx, newThing(kcpGVR, kcpNamespace, objectName(i)), metav1.CreateOptions{})
		return err
	})
	synced := e.waitAll("every local copy", func(i int) (time.Time, bool) { return e.rec.synced(e.key(i)) })
	res.Create = newPhase(start, done, synced)
	e.settle()
	res.Synced = e.footprint()

	logf("[%s] one kcp event per object that needs no write", name)
	e.phaseTouch()
	res.ReconcilesPerKcpEvent = e.res.ReconcilesPerKcpEvent

	logf("[%s] restart with everything in sync", name)
	e.agent.Stop(agentStopGrace)
	agentStart = time.Now()
	e.startAgent()
	res.RestartReadySeconds = e.waitReady().Sub(agentStart).Seconds()
	res.RestartEngagedSeconds = e.waitEngaged(setupTimeout + time.Duration(cfg.Workspaces)*100*time.Millisecond).Sub(agentStart).Seconds()
	framework.WaitFor(t, setupTimeout, "the restarted agent to reconcile every object", func(context.Context) (bool, error) {
		return e.scrapeAgent().maxBy("controller_runtime_reconcile_total", "controller") >= float64(wideCfg.Objects), nil
	})
	res.RestartReconciledSeconds = time.Since(agentStart).Seconds()
	e.settle()
	res.RestartWrites = e.writes()
	res.TotalSeconds = time.Since(started).Seconds()
	logf("[%s] done in %s", name, time.Since(started).Round(time.Second))
	return res
}

// bindConsumersParallel is bindConsumers with n workspaces at a time.
func (e *env) bindConsumersParallel(n int) {
	e.bindParallel = n
	e.bindConsumers()
}

func perWorkspace(a, b float64, w int) string { return num((b - a) / float64(w)) }

func printWide(w io.Writer, runs []*wideResult) {
	for _, r := range runs {
		_, _ = fmt.Fprintf(w, "\nwide (%s): W=%d workspaces, %d objects (%d per workspace)\n\n", r.Agent, r.Workspaces, r.Objects, r.Objects/r.Workspaces)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row := func(k, v string) { _, _ = fmt.Fprintf(tw, "%s\t%s\n", k, v) }
		row("bench: create and bind every workspace", fmt.Sprintf("%s s", num(r.BindSeconds)))
		row("agent start → /readyz", fmt.Sprintf("%s s", num(r.ReadySeconds)))
		row("agent start → every workspace engaged", fmt.Sprintf("%s s", num(r.EngagedSeconds)))
		row("RSS / live heap / goroutines: none engaged", fmt.Sprintf("%s MiB / %s MiB / %s", num(r.None.RSSMiB), num(r.None.LiveHeapMiB), num(r.None.Goroutines)))
		row("RSS / live heap / goroutines: every workspace engaged", fmt.Sprintf("%s MiB / %s MiB / %s", num(r.Engaged.RSSMiB), num(r.Engaged.LiveHeapMiB), num(r.Engaged.Goroutines)))
		row("per engaged workspace: RSS / live heap / goroutines", fmt.Sprintf("%s KiB / %s KiB / %s",
			perWorkspace(r.None.RSSMiB*1024, r.Engaged.RSSMiB*1024, r.Workspaces), perWorkspace(r.None.LiveHeapMiB*1024, r.Engaged.LiveHeapMiB*1024, r.Workspaces),
			perWorkspace(r.None.Goroutines, r.Engaged.Goroutines, r.Workspaces)))
		row("create → local: throughput", fmt.Sprintf("%s obj/s (%s s for all)", num(r.Create.Throughput), num(r.Create.Seconds)))
		row("create → local: p50 / p99", fmt.Sprintf("%s / %s ms", num(r.Create.P50Ms), num(r.Create.P99Ms)))
		row("RSS / live heap / goroutines: every object synced", fmt.Sprintf("%s MiB / %s MiB / %s", num(r.Synced.RSSMiB), num(r.Synced.LiveHeapMiB), num(r.Synced.Goroutines)))
		row("reconciles per kcp event", num(r.ReconcilesPerKcpEvent))
		row("restart in sync: /readyz, every workspace engaged, every object reconciled", fmt.Sprintf("%s / %s / %s s", num(r.RestartReadySeconds), num(r.RestartEngagedSeconds), num(r.RestartReconciledSeconds)))
		row("restart in sync: writes", num(r.RestartWrites))
		_ = tw.Flush()
	}
}
