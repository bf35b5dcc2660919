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

//go:build e2e && soak

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// opLog records every operation and fault with its time.
type opLog struct {
	start  time.Time
	mu     sync.Mutex
	lines  []string
	counts map[string]int
}

func (l *opLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	l.lines = append(l.lines, fmt.Sprintf("%8.3fs %s", time.Since(l.start).Seconds(), line))
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[strings.TrimSuffix(strings.Fields(line)[0], ":")]++
}

// soakExplainLines bounds the history printed per violation.
const soakExplainLines = 30

// explain lists the operations on a violation's kcp object (by workspace
// and name) and every fault and administrator change, the latest last.
func (l *opLog) explain(v invariant.Violation) string {
	cluster, rest, ok := strings.Cut(strings.Fields(v.Object)[0], "|")
	if !ok {
		return "" // a service-side object: grep the operation log for its name
	}
	name := rest[strings.LastIndex(rest, "/")+1:]
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		fields := strings.Fields(line)
		touched := strings.Contains(line, "ws="+cluster) && slices.Contains(fields, name)
		if touched || strings.Contains(line, " fault-") || strings.Contains(line, " admin-") {
			out = append(out, line)
		}
	}
	if len(out) > soakExplainLines {
		out = out[len(out)-soakExplainLines:]
	}
	return "\n    history (operations on it, faults, administrator):\n      " + strings.Join(out, "\n      ")
}

func (l *opLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, v := range l.counts {
		out = append(out, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func (l *opLog) write(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	path := filepath.Join(framework.ArtifactsDir(t), "soak-ops.log")
	if err := os.WriteFile(path, []byte(strings.Join(l.lines, "\n")+"\n"), 0o644); err != nil {
		t.Logf("failed to write the operation log: %v", err)
		return
	}
	t.Logf("operation log: %s", path)
}
