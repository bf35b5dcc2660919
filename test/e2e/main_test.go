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
