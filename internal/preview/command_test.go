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

package preview

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCommand runs the preview command on the files under testdata and
// compares its output and exit status with the golden files
// (UPDATE_GOLDEN=1 rewrites them).
func TestCommand(t *testing.T) {
	crd := filepath.Join("testdata", "database", "crd.yaml")
	for _, tc := range []struct {
		name   string
		args   []string
		status int
	}{{
		name: "database",
		args: []string{"-f", "testdata/database/publishedresource.yaml", "--crd", crd, "--object", "testdata/database/objects.yaml", "--workspace", "2h7vq0xzr3m1"},
	}, {
		name: "deletion-and-namespace-metadata",
		args: []string{"-f", "testdata/deletion/publishedresource.yaml", "--crd", crd, "--object", "testdata/deletion/objects.yaml", "-o", "json",
			"--namespace-label", "tenant={{ .ClusterName }}", "--namespace-annotation", "example.com/owner=kcp"},
	}, {
		name: "references",
		args: []string{"-f", "testdata/references/publishedresource.yaml", "--crd", "testdata/references/crd.yaml", "--object", "testdata/references/objects.yaml", "--workspace", "2h7vq0xzr3m1", "-o", "json"},
	}, {
		name: "imports",
		args: []string{"-f", "testdata/database/publishedresource.yaml", "--crd", crd, "--object", "testdata/database/objects.yaml",
			"--service-object", "testdata/imports/service-objects.yaml", "--workspace", "2h7vq0xzr3m1", "-o", "json"},
	}, {
		name:   "bad-namespace-label",
		args:   []string{"-f", "testdata/deletion/publishedresource.yaml", "--crd", crd, "--namespace-label", "syncagent.kcp.io/x=y"},
		status: 2,
	}, {
		name:   "invalid",
		args:   []string{"-f", "testdata/invalid/publishedresource.yaml", "--crd", crd},
		status: 1,
	}, {
		name: "filtered",
		args: []string{"-f", "testdata/filtered/publishedresource.yaml", "--crd", crd, "--object", "testdata/filtered/objects.yaml", "-o", "json", "--agent-name", "db-agent"},
	}, {
		name:   "wrong-kind",
		args:   []string{"-f", "testdata/filtered/publishedresource.yaml", "--crd", crd, "--object", "testdata/database/objects.yaml"},
		status: 1,
	}, {
		name: "edge",
		args: []string{"-f", "testdata/edge/publishedresource.yaml", "--crd", crd, "--object", "testdata/edge/objects.yaml", "--workspace-path", "root:ignored", "-o", "json"},
	}, {
		name: "disabled",
		args: []string{"-f", "testdata/disabled/publishedresource.yaml", "--crd", crd, "--object", "testdata/filtered/objects.yaml", "-o", "json"},
	}, {
		name:   "not-a-publishedresource",
		args:   []string{"-f", crd, "--crd", crd},
		status: 1,
	}, {
		name:   "typo",
		args:   []string{"-f", "testdata/typo/publishedresource.yaml", "--crd", crd},
		status: 1,
	}, {
		name:   "no-source",
		args:   []string{"-f", "testdata/filtered/publishedresource.yaml"},
		status: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := Command(tc.args, &stdout, &stderr)
			if status != tc.status {
				t.Errorf("exit status %d, want %d; stderr:\n%s", status, tc.status, stderr.String())
			}
			golden := filepath.Join("testdata", "golden", tc.name+".out")
			got := "stdout:\n" + stdout.String() + "stderr:\n" + stderr.String()
			if os.Getenv("UPDATE_GOLDEN") != "" {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDocsExampleIsCurrent: every code block of docs/preview.md's example
// is output of the golden run, so the page never shows stale output.
func TestDocsExampleIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "preview.md"))
	if err != nil {
		t.Fatal(err)
	}
	var golden []byte
	for _, name := range []string{"database", "invalid"} {
		g, err := os.ReadFile(filepath.Join("testdata", "golden", name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		golden = append(golden, g...)
	}
	blocks := regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```").FindAllSubmatch(doc, -1)
	checked := 0
	for _, b := range blocks {
		if string(b[1]) == "sh" {
			continue // the command
		}
		checked++
		if !bytes.Contains(golden, b[2]) {
			t.Errorf("docs/preview.md shows output the preview does not give (make it a part of testdata/golden/database.out):\n%s", b[2])
		}
	}
	if checked < 4 {
		t.Errorf("checked %d output blocks of docs/preview.md, want 4", checked)
	}
}
