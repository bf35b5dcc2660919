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
	"path/filepath"
	"sync"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

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
