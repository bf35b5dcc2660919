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

// Command demo starts the test bed's kcp and a local service cluster
// (kube-apiserver + etcd), wires them like a real installation (organisation
// workspace with an APIExport, a bound consumer workspace, the agent's kcp
// RBAC, an example CRD and PublishedResource), writes kubeconfigs into
// _demo/, runs the agent in the foreground and prints the kubectl commands
// to try it. Ctrl-C stops everything it started.
//
// Run it with `make demo`, which builds the test bed and the agent first.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

const (
	demoDir    = "_demo"
	exportName = "kcp.example.com"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &demo{ctx: ctx}
	defer d.cleanup()
	d.run()
}

func (d *demo) run() {
	root, err := filepath.Abs(demoDir)
	d.check(err)
	d.check(os.RemoveAll(root))
	d.check(os.MkdirAll(root, 0o755))
	d.check(os.Setenv(framework.EnvArtifacts, root))
	framework.DiscardControllerRuntimeLogs()

	kcpBin, err := framework.RequireEnv(framework.EnvKcpBin)
	d.check(err)
	agentBin, err := framework.RequireEnv(framework.EnvAgentBin)
	d.check(err)
	kubectl, err := framework.RequireEnv(framework.EnvKubectlBin)
	d.check(err)

	step("Starting kcp (127.0.0.1 only, state in %s/kcp)", demoDir)
	k, err := framework.StartKcp(d.ctx, kcpBin, mkdir(root, "kcp"), root)
	d.check(err)
	d.Cleanup(k.Stop)

	step("Creating organisation workspace root:demo with APIExport %q and the agent's RBAC", exportName)
	org := k.CreateWorkspace(d, "root", "demo", "organization")
	framework.CreateAPIExport(d, org, exportName)
	framework.GrantAgent(d, org, exportName, exportName)

	step("Creating consumer workspace below root:demo, bound to the export")
	consumer := k.BindConsumer(d, org, exportName, framework.DefaultClaims())

	step("Starting the service cluster (kube-apiserver + etcd) with the example CRD")
	svc := framework.StartServiceCluster(d)
	svc.CreateNamespace(d, framework.AgentNamespace)
	svc.CreateFromFile(d, "hack/demo/crd.yaml", &apiextensionsv1.CustomResourceDefinition{})
	svc.CreateFromFile(d, "hack/demo/publishedresource.yaml", &syncagentv1alpha1.PublishedResource{})

	kcpAdmin := framework.WriteKubeconfig(d, root, "consumer.kubeconfig", k.AdminConfig(consumer.Path))
	agentKcp := framework.WriteKubeconfig(d, root, "agent-kcp.kubeconfig", k.AgentConfig(org.Path))

	args := []string{
		"--kcp-kubeconfig=" + agentKcp,
		"--kubeconfig=" + svc.Kubeconfig,
		"--namespace=" + framework.AgentNamespace,
		"--apiexportendpointslice-ref=" + exportName,
		"--health-address=127.0.0.1:8086",
		"--log-format=Console",
	}
	step("Starting the agent: %s %v", agentBin, args)
	agent, err := framework.StartProcess("agent", agentBin, filepath.Join(root, "agent.log"), args, nil)
	d.check(err)
	d.Cleanup(func() { agent.Stop(30 * time.Second) })

	fmt.Printf(`
The demo is running. In another terminal:

  # create a Thing in the consumer workspace (kcp)
  %[1]s --kubeconfig=%[2]s apply -f hack/demo/thing.yaml
  %[1]s --kubeconfig=%[2]s get things -A

  # see its copy in the service cluster
  %[1]s --kubeconfig=%[3]s get things -A

  # the PublishedResource and the agent's health
  %[1]s --kubeconfig=%[3]s get publishedresources
  curl -s http://127.0.0.1:8086/readyz

Agent log: %[4]s (followed below). Press Ctrl-C to stop everything.

`, kubectl, kcpAdmin, svc.Kubeconfig, agent.LogPath)

	follow(d.ctx, agent)
}

// follow copies the agent's log to stdout until ctx ends or the agent exits.
func follow(ctx context.Context, p *framework.Process) {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 32*1024)
	for {
		n, _ := f.Read(buf)
		if n > 0 {
			_, _ = os.Stdout.Write(buf[:n])
			continue
		}
		if p.Exited() {
			fmt.Printf("\nthe agent exited with code %d\n", p.ExitCode())
			return
		}
		select {
		case <-ctx.Done():
			fmt.Println("\nstopping ...")
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func mkdir(parts ...string) string {
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		panic(err)
	}
	return p
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// demo implements framework.T for a program: Fatal stops everything and exits.
type demo struct {
	ctx      context.Context
	cleanups []func()
	failed   bool
}

func (d *demo) Helper()                  {}
func (d *demo) Name() string             { return "" }
func (d *demo) Context() context.Context { return d.ctx }
func (d *demo) Cleanup(f func())         { d.cleanups = append(d.cleanups, f) }
func (d *demo) Logf(f string, a ...any)  { fmt.Printf(f+"\n", a...) }
func (d *demo) Failed() bool             { return d.failed }
func (d *demo) Fatal(a ...any)           { d.Fatalf("%s", fmt.Sprint(a...)) }
func (d *demo) Fatalf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "demo failed: "+f+"\n", a...)
	d.failed = true
	d.cleanup()
	os.Exit(1)
}

func (d *demo) check(err error) {
	if err != nil {
		d.Fatal(err)
	}
}

func (d *demo) cleanup() {
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		d.cleanups[i]()
	}
	d.cleanups = nil
}
