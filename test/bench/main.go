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

// Command bench measures the agent on the real test bed (docs/performance.md):
// one kcp for the whole run, and per repetition a fresh organisation
// workspace with an APIExport, W bound consumer workspaces, a fresh service
// cluster (kube-apiserver + etcd) and the agent as a subprocess. It creates N
// objects with P parallel clients and measures create → local copy, status →
// kcp, spec update → local copy, an in-sync restart and delete → finalized,
// the agent's API requests, RSS and CPU, and the same writes done directly
// against the service kube-apiserver as the physical reference.
//
// With BASELINE_AGENT (or -baseline) the same scenario runs with that binary
// too; runs alternate (ours, baseline, ours, ...) -count times. The table
// goes to stdout, everything to $ARTIFACTS/bench/result.json.
//
// -memory-scan instead grows one agent's load to 1k, 5k and 10k objects and
// reports its memory after each step.
//
// Run it with `make bench`, which builds the test bed and the agent first.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// The scenarios of -scenario.
const (
	scenarioDefault = "default"
	scenarioNoisy   = "noisy"
	scenarioWide    = "wide"
	// scenarioPartitions: one agent against two partitioned agents on a
	// kcp of two shards (partitions.go).
	scenarioPartitions = "partitions"
)

// config is the scenario.
type config struct {
	Scenario string `json:"scenario"`
	// NoisyObjects and QuietObjects: the noisy-neighbour scenario's
	// objects of workspace 0 and of each other workspace.
	NoisyObjects int `json:"noisyObjects,omitempty"`
	QuietObjects int `json:"quietObjects,omitempty"`
	// WideObjects: objects per workspace of the wide scenario.
	WideObjects int `json:"wideObjects,omitempty"`
	// EventLevel, SyncWorkers and PatrolInterval are passed to our agent
	// (not to the baseline) when set.
	EventLevel     string `json:"eventLevel,omitempty"`
	SyncWorkers    int    `json:"syncWorkers,omitempty"`
	PatrolInterval string `json:"patrolInterval,omitempty"`

	Workspaces int  `json:"workspaces"`
	Objects    int  `json:"objects"`
	Parallel   int  `json:"parallel"`
	Related    bool `json:"related"`
	// Unrelated Secrets are created in the service cluster before the
	// agent starts: objects no PublishedResource names, which the agent
	// must not hold in memory.
	Unrelated int `json:"unrelated,omitempty"`
	Count     int `json:"count"`

	Agent    string `json:"agent"`
	Baseline string `json:"baseline,omitempty"`

	// ProfileSeconds > 0 captures a CPU profile of our agent for that long
	// from the start of the create phase (--pprof-address).
	ProfileSeconds int `json:"profileSeconds,omitempty"`
	// KcpProfileSeconds > 0 does the same for kcp (--profiler-address):
	// what kcp spends its CPU on while the agent syncs.
	KcpProfileSeconds int `json:"kcpProfileSeconds,omitempty"`

	MemoryScan  bool  `json:"memoryScan,omitempty"`
	ScanObjects []int `json:"scanObjects,omitempty"`

	out string
	// kcpProfiler is kcp's --profiler-address (KcpProfileSeconds > 0).
	kcpProfiler string
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envBool(name string, def bool) bool {
	if v, err := strconv.ParseBool(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func main() {
	cfg := config{}
	flag.StringVar(&cfg.Scenario, "scenario", envString("SCENARIO", scenarioDefault), "default (the phases), noisy (one workspace's backlog against 1/s in the others), wide (many workspaces, few objects each; -w defaults to 1000) or partitions (one agent against two partitioned agents on a kcp of two shards) ($SCENARIO)")
	flag.IntVar(&cfg.NoisyObjects, "noisy-objects", envInt("NOISY_OBJECTS", 5000), "noisy: objects the noisy workspace creates ($NOISY_OBJECTS)")
	flag.IntVar(&cfg.QuietObjects, "quiet-objects", envInt("QUIET_OBJECTS", 10), "noisy: objects each other workspace creates at 1/s ($QUIET_OBJECTS)")
	flag.IntVar(&cfg.WideObjects, "wide-objects", envInt("WIDE_OBJECTS", 5), "wide: objects per workspace ($WIDE_OBJECTS)")
	flag.StringVar(&cfg.EventLevel, "event-level", os.Getenv("EVENT_LEVEL"), "--event-level of our agent (normal or warning; empty: its default) ($EVENT_LEVEL)")
	flag.IntVar(&cfg.SyncWorkers, "sync-workers", envInt("SYNC_WORKERS", 0), "--sync-workers of our agent (0: its default) ($SYNC_WORKERS)")
	flag.StringVar(&cfg.PatrolInterval, "patrol-interval", os.Getenv("PATROL_INTERVAL"), "--patrol-interval of our agent (a duration; 0 turns the patrol off; empty: its default) ($PATROL_INTERVAL)")
	flag.IntVar(&cfg.Workspaces, "w", envInt("W", 0), "consumer workspaces (default 10; 1000 in the wide scenario) ($W)")
	flag.IntVar(&cfg.Objects, "n", envInt("N", 2000), "objects in total, spread round-robin over the workspaces ($N)")
	flag.IntVar(&cfg.Parallel, "p", envInt("P", 8), "parallel clients of the bench ($P)")
	flag.BoolVar(&cfg.Related, "related", envBool("RELATED", false), "one related Secret per object, created in kcp and synced to the service cluster ($RELATED)")
	flag.IntVar(&cfg.Unrelated, "unrelated", envInt("UNRELATED", 0), "Secrets (1 KiB each) created in the service cluster before the agent starts, which no PublishedResource names ($UNRELATED)")
	flag.IntVar(&cfg.Count, "count", envInt("COUNT", 1), "repetitions per agent; runs alternate with the baseline ($COUNT)")
	flag.StringVar(&cfg.Baseline, "baseline", os.Getenv("BASELINE_AGENT"), "absolute path of another agent binary to run the same scenario with ($BASELINE_AGENT)")
	flag.IntVar(&cfg.ProfileSeconds, "cpu-profile", envInt("CPU_PROFILE", 0), "capture a CPU profile of our agent for this many seconds from the start of the create phase ($CPU_PROFILE; 0: off)")
	flag.IntVar(&cfg.KcpProfileSeconds, "kcp-cpu-profile", envInt("KCP_CPU_PROFILE", 0), "capture a CPU profile of kcp for this many seconds from the start of the create phase (noisy scenario: of the noisy workspace's creates), in every agent's run ($KCP_CPU_PROFILE; 0: off)")
	flag.BoolVar(&cfg.MemoryScan, "memory-scan", envBool("MEMORY_SCAN", false), "measure the agent's memory after syncing 1k, 5k and 10k objects instead of the scenario ($MEMORY_SCAN)")
	scan := flag.String("scan", envString("SCAN", "1000,5000,10000"), "object counts of -memory-scan, ascending ($SCAN)")
	flag.StringVar(&cfg.out, "out", "", "JSON result file (default $ARTIFACTS/bench/result.json)")
	flag.Parse()

	for _, f := range strings.Split(*scan, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(cfg.ScanObjects) > 0 && n <= cfg.ScanObjects[len(cfg.ScanObjects)-1]) {
			fmt.Fprintln(os.Stderr, "bench: -scan must be ascending positive numbers, e.g. 1000,5000,10000")
			os.Exit(2)
		}
		cfg.ScanObjects = append(cfg.ScanObjects, n)
	}
	if cfg.Workspaces == 0 {
		cfg.Workspaces = 10
		if cfg.Scenario == scenarioWide {
			cfg.Workspaces = 1000
		}
	}
	switch {
	case cfg.Scenario != scenarioDefault && cfg.Scenario != scenarioNoisy && cfg.Scenario != scenarioWide && cfg.Scenario != scenarioPartitions:
		fmt.Fprintln(os.Stderr, "bench: -scenario must be default, noisy, wide or partitions")
		os.Exit(2)
	case cfg.Scenario == scenarioPartitions && (cfg.Baseline != "" || cfg.KcpProfileSeconds > 0 || cfg.Workspaces < 2):
		fmt.Fprintln(os.Stderr, "bench: the partitions scenario compares our agent alone with two of it (no -baseline, no -kcp-cpu-profile) and needs -w of at least 2")
		os.Exit(2)
	case cfg.Scenario == scenarioNoisy && (cfg.Workspaces < 2 || cfg.NoisyObjects < 1 || cfg.QuietObjects < 1):
		fmt.Fprintln(os.Stderr, "bench: the noisy scenario needs -w of at least 2 and positive -noisy-objects and -quiet-objects")
		os.Exit(2)
	case cfg.Scenario == scenarioWide && cfg.WideObjects < 1:
		fmt.Fprintln(os.Stderr, "bench: -wide-objects must be positive")
		os.Exit(2)
	case cfg.Scenario == scenarioWide && cfg.Baseline != "":
		// It reads metrics and pprof only our agent has.
		fmt.Fprintln(os.Stderr, "bench: the wide scenario measures our agent alone; -baseline is not supported")
		os.Exit(2)
	case cfg.Scenario != scenarioDefault && (cfg.Related || cfg.Unrelated > 0 || cfg.MemoryScan):
		fmt.Fprintln(os.Stderr, "bench: -related, -unrelated and -memory-scan belong to the default scenario")
		os.Exit(2)
	case (cfg.Scenario != scenarioDefault || cfg.MemoryScan) && cfg.ProfileSeconds > 0,
		(cfg.Scenario == scenarioWide || cfg.MemoryScan) && cfg.KcpProfileSeconds > 0:
		// The profiles are taken in the default scenario's create phase
		// and, kcp's, from the noisy scenario's first create.
		fmt.Fprintln(os.Stderr, "bench: -cpu-profile belongs to the default scenario, -kcp-cpu-profile to the default and noisy ones, neither with -memory-scan")
		os.Exit(2)
	case cfg.EventLevel != "" && cfg.EventLevel != "normal" && cfg.EventLevel != "warning":
		fmt.Fprintln(os.Stderr, "bench: -event-level must be normal or warning")
		os.Exit(2)
	}
	if cfg.Workspaces < 1 || cfg.Objects < 1 || cfg.Parallel < 1 || cfg.Count < 1 || cfg.Unrelated < 0 {
		fmt.Fprintln(os.Stderr, "bench: -w, -n, -p and -count must be positive, -unrelated not negative")
		os.Exit(2)
	}
	if cfg.Baseline != "" && !filepath.IsAbs(cfg.Baseline) {
		fmt.Fprintln(os.Stderr, "bench: BASELINE_AGENT must be an absolute path")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &benchT{ctx: ctx}
	root.root = root
	code := 0
	func() {
		defer root.cleanup()
		code = run(root, &cfg)
	}()
	os.Exit(code)
}

func run(root *benchT, cfg *config) int {
	base := os.Getenv(framework.EnvArtifacts)
	if base == "" {
		base = "_artifacts"
	}
	base, err := filepath.Abs(filepath.Join(base, "bench"))
	root.check(err)
	root.check(os.MkdirAll(base, 0o755))
	root.check(os.Setenv(framework.EnvArtifacts, base))
	if cfg.out == "" {
		cfg.out = filepath.Join(base, "result.json")
		if cfg.Scenario != scenarioDefault {
			cfg.out = filepath.Join(base, cfg.Scenario+".json")
		}
		if cfg.MemoryScan {
			cfg.out = filepath.Join(base, "memory-scan.json")
		}
	}
	framework.DiscardControllerRuntimeLogs()

	cfg.Agent, err = framework.RequireEnv(framework.EnvAgentBin)
	root.check(err)
	if cfg.Baseline != "" {
		_, err := os.Stat(cfg.Baseline)
		root.check(err)
	}
	kcpBin, err := framework.RequireEnv(framework.EnvKcpBin)
	root.check(err)

	dir, err := os.MkdirTemp("", "api-syncagent-bench-kcp-")
	root.check(err)
	root.Cleanup(func() { _ = os.RemoveAll(dir) })
	started := time.Now()
	logf("starting kcp (127.0.0.1 only, log in %s)", base)
	var kcpArgs []string
	if cfg.KcpProfileSeconds > 0 {
		port, err := framework.FreePort()
		root.check(err)
		cfg.kcpProfiler = fmt.Sprintf("127.0.0.1:%d", port)
		kcpArgs = append(kcpArgs, "--profiler-address="+cfg.kcpProfiler)
	}
	if cfg.Scenario == scenarioPartitions {
		k := framework.StartShardedKcp(root)
		labelShards(root, k)
		logf("kcp of two shards ready after %s", time.Since(started).Round(time.Second))
		var runs []*partitionsResult
		for rep := range cfg.Count {
			for _, mode := range []string{modeOneAgent, modeTwoPartitions} {
				runs = append(runs, runPartitions(root, k, cfg, rep+1, mode))
			}
		}
		finish(root, cfg, started, runs, func(w io.Writer) { printPartitions(w, cfg, runs) })
		return 0
	}
	k, err := framework.StartKcp(root.ctx, kcpBin, dir, base, kcpArgs...)
	root.check(err)
	root.Cleanup(k.Stop)
	logf("kcp ready after %s", time.Since(started).Round(time.Second))

	if cfg.MemoryScan {
		scan := memoryScan(root, k, cfg)
		finish(root, cfg, started, scan, func(w io.Writer) { printScan(w, cfg, scan) })
		return 0
	}

	switch cfg.Scenario {
	case scenarioNoisy:
		runs := repeat(cfg, func(rep int, a agentUnderTest) *noisyResult { return runNoisy(root, k, cfg, rep, a) })
		finish(root, cfg, started, runs, func(w io.Writer) { printNoisy(w, cfg, runs) })
		return 0
	case scenarioWide:
		runs := repeat(cfg, func(rep int, a agentUnderTest) *wideResult { return runWide(root, k, cfg, rep, a) })
		finish(root, cfg, started, runs, func(w io.Writer) { printWide(w, runs) })
		return 0
	}

	runs := repeat(cfg, func(rep int, a agentUnderTest) *runResult { return runScenario(root, k, cfg, rep, a) })
	sum := summarize(cfg, runs)
	var table bytes.Buffer
	printTable(&table, cfg, sum)
	printRequests(&table, runs)
	report(root, cfg, table.Bytes())
	writeJSON(root, cfg.out, struct {
		Config  config       `json:"config"`
		Summary []summaryRow `json:"summary"`
		Runs    []*runResult `json:"runs"`
	}{*cfg, sum, runs})
	logf("result written to %s (%s in total)", cfg.out, time.Since(started).Round(time.Second))
	return 0
}

// finish prints a scenario's table and writes its runs (the memory scan's
// points) as JSON.
func finish[R any](root *benchT, cfg *config, started time.Time, runs []R, print func(io.Writer)) {
	var table bytes.Buffer
	print(&table)
	report(root, cfg, table.Bytes())
	writeJSON(root, cfg.out, struct {
		Config config `json:"config"`
		Runs   []R    `json:"runs"`
	}{*cfg, runs})
	logf("result written to %s (%s in total)", cfg.out, time.Since(started).Round(time.Second))
}

// repeat runs a scenario -count times with our agent and, alternating,
// with the baseline.
func repeat[R any](cfg *config, run func(rep int, a agentUnderTest) R) []R {
	var runs []R
	for rep := range cfg.Count {
		agents := []agentUnderTest{{Label: labelOurs, Binary: cfg.Agent, Profile: cfg.ProfileSeconds}}
		if cfg.Baseline != "" {
			b := agentUnderTest{Label: labelBaseline, Binary: cfg.Baseline}
			// Alternate the order so that neither agent always runs on a
			// kcp that has seen more workspaces come and go.
			if rep%2 == 0 {
				agents = append(agents, b)
			} else {
				agents = append([]agentUnderTest{b}, agents...)
			}
		}
		for _, a := range agents {
			runs = append(runs, run(rep+1, a))
		}
	}
	return runs
}

// report prints the table and keeps it next to the JSON file (.txt).
func report(t *benchT, cfg *config, table []byte) {
	_, _ = os.Stdout.Write(table)
	t.check(os.WriteFile(strings.TrimSuffix(cfg.out, filepath.Ext(cfg.out))+".txt", table, 0o644))
}

func writeJSON(t *benchT, path string, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	t.check(err)
	t.check(os.WriteFile(path, append(data, '\n'), 0o644))
}

// logf prints a progress line to stderr (the table goes to stdout).
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// benchT implements framework.T for a program: Fatal runs every cleanup
// (the current repetition's and the root's) and exits.
type benchT struct {
	ctx      context.Context
	name     string
	root     *benchT
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// child returns a T for one repetition; its cleanups run at its end.
func (b *benchT) child(name string) *benchT {
	return &benchT{ctx: b.ctx, name: name, root: b.root}
}

func (b *benchT) Helper()                  {}
func (b *benchT) Name() string             { return b.name }
func (b *benchT) Context() context.Context { return b.ctx }
func (b *benchT) Cleanup(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cleanups = append(b.cleanups, f)
}
func (b *benchT) Logf(f string, a ...any) { logf(f, a...) }
func (b *benchT) Fatal(a ...any)          { b.Fatalf("%s", fmt.Sprint(a...)) }
func (b *benchT) Failed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed
}
func (b *benchT) Fatalf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench failed: "+f+"\n", a...)
	for _, t := range []*benchT{b, b.root} {
		t.mu.Lock()
		t.failed = true
		t.mu.Unlock()
	}
	b.cleanup()
	if b.root != b {
		b.root.cleanup()
	}
	os.Exit(1)
}

func (b *benchT) check(err error) {
	if err != nil {
		b.Fatal(err)
	}
}

func (b *benchT) cleanup() {
	b.mu.Lock()
	cleanups := b.cleanups
	b.cleanups = nil
	b.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
}
