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
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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

// setupKcpAndService creates the organisation workspace with the export and
// the agent's RBAC, and a service cluster with the CRD and the
// PublishedResource.
func (e *env) setupKcpAndService(orgName string) {
	t := e.t
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.org = e.k.CreateWorkspace(t, "root", orgName, "organization")
		framework.CreateAPIExport(t, e.org, exportName)
		framework.GrantAgent(t, e.org, exportName, exportName)
		e.kcpKubeconfig = framework.WriteKubeconfig(t, e.dir, "kcp.kubeconfig", e.k.AgentConfig(e.org.Path))
	}()
	e.svc = framework.StartServiceCluster(t)
	e.svc.CreateNamespace(t, framework.AgentNamespace)
	e.svc.CreateNamespace(t, directNamespace)
	e.svc.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, e.svc.Client.Create(t.Context(), thingsPR(e.cfg.Related)), "create the PublishedResource")
	var err error
	e.svcDyn, err = dynamic.NewForConfig(restConfig(e.svc.Config))
	t.check(err)
	wg.Wait()
}

// startAgent starts the agent under test with the flags both agents accept.
func (e *env) startAgent() {
	t := e.t
	health, metrics := framework.MustFreeAddress(t), framework.MustFreeAddress(t)
	args := []string{
		"--kcp-kubeconfig=" + e.kcpKubeconfig,
		"--kubeconfig=" + e.svc.Kubeconfig,
		"--namespace=" + framework.AgentNamespace,
		"--apiexportendpointslice-ref=" + cmp.Or(e.sliceRef, exportName),
		"--health-address=" + health,
		"--metrics-address=" + metrics,
		"--log-format=Console",
	}
	if e.cfg.Scenario == scenarioNoisy {
		// Our agent then traces each pass (its queue wait, its writes),
		// which splits the quiet objects' latency; every agent gets the
		// flag, so the runs compare alike.
		args = append(args, "--log-debug")
	}
	if e.au.Label == labelOurs {
		if e.cfg.EventLevel != "" {
			args = append(args, "--event-level="+e.cfg.EventLevel)
		}
		if e.cfg.SyncWorkers > 0 {
			args = append(args, fmt.Sprintf("--sync-workers=%d", e.cfg.SyncWorkers))
		}
		if e.cfg.PatrolInterval != "" {
			args = append(args, "--patrol-interval="+e.cfg.PatrolInterval)
		}
	}
	args = append(args, e.extraArgs...)
	if e.au.Profile > 0 || e.au.Pprof {
		e.pprofAddress = framework.MustFreeAddress(t)
		args = append(args, "--pprof-address="+e.pprofAddress)
	}
	logPath := filepath.Join(e.dir, fmt.Sprintf("agent-%d.log", time.Now().UnixNano()))
	p, err := framework.StartProcess("agent", e.au.Binary, logPath, args, nil)
	t.check(err)
	t.Cleanup(func() { p.Stop(agentStopGrace) })
	e.agent = &framework.Agent{Process: p, HealthAddress: health, MetricsAddress: metrics}
}

// waitExported waits until the export serves the projected type (and
// claims Secrets when related objects are on). It reads only the APIExport,
// so it works for any agent.
func (e *env) waitExported() {
	framework.WaitFor(e.t, setupTimeout, "the APIExport to serve things.kcp.example.com", func(ctx context.Context) (bool, error) {
		if e.agent.Exited() {
			e.t.Fatalf("the agent exited with code %d, see %s", e.agent.ExitCode(), e.agent.LogPath)
		}
		exp := &kcpapisv1alpha2.APIExport{}
		if err := e.org.Client.Get(ctx, types.NamespacedName{Name: exportName}, exp); err != nil {
			return false, err
		}
		served := false
		for _, r := range exp.Spec.Resources {
			served = served || (r.Group == kcpGVR.Group && r.Name == kcpGVR.Resource)
		}
		claimed := !e.cfg.Related
		for _, c := range exp.Spec.PermissionClaims {
			claimed = claimed || (c.Group == "" && c.Resource == "secrets")
		}
		return served && claimed, nil
	})
}

// bindConsumers creates the consumer workspaces consumer-00 … (in
// parallel) with a binding to the export that accepts every claim.
func (e *env) bindConsumers() {
	t := e.t
	exp := &kcpapisv1alpha2.APIExport{}
	framework.Must(t, e.org.Client.Get(t.Context(), types.NamespacedName{Name: exportName}, exp), "get the APIExport")
	e.consumers = make([]*framework.Workspace, e.cfg.Workspaces)
	e.kcpDyn = make([]dynamic.Interface, e.cfg.Workspaces)
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(e.bindParallel, 4))
	for i := range e.cfg.Workspaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var ws *framework.Workspace
			if e.onShards {
				shard := []string{framework.RootShard, framework.SecondShard}[i%2]
				ws = e.k.CreateWorkspaceOnShard(t, e.org.Path, consumerName(i, e.cfg.Workspaces), "universal", shard)
			} else {
				ws = e.k.CreateWorkspace(t, e.org.Path, consumerName(i, e.cfg.Workspaces), "universal")
			}
			bind(t, ws, e.org.Path, exp.Spec.PermissionClaims)
			dyn, err := dynamic.NewForConfig(restConfig(e.k.AdminConfig(ws.Path)))
			t.check(err)
			e.consumers[i], e.kcpDyn[i] = ws, dyn
		}()
	}
	wg.Wait()
}

// bind creates the APIBinding to the bench export in ws with every claim
// accepted and waits until it is bound.
func bind(t *benchT, ws *framework.Workspace, exportPath string, claims []kcpapisv1alpha2.PermissionClaim) {
	accepted := make([]kcpapisv1alpha2.AcceptablePermissionClaim, 0, len(claims))
	for _, c := range claims {
		accepted = append(accepted, kcpapisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: kcpapisv1alpha2.ScopedPermissionClaim{PermissionClaim: c, Selector: kcpapisv1alpha2.PermissionClaimSelector{MatchAll: true}},
			State:                 kcpapisv1alpha2.ClaimAccepted,
		})
	}
	binding := &kcpapisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: exportName},
		Spec: kcpapisv1alpha2.APIBindingSpec{
			Reference:        kcpapisv1alpha2.BindingReference{Export: &kcpapisv1alpha2.ExportBindingReference{Path: exportPath, Name: exportName}},
			PermissionClaims: accepted,
		},
	}
	framework.Must(t, ws.Client.Create(t.Context(), binding), "create the APIBinding in %s", ws.Path)
	framework.WaitFor(t, setupTimeout, "the APIBinding in "+ws.Path+" to be bound", func(ctx context.Context) (bool, error) {
		if err := ws.Client.Get(ctx, types.NamespacedName{Name: exportName}, binding); err != nil {
			return false, err
		}
		return binding.Status.Phase == kcpapisv1alpha2.APIBindingPhaseBound, nil
	})
}

// warmup creates one object per workspace, waits for its local copy and
// deletes it again: the agent then syncs in every workspace, and the target
// namespaces exist, before anything is measured.
func (e *env) warmup() {
	t := e.t
	for i, ws := range e.consumers {
		if e.cfg.Related {
			framework.Must(t, createSecret(t.Context(), e.kcpDyn[i], warmupName), "create the warm-up Secret")
		}
		_, err := e.kcpDyn[i].Resource(kcpGVR).Namespace(kcpNamespace).Create(t.Context(), newThing(kcpGVR, kcpNamespace, warmupName), metav1.CreateOptions{})
		framework.Must(t, err, "create the warm-up object in %s", ws.Path)
	}
	framework.WaitFor(t, setupTimeout, "the warm-up objects to be synced", func(context.Context) (bool, error) {
		n := 0
		for _, ws := range e.consumers {
			if _, ok := e.rec.synced(ws.ClusterName + "/" + warmupName); ok {
				n++
			}
		}
		return n == len(e.consumers), nil
	})
	for i := range e.consumers {
		framework.Must(t, e.kcpDyn[i].Resource(kcpGVR).Namespace(kcpNamespace).Delete(t.Context(), warmupName, metav1.DeleteOptions{}), "delete the warm-up object")
	}
	framework.WaitFor(t, setupTimeout, "the warm-up objects to be finalized", func(context.Context) (bool, error) {
		n := 0
		for _, ws := range e.consumers {
			if _, ok := e.rec.get(e.rec.kcpGone, ws.ClusterName+"/"+warmupName); ok {
				n++
			}
		}
		return n == len(e.consumers), nil
	})
	e.settle()
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

func (e *env) phaseCreate() {
	svcBefore, kcpBefore := e.scrapeServer(e.svc.Config), e.scrapeServer(e.kcpMetricsConfig())
	var profiles []chan struct{}
	if e.au.Profile > 0 {
		profiles = append(profiles, e.captureProfile("the agent", e.pprofAddress, e.au.Profile, "cpu.pprof", &e.res.CPUProfile))
	}
	if e.cfg.KcpProfileSeconds > 0 {
		profiles = append(profiles, e.captureProfile("kcp", e.cfg.kcpProfiler, e.cfg.KcpProfileSeconds, "kcp-cpu.pprof", &e.res.KcpCPUProfile))
	}
	e.measured("create", func() {
		start, done, calls := e.parallel(e.cfg.Objects, func(ctx context.Context, i int) error {
			c := e.kcpDyn[e.workspaceOf(i)]
			if e.cfg.Related {
				if err := createSecret(ctx, c, objectName(i)); err != nil {
					return err
				}
			}
			_, err := c.Resource(kcpGVR).Namespace(kcpNamespace).Create(ctx, newThing(kcpGVR, kcpNamespace, objectName(i)), metav1.CreateOptions{})
			return err
		})
		synced := e.waitAll("every local copy", func(i int) (time.Time, bool) { return e.rec.synced(e.key(i)) })
		e.res.Phases["create"] = newPhase(start, done, synced)
		e.res.Phases["kcp-create-calls"] = callPhase(start, done, calls)
	})
	e.res.ServerRequests = e.serverDelta(svcBefore, kcpBefore)
	mem := procMemory(e.agent.Pid())
	e.res.RSSAfterSyncMiB = mem.RSS
	e.res.HeapInuseAfterSyncMiB = e.scrapeAgent().sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	for _, p := range profiles {
		<-p
	}
}

func (e *env) phaseStatus() {
	e.measured("status", func() {
		start, done, _ := e.parallel(e.cfg.Objects, func(ctx context.Context, i int) error {
			return e.retryConflict(func(fresh bool) error {
				local, ok := e.rec.local(e.key(i))
				if !ok {
					return fmt.Errorf("no local copy of %s", e.key(i))
				}
				c := e.svcDyn.Resource(localGVR).Namespace(local.GetNamespace())
				if fresh {
					var err error
					if local, err = c.Get(ctx, local.GetName(), metav1.GetOptions{}); err != nil {
						return err
					}
				}
				local.Object["status"] = map[string]any{"phase": "Ready"}
				_, err := c.UpdateStatus(ctx, local, metav1.UpdateOptions{})
				return err
			})
		})
		seen := e.waitAll("every status in kcp", func(i int) (time.Time, bool) { return e.rec.get(e.rec.kcpStatus, e.key(i)) })
		e.res.Phases["status"] = newPhase(start, done, seen)
	})
}

func (e *env) phaseUpdate() {
	e.measured("update", func() {
		start, done, _ := e.parallel(e.cfg.Objects, func(ctx context.Context, i int) error {
			c := e.kcpDyn[e.workspaceOf(i)].Resource(kcpGVR).Namespace(kcpNamespace)
			return e.retryConflict(func(fresh bool) error {
				obj, ok := e.rec.remote(e.key(i))
				if !ok || fresh {
					var err error
					if obj, err = c.Get(ctx, objectName(i), metav1.GetOptions{}); err != nil {
						return err
					}
				}
				if err := unstructured.SetNestedField(obj.Object, "red", "spec", "color"); err != nil {
					return err
				}
				_, err := c.Update(ctx, obj, metav1.UpdateOptions{})
				return err
			})
		})
		seen := e.waitAll("every spec update locally", func(i int) (time.Time, bool) { return e.rec.get(e.rec.localRed, e.key(i)) })
		e.res.Phases["update"] = newPhase(start, done, seen)
	})
}

// touchQuiet ends the touch phase: the agent's reconcile count has not
// changed for this long.
const touchQuiet = 5 * time.Second

// phaseTouch sets an annotation that the agent never copies
// (kubectl.kubernetes.io/last-applied-configuration) on every kcp object:
// one kcp event per object that needs no write, hence no local event and
// no requeue. The sync controller's reconciles per such event must be 1,
// whatever the number of workspaces (with the pinned kcp provider's scoped
// informers every event reached every workspace's handler: W).
func (e *env) phaseTouch() {
	reconciles := func() float64 {
		return e.scrapeAgent().sum("controller_runtime_reconcile_total", map[string]string{"controller": "syncagent-sync"})
	}
	before := reconciles()
	patch := []byte(`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`)
	e.parallel(e.cfg.Objects, func(ctx context.Context, i int) error {
		c := e.kcpDyn[e.workspaceOf(i)].Resource(kcpGVR).Namespace(kcpNamespace)
		_, err := c.Patch(ctx, objectName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	deadline := time.Now().Add(e.phaseTimeout())
	last, since := reconciles(), time.Now()
	for time.Now().Before(deadline) && (last-before < float64(e.cfg.Objects) || time.Since(since) < touchQuiet) {
		time.Sleep(settleInterval)
		if n := reconciles(); n != last {
			last, since = n, time.Now()
		}
	}
	e.res.ReconcilesPerKcpEvent = (last - before) / float64(e.cfg.Objects)
	logf("reconciles per kcp event: %.2f", e.res.ReconcilesPerKcpEvent)
}

// retryConflict calls fn, and again with fresh=true after a conflict.
func (e *env) retryConflict(fn func(fresh bool) error) error {
	err := fn(false)
	for range conflictRetries {
		if !apierrors.IsConflict(err) {
			return err
		}
		err = fn(true)
	}
	return err
}

func (e *env) phaseDelete() {
	e.measured("delete", func() {
		start, done, _ := e.parallel(e.cfg.Objects, func(ctx context.Context, i int) error {
			return e.kcpDyn[e.workspaceOf(i)].Resource(kcpGVR).Namespace(kcpNamespace).Delete(ctx, objectName(i), metav1.DeleteOptions{})
		})
		gone := e.waitAll("every object to be gone locally and finalized in kcp", func(i int) (time.Time, bool) {
			local, ok := e.rec.get(e.rec.localGone, e.key(i))
			if !ok {
				return time.Time{}, false
			}
			remote, ok := e.rec.get(e.rec.kcpGone, e.key(i))
			if !ok {
				return time.Time{}, false
			}
			return later(local, remote), true
		})
		e.res.Phases["delete"] = newPhase(start, done, gone)
	})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// phaseRestart stops the agent with everything in sync and starts it again:
// time to /readyz, time until it reconciled every object once, and the
// requests it made meanwhile (writes should be zero).
func (e *env) phaseRestart() {
	t := e.t
	e.res.PeakRSSMiB = procMemory(e.agent.Pid()).HWM
	e.res.CPUSeconds = procCPU(e.agent.Pid())
	e.agent.Stop(agentStopGrace)
	start := time.Now()
	e.startAgent()
	r := &e.res.Restart
	framework.WaitFor(t, setupTimeout, "the restarted agent's /readyz", func(ctx context.Context) (bool, error) {
		if e.agent.Exited() {
			t.Fatalf("the restarted agent exited with code %d, see %s", e.agent.ExitCode(), e.agent.LogPath)
		}
		code, _, err := framework.Get(ctx, "http://"+e.agent.HealthAddress+"/readyz")
		return err == nil && code == 200, nil
	})
	r.ReadySeconds = time.Since(start).Seconds()
	// Every object is reconciled once after the start (the busiest
	// controller's count reaches N).
	framework.WaitFor(t, setupTimeout, "the restarted agent to reconcile every object", func(context.Context) (bool, error) {
		return e.scrapeAgent().maxBy("controller_runtime_reconcile_total", "controller") >= float64(e.cfg.Objects), nil
	})
	r.ReconciledSeconds = time.Since(start).Seconds()
	e.settle()
	reqs := requestDelta(nil, e.scrapeAgent(), e.sides())
	r.Requests = reqs
	for _, side := range reqs {
		for method, n := range side {
			if isWrite(method) {
				r.Writes += n
			}
		}
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
