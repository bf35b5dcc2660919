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
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// Agent is a running agent subprocess.
type Agent struct {
	*Process
	HealthAddress  string
	MetricsAddress string
}

// agentStopGrace is how long a stopped agent may take to shut down.
const agentStopGrace = 30 * time.Second

// StartAgent starts the agent binary with args plus health and metrics
// listeners on free 127.0.0.1 ports (unless args set them). Its log goes to
// the test's artifacts directory; it is stopped when the test ends.
func StartAgent(t T, args ...string) *Agent {
	t.Helper()
	return StartAgentWithEnv(t, nil, args...)
}

// StartAgentWithEnv is StartAgent with extra environment variables
// ("NAME=value") for the agent process, on top of the test's own.
func StartAgentWithEnv(t T, env []string, args ...string) *Agent {
	t.Helper()
	bin, err := RequireEnv(EnvAgentBin)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{}
	if !hasFlag(args, "--health-address") {
		a.HealthAddress = MustFreeAddress(t)
		args = append(args, "--health-address="+a.HealthAddress)
	}
	if !hasFlag(args, "--metrics-address") {
		a.MetricsAddress = MustFreeAddress(t)
		args = append(args, "--metrics-address="+a.MetricsAddress)
	}
	dir := ArtifactsDir(t)
	logPath := filepath.Join(dir, fmt.Sprintf("agent-%d.log", time.Now().UnixNano()))
	p, err := StartProcess("agent", bin, logPath, args, env)
	if err != nil {
		t.Fatal(err)
	}
	a.Process = p
	t.Cleanup(func() { p.Stop(agentStopGrace) })
	// Runs before the stop above: a failed test's output says whether the
	// agent was still running and shows the end of its log, since CI keeps
	// only the test output.
	t.Cleanup(func() {
		if t.Failed() {
			a.logTail(t, failureLogLines)
		}
	})
	return a
}

// failureLogLines is how many of the agent's last non-debug log lines a
// failed test prints.
const failureLogLines = 40

// logTail logs whether the agent is running and its last n log lines that
// are not debug lines.
func (a *Agent) logTail(t T, n int) {
	state := "still running"
	if a.Exited() {
		state = fmt.Sprintf("exited with code %d", a.ExitCode())
	}
	t.Logf("agent log %s (%s), last %d non-debug lines:", filepath.Base(a.LogPath), state, n)
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(a.Logs(), "\n"), "\n") {
		if !strings.Contains(l, "\tDEBUG\t") {
			lines = append(lines, l)
		}
	}
	for _, l := range lines[max(0, len(lines)-n):] {
		t.Logf("agent log | %s", l)
	}
}

// ErrorLines returns the agent's log lines at level ERROR (console or
// JSON format).
func (a *Agent) ErrorLines() []string {
	var out []string
	for _, l := range strings.Split(a.Logs(), "\n") {
		if strings.Contains(l, "\tERROR\t") || strings.Contains(l, `"level":"error"`) {
			out = append(out, l)
		}
	}
	return out
}

// NoErrors fails the test (at once) if the agent logged an ERROR line.
func (a *Agent) NoErrors(t T) {
	t.Helper()
	if lines := a.ErrorLines(); len(lines) > 0 {
		t.Fatalf("the agent logged %d ERROR line(s), the first: %s", len(lines), lines[0])
	}
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// Get performs a GET on one of the agent's HTTP endpoints and returns the
// status code and body.
func Get(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// WaitReady waits until the agent's /readyz answers 200, failing early if
// the agent exits.
func (a *Agent) WaitReady(t T, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, "agent /readyz", func(ctx context.Context) (bool, error) {
		if a.Exited() {
			t.Fatalf("agent exited with code %d; log:\n%s", a.ExitCode(), a.Logs())
		}
		code, body, err := Get(ctx, "http://"+a.HealthAddress+"/readyz")
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("readyz %d: %s", code, body)
		}
		return true, nil
	})
}
