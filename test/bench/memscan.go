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

// scanPoint is the agent's memory once a number of objects is in sync.
type scanPoint struct {
	Objects      int     `json:"objects"`
	RSSMiB       float64 `json:"rssMiB"`
	PeakRSSMiB   float64 `json:"peakRSSMiB"`
	HeapInuseMiB float64 `json:"heapInuseMiB"`
	CPUSeconds   float64 `json:"cpuSeconds"`
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
	e := &env{t: t, cfg: &scanCfg, k: k, au: agentUnderTest{Label: labelOurs, Binary: cfg.Agent}, dir: framework.ArtifactsDir(t)}
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
		return scanPoint{
			Objects: objects, RSSMiB: mem.RSS, PeakRSSMiB: mem.HWM, Seconds: secs,
			HeapInuseMiB: e.scrapeAgent().sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20),
			CPUSeconds:   procCPU(e.agent.Pid()),
		}
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
		framework.WaitFor(t, e.phaseTimeout(), fmt.Sprintf("%d objects in sync", target), func(context.Context) (bool, error) {
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
	return points
}

func printScan(w io.Writer, cfg *config, points []scanPoint) {
	fmt.Fprintf(w, "\nmemory scan: W=%d workspaces, P=%d clients, related Secret: %v\n\n", cfg.Workspaces, cfg.Parallel, cfg.Related)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "objects\tRSS MiB\tpeak RSS MiB\theap in use MiB\tRSS per 1k objects (vs 0)\theap per 1k objects (vs 0)\tsync s")
	base := points[0]
	for _, p := range points {
		perRSS, perHeap := "", ""
		if p.Objects > 0 {
			k := float64(p.Objects) / 1000
			perRSS, perHeap = num((p.RSSMiB-base.RSSMiB)/k), num((p.HeapInuseMiB-base.HeapInuseMiB)/k)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Objects, num(p.RSSMiB), num(p.PeakRSSMiB), num(p.HeapInuseMiB), perRSS, perHeap, num(p.Seconds))
	}
	_ = tw.Flush()
}
