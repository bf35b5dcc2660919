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
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// Labels of the two agents in the results.
const (
	labelOurs     = "ours"
	labelBaseline = "baseline"
)

const (
	exportName = "bench"
	// kcpNamespace holds every object in each consumer workspace.
	kcpNamespace = "default"
	// unrelatedNamespace holds the Secrets of -unrelated.
	unrelatedNamespace = "bench-unrelated"
	// directNamespace holds the physical reference's objects.
	directNamespace = "bench-direct"
	// warmupName is the one object per workspace that proves the agent
	// syncs there before the measured phases start.
	warmupName = "warmup"

	setupTimeout = 3 * time.Minute
	// agentStopGrace is how long the agent may take to shut down.
	agentStopGrace = 30 * time.Second
	// conflictRetries bounds the re-reads of an object whose update conflicts.
	conflictRetries = 10
)

// Bench clients must never be the bottleneck.
const (
	clientQPS   = 5000
	clientBurst = 10000
)

var (
	kcpGVR    = schema.GroupVersionResource{Group: "kcp.example.com", Version: "v1", Resource: "things"}
	localGVR  = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// agentUnderTest is one agent binary and its label in the results.
type agentUnderTest struct {
	Label   string
	Binary  string
	Profile int
	// Pprof enables --pprof-address without a CPU profile.
	Pprof bool
}

// env is one repetition's environment.
type env struct {
	t   *benchT
	cfg *config
	k   *framework.Kcp
	au  agentUnderTest
	dir string

	org       *framework.Workspace
	svc       *framework.ServiceCluster
	consumers []*framework.Workspace
	svcDyn    dynamic.Interface
	kcpDyn    []dynamic.Interface

	// onlyLocalWatch: the recorder watches the service side only (the
	// wide scenario: no watch per consumer workspace into kcp).
	onlyLocalWatch bool
	// bindParallel: workspaces created and bound at once (0: 4).
	bindParallel int
	// onShards: consumer workspaces alternate between the two shards of a
	// sharded kcp (the partitions scenario).
	onShards bool
	// sliceRef is the agent's endpoint slice (default: the export's);
	// extraArgs go to the agent as they are.
	sliceRef  string
	extraArgs []string

	kcpKubeconfig string
	agent         *framework.Agent
	pprofAddress  string
	rec           *recorder
	res           *runResult
}

func restConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = clientQPS, clientBurst
	return c
}

func objectName(i int) string { return fmt.Sprintf("thing-%05d", i) }

// consumerName is consumer-00 …, with more digits when there are more
// than 100 workspaces.
func consumerName(i, n int) string {
	return fmt.Sprintf("consumer-%0*d", max(2, len(fmt.Sprint(n-1))), i)
}

// workspaceOf returns the index of object i's workspace (round-robin).
func (e *env) workspaceOf(i int) int { return i % len(e.consumers) }

// key identifies a kcp object across both sides: <cluster>/<name>.
func (e *env) key(i int) string {
	return e.consumers[e.workspaceOf(i)].ClusterName + "/" + objectName(i)
}

func newThing(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"color": "blue"}}}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind("Thing")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// thingsPR publishes example.com Things as kcp.example.com Things, with
// one kcp-origin Secret per object if related is set.
func thingsPR(related bool) *syncagentv1alpha1.PublishedResource {
	pr := &syncagentv1alpha1.PublishedResource{
		ObjectMeta: metav1.ObjectMeta{Name: "things"},
		Spec: syncagentv1alpha1.PublishedResourceSpec{
			Resource:   syncagentv1alpha1.SourceResourceDescriptor{APIGroup: "example.com", Kind: "Thing"},
			Projection: &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"},
		},
	}
	if related {
		pr.Spec.Related = []syncagentv1alpha1.RelatedResourceSpec{{
			Identifier: "secret", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Kind: syncagentv1alpha1.RelatedResourceKindSecret,
			Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Template: &syncagentv1alpha1.TemplateExpression{Template: "{{ .Object.metadata.name }}-secret"},
			}},
		}}
	}
	return pr
}

// runScenario runs the whole scenario once with one agent.
func runScenario(root *benchT, k *framework.Kcp, cfg *config, rep int, au agentUnderTest) *runResult {
	name := fmt.Sprintf("rep%d-%s", rep, au.Label)
	t := root.child(name)
	defer t.cleanup()
	started := time.Now()
	logf("[%s] setting up: service cluster, organisation workspace, %d consumer workspaces", name, cfg.Workspaces)

	e := &env{t: t, cfg: cfg, k: k, au: au, dir: framework.ArtifactsDir(t)}
	e.res = &runResult{Agent: au.Label, Binary: au.Binary, Rep: rep, Phases: map[string]*phaseResult{},
		Requests: map[string]map[string]map[string]float64{}, CPUSecondsByPhase: map[string]float64{},
		ProcessCPU: map[string]map[string]float64{}, PhaseWallSeconds: map[string]float64{}}
	e.setupKcpAndService(fmt.Sprintf("bench-%d-%s", rep, au.Label))

	logf("[%s] physical reference: %d creates, status updates, spec updates and deletes against the service kube-apiserver", name, cfg.Objects)
	e.direct()
	if cfg.Unrelated > 0 {
		logf("[%s] %d unrelated Secrets in the service cluster", name, cfg.Unrelated)
		e.unrelated()
	}

	e.startAgent()
	e.waitExported()
	e.bindConsumers()
	e.rec = newRecorder(e)
	e.warmup()
	e.res.SetupSeconds = time.Since(started).Seconds()

	logf("[%s] phase 1: create %d objects in kcp (P=%d)", name, cfg.Objects, cfg.Parallel)
	e.phaseCreate()
	logf("[%s] phase 2: status on every local copy", name)
	e.phaseStatus()
	logf("[%s] phase 3: spec update of every kcp object", name)
	e.phaseUpdate()
	logf("[%s] phase 3b: one kcp event per object that needs no write", name)
	e.phaseTouch()
	logf("[%s] phase 5: agent restart with everything in sync", name)
	e.phaseRestart()
	logf("[%s] phase 4: delete every kcp object", name)
	e.phaseDelete()

	e.res.PeakRSSMiB = max(e.res.PeakRSSMiB, procMemory(e.agent.Pid()).HWM)
	e.res.CPUSeconds += procCPU(e.agent.Pid())
	e.res.TotalSeconds = time.Since(started).Seconds()
	logf("[%s] done in %s (agent log %s)", name, time.Since(started).Round(time.Second), e.agent.LogPath)
	return e.res
}

func createSecret(ctx context.Context, c dynamic.Interface, owner string) error {
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"namespace": kcpNamespace, "name": owner + "-secret"},
		"stringData": map[string]any{"password": "bench-" + owner},
	}}
	_, err := c.Resource(secretGVR).Namespace(kcpNamespace).Create(ctx, s, metav1.CreateOptions{})
	return err
}

// parallel runs fn for 0..n-1 with the configured parallelism and returns
// when each call returned, and the start.
func (e *env) parallel(n int, fn func(ctx context.Context, i int) error) (start time.Time, done []time.Time, calls []time.Duration) {
	done = make([]time.Time, n)
	calls = make([]time.Duration, n)
	idx := make(chan int, n)
	for i := range n {
		idx <- i
	}
	close(idx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start = time.Now()
	for range e.cfg.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				t0 := time.Now()
				if err := fn(e.t.Context(), i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("object %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				done[i] = time.Now()
				calls[i] = done[i].Sub(t0)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		e.t.Fatal(firstErr)
	}
	return start, done, calls
}

// phaseTimeout bounds a wait for every object of a phase.
func (e *env) phaseTimeout() time.Duration {
	return 3*time.Minute + time.Duration(e.cfg.Objects)*50*time.Millisecond
}

// waitAll waits until seen reports a time for every object.
func (e *env) waitAll(what string, seen func(i int) (time.Time, bool)) []time.Time {
	out := make([]time.Time, e.cfg.Objects)
	framework.WaitFor(e.t, e.phaseTimeout(), what, func(context.Context) (bool, error) {
		if e.agent.Exited() {
			e.t.Fatalf("the agent exited with code %d, see %s", e.agent.ExitCode(), e.agent.LogPath)
		}
		for i := range out {
			if !out[i].IsZero() {
				continue
			}
			ts, ok := seen(i)
			if !ok {
				return false, nil
			}
			out[i] = ts
		}
		return true, nil
	})
	return out
}

// measured runs one phase: the agent's requests, CPU and the settle time
// after it are attributed to the phase.
func (e *env) measured(phase string, fn func()) {
	before := e.scrapeAgent()
	cpu, all, started := procCPU(e.agent.Pid()), takeCPU(), time.Now()
	fn()
	e.settle()
	e.res.CPUSecondsByPhase[phase] = procCPU(e.agent.Pid()) - cpu
	e.res.ProcessCPU[phase] = cpuDelta(all, takeCPU())
	e.res.PhaseWallSeconds[phase] = time.Since(started).Seconds()
	e.res.Requests[phase] = perObject(requestDelta(before, e.scrapeAgent(), e.sides()), e.cfg.Objects)
	e.dumpAgentMetrics(phase)
}

// dumpAgentMetrics keeps the agent's /metrics after a phase in the
// artifacts (workqueue and client latency histograms).
func (e *env) dumpAgentMetrics(phase string) {
	_, body, err := framework.Get(e.t.Context(), "http://"+e.agent.MetricsAddress+"/metrics")
	if err == nil {
		err = os.WriteFile(filepath.Join(e.dir, "agent-metrics-after-"+phase+".txt"), []byte(body), 0o644)
	}
	if err != nil {
		logf("cannot keep the agent's metrics: %v", err)
	}
}

// captureProfile fetches a CPU profile of seconds from who's pprof
// endpoint at address in the background into file (its path into *path);
// the returned channel is closed when it is written.
func (e *env) captureProfile(who, address string, seconds int, file string, path *string) chan struct{} {
	done := make(chan struct{})
	out := filepath.Join(e.dir, file)
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", address, seconds)
		code, body, err := getLong(e.t.Context(), url, time.Duration(seconds+30)*time.Second)
		if err == nil && code != 200 {
			err = fmt.Errorf("status %d", code)
		}
		if err == nil {
			err = os.WriteFile(out, body, 0o644)
		}
		if err != nil {
			logf("CPU profile of %s failed: %v", who, err)
			return
		}
		*path = out
		logf("CPU profile of %s written to %s", who, out)
	}()
	return done
}
