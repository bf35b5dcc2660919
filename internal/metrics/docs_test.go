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

package metrics

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEveryMetricIsDocumented: every sync_agent_ metric the agent's code
// defines has a row in docs/metrics.md, and every row names one that
// exists.
func TestEveryMetricIsDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	defined := map[string]bool{}
	name := regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(sync_agent_[a-z_]+)"`)
	eachSource(t, func(_, src string) {
		for _, m := range name.FindAllStringSubmatch(src, -1) {
			defined[m[1]] = true
		}
	})
	if len(defined) < 10 {
		t.Fatalf("found only %d metric definitions: the scan is broken", len(defined))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(sync_agent_[a-z_]+)[{`]").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	for _, n := range sortedKeys(defined) {
		if !documented[n] {
			t.Errorf("%s is not documented in docs/metrics.md", n)
		}
	}
	for _, n := range sortedKeys(documented) {
		if !defined[n] {
			t.Errorf("docs/metrics.md documents %s, which the code does not define", n)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// eachSource calls fn with the path and content of every non-test Go file
// of the agent (internal/).
func eachSource(t *testing.T, fn func(path, src string)) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join("..", "..", "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
