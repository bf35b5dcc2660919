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

// Package framework runs the e2e test bed: one real kcp server per test run,
// a real kube-apiserver + etcd (envtest) per test as the service cluster, the
// fixtures in kcp (organisation workspace, APIExport, consumer workspaces,
// the agent's RBAC) and the agent binary as a subprocess. Every server
// listens on 127.0.0.1 only.
package framework

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"

	ctrlruntimelog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Environment variables that point to the test bed binaries (set by the Makefile).
const (
	EnvKcpBin           = "KCP_BIN"
	EnvKubeAPIServerBin = "TEST_ASSET_KUBE_APISERVER"
	EnvEtcdBin          = "TEST_ASSET_ETCD"
	EnvKubectlBin       = "TEST_ASSET_KUBECTL"
	EnvAgentBin         = "AGENT_BIN"
	EnvArtifacts        = "ARTIFACTS"
)

// RequireEnv returns the value of an environment variable that names an
// existing file, or fails the test run with a hint to use the Makefile.
func RequireEnv(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("$%s is not set; run the e2e tests through `make test-e2e`, which builds the test bed", name)
	}
	if _, err := os.Stat(v); err != nil {
		return "", fmt.Errorf("$%s=%q: %w", name, v, err)
	}
	return v, nil
}

// ArtifactsDir returns (and creates) the directory for logs of the current
// test: $ARTIFACTS/<test name>, or a directory below the system temp dir. A
// T without a name (the demo) gets $ARTIFACTS itself.
func ArtifactsDir(t T) string {
	t.Helper()
	base := os.Getenv(EnvArtifacts)
	if base == "" {
		base = filepath.Join(os.TempDir(), "api-syncagent-e2e")
	}
	dir := base
	if t.Name() != "" {
		dir = filepath.Join(base, sanitize(t.Name()))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("failed to create artifacts dir: %v", err)
	}
	return dir
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

func sanitize(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// DiscardControllerRuntimeLogs gives controller-runtime (used by envtest and
// the clients) a logger, so it does not complain about the missing one. The
// servers' and the agent's own logs go to the artifacts directory.
func DiscardControllerRuntimeLogs() { ctrlruntimelog.SetLogger(logr.Discard()) }

// Ports for the test servers come from below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range starts at 32768 by default). A port the
// kernel picked for "127.0.0.1:0" can be handed out again as the source port
// of any outgoing connection between our check and the server's bind, and
// the server then fails with "address already in use"; ports below the range
// are only ever taken by listeners.
const (
	firstTestPort = 20000
	lastTestPort  = 32767
)

var (
	portOnce sync.Once
	nextPort atomic.Int64
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It
// walks the test port range from a random start, so parallel test binaries
// rarely try the same ports.
func FreePort() (int, error) {
	portOnce.Do(func() {
		nextPort.Store(firstTestPort + mathrand.Int64N(lastTestPort-firstTestPort+1))
	})
	for range lastTestPort - firstTestPort + 1 {
		p := firstTestPort + (nextPort.Add(1)-firstTestPort)%(lastTestPort-firstTestPort+1)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		_ = l.Close()
		return int(p), nil
	}
	return 0, fmt.Errorf("no free port in %d-%d on 127.0.0.1", firstTestPort, lastTestPort)
}

// MustFreeAddress returns "127.0.0.1:<free port>".
func MustFreeAddress(t T) string {
	t.Helper()
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// RandomName returns prefix plus a random lowercase suffix, usable as a
// workspace or object name.
func RandomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strings.ToLower(prefix + "-" + hex.EncodeToString(b))
}
