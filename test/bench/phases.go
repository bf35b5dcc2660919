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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

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
