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

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// testKcp is the one kcp server of this test run, shared by all tests; each
// test isolates itself in its own organisation workspace.
var testKcp *framework.Kcp

// envNoSharedKcp, when set, skips starting testKcp: for runs of tests that
// start their own kcp only (make soak).
const envNoSharedKcp = "E2E_NO_SHARED_KCP"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	framework.DiscardControllerRuntimeLogs()
	if os.Getenv(envNoSharedKcp) != "" {
		return m.Run() // the tests selected start their own kcp (the soak)
	}
	bin, err := framework.RequireEnv(framework.EnvKcpBin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "api-syncagent-e2e-kcp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	logDir := os.Getenv(framework.EnvArtifacts)
	if logDir == "" {
		logDir = dir
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	k, err := framework.StartKcp(context.Background(), bin, dir, logDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer k.Stop()
	fmt.Printf("kcp is running at %s (log: %s)\n", k.BaseURL, filepath.Clean(k.LogPath()))

	testKcp = k
	return m.Run()
}
