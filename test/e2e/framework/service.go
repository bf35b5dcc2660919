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

package framework

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// EnvServiceAudit, when set, makes the service cluster's kube-apiserver
// write an audit log of every write (with the request body for the test
// types of example.com and for Leases) to service-audit.log in the test's
// artifacts.
const EnvServiceAudit = "E2E_SERVICE_AUDIT"

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources: [{group: "example.com"}, {group: "coordination.k8s.io", resources: ["leases"]}]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// ServiceCluster is a real kube-apiserver + etcd started for one test.
type ServiceCluster struct {
	Config *rest.Config
	Client ctrlruntimeclient.Client
	// Kubeconfig is the path of an admin kubeconfig for the cluster.
	Kubeconfig string

	apiPort   int
	artifacts string
	// restarted is the kube-apiserver started by RestartAPIServer (nil:
	// envtest's still runs).
	restarted *Process
	restarts  int
}

// RepoRoot returns the repository root (two levels above this file's package).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// StartServiceCluster starts kube-apiserver and etcd (both on 127.0.0.1)
// with the PublishedResource CRD from deploy/crd installed, and stops them
// when the test ends.
func StartServiceCluster(t T) *ServiceCluster {
	t.Helper()
	for _, env := range []string{EnvKubeAPIServerBin, EnvEtcdBin} {
		if _, err := RequireEnv(env); err != nil {
			t.Fatal(err)
		}
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "deploy", "crd")},
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
	}
	// Ports from the test range (see FreePort); envtest would pick
	// ephemeral ones. (etcd's peer port stays envtest's choice.)
	etcdPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env.ControlPlane.Etcd = &envtest.Etcd{URL: &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", etcdPort)}}
	api := env.ControlPlane.GetAPIServer()
	api.Address, api.Port = "127.0.0.1", strconv.Itoa(apiPort) // SecureServing
	if os.Getenv(EnvServiceAudit) != "" {
		policy := WriteFile(t, "service-audit-policy.yaml", []byte(auditPolicy))
		// One file however long the run (it would rotate at 100 MB).
		api.Configure().Set("audit-policy-file", policy).Set("audit-log-path", filepath.Join(ArtifactsDir(t), "service-audit.log")).
			Set("audit-log-maxsize", "100000")
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("failed to start the service cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("failed to stop the service cluster: %v", err)
		}
	})
	c, err := ctrlruntimeclient.New(cfg, ctrlruntimeclient.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	dir := ArtifactsDir(t)
	s := &ServiceCluster{Config: cfg, Client: c, Kubeconfig: WriteKubeconfig(t, dir, "service.kubeconfig", cfg), apiPort: apiPort, artifacts: dir}
	// Registered after envtest's stop, so it runs before it.
	t.Cleanup(func() {
		if s.restarted != nil {
			s.restarted.Kill()
		}
	})
	return s
}

// RestartAPIServer kills the kube-apiserver (SIGKILL: a crash; etcd keeps
// the data), waits down and starts it again with the same command line, so
// with the same certificates and etcd: every client and kubeconfig stays
// valid. It returns when the server is ready again.
func (s *ServiceCluster) RestartAPIServer(ctx context.Context, down time.Duration) error {
	var bin string
	var args []string
	if s.restarted != nil {
		bin, args = s.restarted.bin, s.restarted.args
		s.restarted.Kill()
	} else {
		pid, argv, err := findProcess("kube-apiserver", fmt.Sprintf("--secure-port=%d", s.apiPort))
		if err != nil {
			return err
		}
		bin, args = argv[0], argv[1:]
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("failed to kill the service kube-apiserver: %w", err)
		}
		// envtest's process waiter reaps it.
		if err := waitUntil(ctx, 30*time.Second, func(context.Context) bool {
			_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
			return os.IsNotExist(err)
		}); err != nil {
			return fmt.Errorf("the killed service kube-apiserver did not go: %w", err)
		}
	}
	time.Sleep(down)
	s.restarts++
	p, err := StartProcess("kube-apiserver", bin, filepath.Join(s.artifacts, fmt.Sprintf("service-apiserver-restarted-%d.log", s.restarts)), args, nil)
	if err != nil {
		return fmt.Errorf("failed to start the service kube-apiserver again: %w", err)
	}
	s.restarted = p
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	return waitUntil(ctx, time.Minute, func(ctx context.Context) bool {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && !p.Exited()
	})
}

// waitUntil polls cond every 250 ms until it holds or d passes.
func waitUntil(ctx context.Context, d time.Duration, cond func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for !cond(ctx) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done within %s: %w", d, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

// findProcess finds the process whose command line starts with a binary
// whose name starts with name and contains arg; it returns its pid and
// argv.
func findProcess(name, arg string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		// The test bed's binaries carry their version: kube-apiserver-v1.33.4.
		if strings.HasPrefix(filepath.Base(argv[0]), name) && slices.Contains(argv[1:], arg) {
			return pid, argv, nil
		}
	}
	return 0, nil, fmt.Errorf("no %s process with %s", name, arg)
}

// CreateNamespace creates a namespace in the service cluster.
func (s *ServiceCluster) CreateNamespace(t T, name string) {
	t.Helper()
	Must(t, s.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}), "create namespace %s", name)
}

// CreateFromFile reads a YAML manifest into obj and creates it. A CRD is
// waited for until it is established.
func (s *ServiceCluster) CreateFromFile(t T, path string, obj ctrlruntimeclient.Object) {
	t.Helper()
	data, err := os.ReadFile(path)
	Must(t, err, "read %s", path)
	Must(t, yaml.Unmarshal(data, obj), "parse %s", path)
	Must(t, s.Client.Create(t.Context(), obj), "create %s", path)
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		s.waitEstablished(t, crd.Name)
	}
}

// WriteFile writes content below the test's artifacts directory.
func WriteFile(t T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(ArtifactsDir(t), name)
	Must(t, os.WriteFile(p, content, 0o600), "write %s", p)
	return p
}
