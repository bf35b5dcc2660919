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
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// phaseResult is the throughput and latency distribution of one phase.
type phaseResult struct {
	Objects int     `json:"objects"`
	Seconds float64 `json:"seconds"`
	// Throughput is objects per second from the first call until the last
	// object completed.
	Throughput float64 `json:"throughput"`
	P50Ms      float64 `json:"p50Ms"`
	P95Ms      float64 `json:"p95Ms"`
	P99Ms      float64 `json:"p99Ms"`
	MaxMs      float64 `json:"maxMs"`
}

// restartResult is figure 5.
type restartResult struct {
	// ReadySeconds: from the new process's start to /readyz 200.
	ReadySeconds float64 `json:"readySeconds"`
	// ReconciledSeconds: until the busiest controller reconciled N times.
	ReconciledSeconds float64 `json:"reconciledSeconds"`
	Writes            float64 `json:"writes"`
	// Requests by side and HTTP method since the start.
	Requests map[string]map[string]float64 `json:"requests"`
}

// runResult is everything one repetition with one agent measured.
type runResult struct {
	Agent  string `json:"agent"`
	Binary string `json:"binary"`
	Rep    int    `json:"rep"`

	// Phases: create, status, update, delete (sync), kcp-create-calls (the
	// bench's create calls into kcp), direct-* (physical reference).
	Phases  map[string]*phaseResult `json:"phases"`
	Restart restartResult           `json:"restart"`
	// ReconcilesPerKcpEvent: the sync controller's reconciles per kcp event
	// that needs no write (phase 3b).
	ReconcilesPerKcpEvent float64 `json:"reconcilesPerKcpEvent"`
	// Requests are the agent's requests per object by phase, side and
	// HTTP method (rest_client_requests_total; GET includes lists and watches).
	Requests map[string]map[string]map[string]float64 `json:"requestsPerObject"`
	// ServerRequests are the servers' requests per object in the create
	// phase by side and "VERB resource" (apiserver_request_total).
	ServerRequests map[string]map[string]float64 `json:"serverRequestsPerObjectCreate"`

	PeakRSSMiB            float64            `json:"peakRSSMiB"`
	CPUSeconds            float64            `json:"cpuSeconds"`
	CPUSecondsByPhase     map[string]float64 `json:"cpuSecondsByPhase"`
	RSSAfterSyncMiB       float64            `json:"rssAfterSyncMiB"`
	HeapInuseAfterSyncMiB float64            `json:"heapInuseAfterSyncMiB"`
	CPUProfile            string             `json:"cpuProfile,omitempty"`
	KcpCPUProfile         string             `json:"kcpCPUProfile,omitempty"`
	// ProcessCPU is the CPU seconds of every process of the test bed by
	// phase (from the phase's start until the agent settled, PhaseWallSeconds).
	ProcessCPU       map[string]map[string]float64 `json:"processCPUSeconds"`
	PhaseWallSeconds map[string]float64            `json:"phaseWallSeconds"`

	SetupSeconds float64 `json:"setupSeconds"`
	TotalSeconds float64 `json:"totalSeconds"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func distribution(start time.Time, end time.Time, latencies []float64) *phaseResult {
	slices.Sort(latencies)
	secs := end.Sub(start).Seconds()
	return &phaseResult{
		Objects: len(latencies), Seconds: secs, Throughput: float64(len(latencies)) / secs,
		P50Ms: percentile(latencies, 50), P95Ms: percentile(latencies, 95), P99Ms: percentile(latencies, 99), MaxMs: percentile(latencies, 100),
	}
}

// newPhase: latency from each call's return to the observed completion;
// throughput until the last completion.
func newPhase(start time.Time, returned, completed []time.Time) *phaseResult {
	lat := make([]float64, len(completed))
	end := start
	for i := range completed {
		// The watch may see the result before the call returned.
		lat[i] = max(0, ms(completed[i].Sub(returned[i])))
		end = later(end, completed[i])
	}
	return distribution(start, end, lat)
}

// callPhase: latency is the call's duration.
func callPhase(start time.Time, returned []time.Time, calls []time.Duration) *phaseResult {
	lat := make([]float64, len(calls))
	end := start
	for i := range calls {
		lat[i] = ms(calls[i])
		end = later(end, returned[i])
	}
	return distribution(start, end, lat)
}

// metric is one row of the table.
type metric struct {
	name, unit string
	get        func(*runResult) (float64, bool)
	// direct is the physical counterpart (optional).
	direct func(*runResult) (float64, bool)
}

func phaseValue(phase string, f func(*phaseResult) float64) func(*runResult) (float64, bool) {
	return func(r *runResult) (float64, bool) {
		p, ok := r.Phases[phase]
		if !ok {
			return 0, false
		}
		return f(p), true
	}
}

func throughput(p *phaseResult) float64 { return p.Throughput }
func p50(p *phaseResult) float64        { return p.P50Ms }
func p95(p *phaseResult) float64        { return p.P95Ms }
func p99(p *phaseResult) float64        { return p.P99Ms }

func requestsPerObject(phase, side string, write bool) func(*runResult) (float64, bool) {
	return func(r *runResult) (float64, bool) {
		var sum float64
		for m, v := range r.Requests[phase][side] {
			if isWrite(m) == write {
				sum += v
			}
		}
		return sum, r.Requests[phase] != nil
	}
}

func metrics(cfg *config) []metric {
	var out []metric
	syncPhases := []struct{ phase, title, direct string }{
		{"create", "1 create → local copy", "direct-create"},
		{"status", "2 local status → kcp", "direct-status"},
		{"update", "3 kcp spec update → local", "direct-update"},
		{"delete", "4 delete → gone + finalized", "direct-delete"},
	}
	for _, s := range syncPhases {
		out = append(out,
			metric{s.title + ": throughput", "obj/s", phaseValue(s.phase, throughput), phaseValue(s.direct, throughput)},
			metric{s.title + ": p50", "ms", phaseValue(s.phase, p50), phaseValue(s.direct, p50)},
			metric{s.title + ": p95", "ms", phaseValue(s.phase, p95), phaseValue(s.direct, p95)},
			metric{s.title + ": p99", "ms", phaseValue(s.phase, p99), phaseValue(s.direct, p99)},
		)
		if s.phase == "create" {
			out = append(out,
				metric{"  bench's create calls into kcp: throughput", "obj/s", phaseValue("kcp-create-calls", throughput), phaseValue(s.direct, throughput)},
				metric{"  bench's create calls into kcp: p50", "ms", phaseValue("kcp-create-calls", p50), phaseValue(s.direct, p50)},
			)
		}
	}
	out = append(out,
		metric{name: "5 restart in sync: time to /readyz", unit: "s", get: func(r *runResult) (float64, bool) { return r.Restart.ReadySeconds, true }},
		metric{name: "5 restart in sync: time to reconcile all", unit: "s", get: func(r *runResult) (float64, bool) { return r.Restart.ReconciledSeconds, true }},
		metric{name: "5 restart in sync: write requests", unit: "req", get: func(r *runResult) (float64, bool) { return r.Restart.Writes, true }},
		metric{name: "3b reconciles per kcp event", unit: "", get: func(r *runResult) (float64, bool) { return r.ReconcilesPerKcpEvent, true }},
	)
	for _, phase := range []string{"create", "status", "update", "delete"} {
		for _, side := range []string{sideKcp, sideService} {
			out = append(out,
				metric{name: fmt.Sprintf("6 %s: %s writes per object", phase, side), unit: "req", get: requestsPerObject(phase, side, true)},
				metric{name: fmt.Sprintf("6 %s: %s reads per object", phase, side), unit: "req", get: requestsPerObject(phase, side, false)},
			)
		}
	}
	n := float64(cfg.Objects)
	out = append(out,
		metric{name: "7 agent peak RSS (VmHWM)", unit: "MiB", get: func(r *runResult) (float64, bool) { return r.PeakRSSMiB, true }},
		metric{name: "7 agent CPU (user+sys, whole run)", unit: "s", get: func(r *runResult) (float64, bool) { return r.CPUSeconds, true }},
		metric{name: "7 agent CPU per object, create phase", unit: "ms", get: func(r *runResult) (float64, bool) { return r.CPUSecondsByPhase["create"] * 1000 / n, true }},
		metric{name: fmt.Sprintf("7 agent RSS after syncing %d objects", cfg.Objects), unit: "MiB", get: func(r *runResult) (float64, bool) { return r.RSSAfterSyncMiB, true }},
		metric{name: "7 agent Go heap in use after the sync", unit: "MiB", get: func(r *runResult) (float64, bool) { return r.HeapInuseAfterSyncMiB, r.HeapInuseAfterSyncMiB > 0 }},
	)
	for _, d := range []struct{ phase, title string }{
		{"direct-create", "8 direct create"}, {"direct-status", "8 direct status update"},
		{"direct-update", "8 direct spec update"}, {"direct-delete", "8 direct delete"},
	} {
		out = append(out,
			metric{name: d.title + ": throughput", unit: "obj/s", get: phaseValue(d.phase, throughput)},
			metric{name: d.title + ": p50", unit: "ms", get: phaseValue(d.phase, p50)},
			metric{name: d.title + ": p99", unit: "ms", get: phaseValue(d.phase, p99)},
		)
	}
	return out
}

// stat is min/median/max over the repetitions of one agent.
type stat struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	Runs   int     `json:"runs"`
}

func newStat(values []float64) *stat {
	if len(values) == 0 {
		return nil
	}
	slices.Sort(values)
	med := values[len(values)/2]
	if len(values)%2 == 0 {
		med = (values[len(values)/2-1] + values[len(values)/2]) / 2
	}
	return &stat{Min: values[0], Median: med, Max: values[len(values)-1], Runs: len(values)}
}

// summaryRow is one figure for both agents.
type summaryRow struct {
	Figure   string `json:"figure"`
	Unit     string `json:"unit"`
	Ours     *stat  `json:"ours,omitempty"`
	Baseline *stat  `json:"baseline,omitempty"`
	// ...VsDirect: median over median of the physical counterpart.
	OursVsDirect     *float64 `json:"oursVsDirect,omitempty"`
	BaselineVsDirect *float64 `json:"baselineVsDirect,omitempty"`
	// BaselineVsOurs: median over median.
	BaselineVsOurs *float64 `json:"baselineVsOurs,omitempty"`
}

func ratio(a, b *stat) *float64 {
	if a == nil || b == nil || b.Median == 0 {
		return nil
	}
	r := a.Median / b.Median
	return &r
}

func collect(runs []*runResult, label string, get func(*runResult) (float64, bool)) *stat {
	var values []float64
	for _, r := range runs {
		if r.Agent != label {
			continue
		}
		if v, ok := get(r); ok {
			values = append(values, v)
		}
	}
	return newStat(values)
}

func summarize(cfg *config, runs []*runResult) []summaryRow {
	var rows []summaryRow
	for _, m := range metrics(cfg) {
		row := summaryRow{Figure: m.name, Unit: m.unit, Ours: collect(runs, labelOurs, m.get), Baseline: collect(runs, labelBaseline, m.get)}
		if m.direct != nil {
			row.OursVsDirect = ratio(row.Ours, collect(runs, labelOurs, m.direct))
			row.BaselineVsDirect = ratio(row.Baseline, collect(runs, labelBaseline, m.direct))
		}
		row.BaselineVsOurs = ratio(row.Baseline, row.Ours)
		rows = append(rows, row)
	}
	return rows
}

func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func (s *stat) String() string {
	if s == nil {
		return "-"
	}
	if s.Runs == 1 {
		return num(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

func ratioString(r *float64) string {
	if r == nil {
		return ""
	}
	return "×" + num(*r)
}

func printTable(w io.Writer, cfg *config, rows []summaryRow) {
	_, _ = fmt.Fprintf(w, "\nW=%d workspaces, N=%d objects, P=%d clients, related Secret: %v, unrelated Secrets: %d, %d run(s) per agent (median (min–max))\n",
		cfg.Workspaces, cfg.Objects, cfg.Parallel, cfg.Related, cfg.Unrelated, cfg.Count)
	_, _ = fmt.Fprintf(w, "ours: %s\n", cfg.Agent)
	if cfg.Baseline != "" {
		_, _ = fmt.Fprintf(w, "baseline: %s\n", cfg.Baseline)
	}
	_, _ = fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "figure\tunit\tours\t÷ direct"
	if cfg.Baseline != "" {
		header += "\tbaseline\t÷ direct\tbaseline ÷ ours"
	}
	_, _ = fmt.Fprintln(tw, header)
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%s\t%s\t%s", r.Figure, r.Unit, r.Ours, ratioString(r.OursVsDirect))
		if cfg.Baseline != "" {
			line += fmt.Sprintf("\t%s\t%s\t%s", r.Baseline, ratioString(r.BaselineVsDirect), ratioString(r.BaselineVsOurs))
		}
		_, _ = fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

// printRequests prints the request breakdown of each agent's first run.
func printRequests(w io.Writer, runs []*runResult) {
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Agent] {
			continue
		}
		seen[r.Agent] = true
		_, _ = fmt.Fprintf(w, "\n%s (run %d): agent requests per object by phase, side and HTTP method (GET includes lists and watches)\n", r.Agent, r.Rep)
		for _, phase := range []string{"create", "status", "update", "delete"} {
			_, _ = fmt.Fprintf(w, "  %-7s %s\n", phase, formatRequests(r.Requests[phase]))
		}
		_, _ = fmt.Fprintf(w, "  restart %s (absolute)\n", formatRequests(r.Restart.Requests))
		_, _ = fmt.Fprintf(w, "  CPU seconds by process and phase (wall seconds of the phase incl. settling; 2 cores = 2 CPU-s/s):\n")
		for _, phase := range []string{"create", "status", "update", "delete"} {
			var parts []string
			cpu := r.ProcessCPU[phase]
			for _, k := range slices.Sorted(maps.Keys(cpu)) {
				parts = append(parts, fmt.Sprintf("%s %s", k, num(cpu[k])))
			}
			_, _ = fmt.Fprintf(w, "    %-7s wall %s: %s\n", phase, num(r.PhaseWallSeconds[phase]), strings.Join(parts, ", "))
		}
		for _, side := range []string{sideService, sideKcp} {
			m := r.ServerRequests[side]
			if m == nil {
				_, _ = fmt.Fprintf(w, "  %s apiserver_request_total: not readable\n", side)
				continue
			}
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(m)) {
				parts = append(parts, fmt.Sprintf("%s %s", k, num(m[k])))
			}
			_, _ = fmt.Fprintf(w, "  %s server, create phase, per object: %s\n", side, strings.Join(parts, ", "))
		}
	}
}

func formatRequests(m map[string]map[string]float64) string {
	var parts []string
	for _, side := range slices.Sorted(maps.Keys(m)) {
		var methods []string
		for _, k := range slices.Sorted(maps.Keys(m[side])) {
			methods = append(methods, fmt.Sprintf("%s %s", k, num(m[side][k])))
		}
		parts = append(parts, side+": "+strings.Join(methods, " "))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
