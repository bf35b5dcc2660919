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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// The partitions scenario: the same load through one agent (the export's
// slice lists both shards) and through two agents of one agent name, each
// with a slice whose Partition selects one shard, on a kcp of two shards;
// consumer workspaces alternate between the shards.
const (
	modeOneAgent      = "one-agent"
	modeTwoPartitions = "two-partitions"
	partitionAgent    = "bench"
)

// partitionsResult is one run of one mode.
type partitionsResult struct {
	Mode   string                  `json:"mode"`
	Rep    int                     `json:"rep"`
	Phases map[string]*phaseResult `json:"phases"`
	// Agents: each agent's CPU seconds and peak RSS over the whole run.
	Agents []agentUse `json:"agents"`
	// Copies after the create phase, and how many objects had more than
	// one (must be 0).
	Copies     int     `json:"copies"`
	Duplicates int     `json:"duplicates"`
	Seconds    float64 `json:"seconds"`
}

type agentUse struct {
	Name       string  `json:"name"`
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
}

// labelShards labels kcp's shards by region, once per kcp.
func labelShards(t *benchT, k *framework.Kcp) {
	framework.LabelShard(t, k, framework.RootShard, "eu")
	framework.LabelShard(t, k, framework.SecondShard, "us")
}

// runPartitions runs create, update and delete of cfg.Objects objects in
// one mode.
func runPartitions(root *benchT, k *framework.Kcp, cfg *config, rep int, mode string) *partitionsResult {
	name := fmt.Sprintf("rep%d-%s", rep, mode)
	t := root.child(name)
	defer t.cleanup()
	started := time.Now()
	logf("[%s] setting up: service cluster, organisation workspace, %d consumer workspaces on two shards", name, cfg.Workspaces)
	e := &env{t: t, cfg: cfg, k: k, au: agentUnderTest{Label: labelOurs, Binary: cfg.Agent}, dir: framework.ArtifactsDir(t), onShards: true}
	e.res = &runResult{Agent: mode, Binary: cfg.Agent, Rep: rep, Phases: map[string]*phaseResult{},
		Requests: map[string]map[string]map[string]float64{}, CPUSecondsByPhase: map[string]float64{},
		ProcessCPU: map[string]map[string]float64{}, PhaseWallSeconds: map[string]float64{}}
	e.setupKcpAndService(fmt.Sprintf("bench-%d-%s", rep, mode))
	e.extraArgs = []string{"--agent-name=" + partitionAgent}
	agents := map[string]*framework.Agent{}
	if mode == modeOneAgent {
		e.startAgent()
		agents["agent"] = e.agent
	} else {
		framework.CreatePartitions(t, e.org, exportName, "eu", "us")
		e.sliceRef = exportName + "-us"
		e.extraArgs = append(e.extraArgs, "--disabled-controllers=apiresourceschema,apiexport")
		e.startAgent()
		agents["us"] = e.agent
		e.sliceRef, e.extraArgs = exportName+"-eu", e.extraArgs[:1]
		e.startAgent()
		agents["eu"] = e.agent // the publisher: the phases read its metrics
	}
	e.waitExported()
	e.bindConsumers()
	e.rec = newRecorder(e)
	e.warmup()

	logf("[%s] create %d objects in kcp (P=%d)", name, cfg.Objects, cfg.Parallel)
	e.phaseCreate()
	res := &partitionsResult{Mode: mode, Rep: rep, Phases: e.res.Phases}
	res.Copies, res.Duplicates = e.countCopies()
	logf("[%s] spec update of every kcp object", name)
	e.phaseUpdate()
	logf("[%s] delete every kcp object", name)
	e.phaseDelete()
	for _, n := range []string{"agent", "eu", "us"} {
		if a := agents[n]; a != nil {
			res.Agents = append(res.Agents, agentUse{Name: n, CPUSeconds: procCPU(a.Pid()), PeakRSSMiB: procMemory(a.Pid()).HWM})
		}
	}
	res.Seconds = time.Since(started).Seconds()
	logf("[%s] done in %s", name, time.Since(started).Round(time.Second))
	return res
}

// countCopies counts the service cluster's copies and the objects with
// more than one.
func (e *env) countCopies() (copies, duplicates int) {
	list, err := e.svcDyn.Resource(localGVR).List(e.t.Context(), metav1.ListOptions{})
	e.t.check(err)
	per := map[string]int{}
	for _, c := range list.Items {
		per[c.GetLabels()[labelRemoteCluster]+"/"+c.GetAnnotations()[annotationRemoteName]]++
	}
	for _, n := range per {
		if n > 1 {
			duplicates++
		}
	}
	return len(list.Items), duplicates
}

// printPartitions prints the two modes side by side.
func printPartitions(w io.Writer, cfg *config, runs []*partitionsResult) {
	fmt.Fprintf(w, "\nPartitions: W=%d workspaces on two shards, N=%d objects, P=%d\n\n", cfg.Workspaces, cfg.Objects, cfg.Parallel)
	fmt.Fprintf(w, "%-15s %4s %10s %14s %14s %14s %7s %5s  %s\n", "mode", "rep", "create/s", "create p50/99", "update p50/99", "delete p50/99", "copies", "dups", "agents (CPU s, peak RSS MiB)")
	ms := func(p *phaseResult) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f/%.0f ms", p.P50Ms, p.P99Ms)
	}
	for _, r := range runs {
		var agents string
		for _, a := range r.Agents {
			agents += fmt.Sprintf("%s %.1f s %.0f MiB; ", a.Name, a.CPUSeconds, a.PeakRSSMiB)
		}
		create := 0.0
		if p := r.Phases["create"]; p != nil {
			create = p.Throughput
		}
		fmt.Fprintf(w, "%-15s %4d %10.1f %14s %14s %14s %7d %5d  %s\n", r.Mode, r.Rep, create, ms(r.Phases["create"]), ms(r.Phases["update"]), ms(r.Phases["delete"]), r.Copies, r.Duplicates, agents)
	}
}
