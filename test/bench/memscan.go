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
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// scanStepTimeout bounds one step of the scan; the agent slows down as
// objects accumulate, so it is generous.
const scanStepTimeout = 30 * time.Minute

// scanPoint is the agent's memory once a number of objects is in sync.
type scanPoint struct {
	Objects      int     `json:"objects"`
	RSSMiB       float64 `json:"rssMiB"`
	PeakRSSMiB   float64 `json:"peakRSSMiB"`
	HeapInuseMiB float64 `json:"heapInuseMiB"`
	// LiveHeapMiB is the heap in use right after a forced GC
	// (/debug/pprof/heap?gc=1): what the agent really keeps.
	LiveHeapMiB float64 `json:"liveHeapMiB"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	// Seconds is the time to create and sync this step's new objects.
	Seconds float64 `json:"seconds"`
}

// memoryScan runs our agent once and grows its load step by step (objects
// spread over the workspaces as in the scenario), reading its memory after
// each step has synced and settled.
func memoryScan(root *benchT, k *framework.Kcp, cfg *config) []scanPoint {
	t := root.child("memory-scan")
	defer t.cleanup()
	scanCfg := *cfg
	scanCfg.Objects = cfg.ScanObjects[len(cfg.ScanObjects)-1]
	e := &env{t: t, cfg: &scanCfg, k: k, au: agentUnderTest{Label: labelOurs, Binary: cfg.Agent, Pprof: true}, dir: framework.ArtifactsDir(t)}
	e.res = &runResult{Phases: map[string]*phaseResult{}}
	logf("[memory-scan] setting up %d consumer workspaces", cfg.Workspaces)
	e.setupKcpAndService("bench-memory-scan")
	e.startAgent()
	e.waitExported()
	e.bindConsumers()
	e.rec = newRecorder(e)
	e.warmup()

	point := func(objects int, secs float64) scanPoint {
		mem := procMemory(e.agent.Pid())
		p := scanPoint{
			Objects: objects, RSSMiB: mem.RSS, PeakRSSMiB: mem.HWM, Seconds: secs,
			HeapInuseMiB: e.scrapeAgent().sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20),
			CPUSeconds:   procCPU(e.agent.Pid()),
		}
		// A heap profile with gc=1 runs a full GC first.
		if _, _, err := getLong(t.Context(), "http://"+e.pprofAddress+"/debug/pprof/heap?gc=1", time.Minute); err != nil {
			logf("[memory-scan] forced GC failed: %v", err)
		}
		p.LiveHeapMiB = e.scrapeAgent().sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
		return p
	}
	points := []scanPoint{point(0, 0)}
	have := 0
	for _, target := range cfg.ScanObjects {
		if target <= have {
			continue
		}
		started := time.Now()
		logf("[memory-scan] creating objects %d..%d", have, target-1)
		from := have
		e.parallel(target-from, func(ctx context.Context, j int) error {
			i := from + j
			c := e.kcpDyn[e.workspaceOf(i)]
			if cfg.Related {
				if err := createSecret(ctx, c, objectName(i)); err != nil {
					return err
				}
			}
			_, err := c.Resource(kcpGVR).Namespace(kcpNamespace).Create(ctx, newThing(kcpGVR, kcpNamespace, objectName(i)), metav1.CreateOptions{})
			return err
		})
		framework.WaitFor(t, scanStepTimeout, fmt.Sprintf("%d objects in sync", target), func(context.Context) (bool, error) {
			for i := from; i < target; i++ {
				if _, ok := e.rec.synced(e.key(i)); !ok {
					return false, nil
				}
			}
			return true, nil
		})
		secs := time.Since(started).Seconds()
		e.settle()
		have = target
		points = append(points, point(target, secs))
		p := points[len(points)-1]
		logf("[memory-scan] %d objects: RSS %.0f MiB, heap in use %.0f MiB (%.0f s)", target, p.RSSMiB, p.HeapInuseMiB, secs)
	}
	// Keep a heap profile of the largest step (go tool pprof -sample_index=inuse_space).
	if code, body, err := getLong(t.Context(), "http://"+e.pprofAddress+"/debug/pprof/heap", time.Minute); err == nil && code == 200 {
		path := filepath.Join(e.dir, "heap.pprof")
		if err := os.WriteFile(path, body, 0o644); err == nil {
			logf("[memory-scan] heap profile written to %s", path)
		}
	}
	return points
}

func printScan(w io.Writer, cfg *config, points []scanPoint) {
	_, _ = fmt.Fprintf(w, "\nmemory scan: W=%d workspaces, P=%d clients, related Secret: %v\n\n", cfg.Workspaces, cfg.Parallel, cfg.Related)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "objects\tRSS MiB\tpeak RSS MiB\theap in use MiB\tlive heap MiB (after GC)\tRSS per 1k (vs 0)\tlive heap per 1k (vs 0)\tagent CPU ms/object (step)\tsync s (step)")
	base := points[0]
	for i, p := range points {
		perRSS, perHeap, cpu := "", "", ""
		if p.Objects > 0 {
			k := float64(p.Objects) / 1000
			perRSS, perHeap = num((p.RSSMiB-base.RSSMiB)/k), num((p.LiveHeapMiB-base.LiveHeapMiB)/k)
			prev := points[i-1]
			cpu = num((p.CPUSeconds - prev.CPUSeconds) * 1000 / float64(p.Objects-prev.Objects))
		}
		_, _ = fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Objects, num(p.RSSMiB), num(p.PeakRSSMiB), num(p.HeapInuseMiB), num(p.LiveHeapMiB),
			perRSS, perHeap, cpu, num(p.Seconds))
	}
	_ = tw.Flush()
}
