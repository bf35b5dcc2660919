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

package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// fixture writes files (path relative to a new root: content) and returns
// the root.
func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    int64
		wantErr bool
	}{
		{"v2 in a cgroup namespace", map[string]string{"proc": "0::/\n", "cg/memory.max": "536870912\n"}, 536870912, false},
		{"v2 without a limit", map[string]string{"proc": "0::/\n", "cg/memory.max": "max\n"}, 0, false},
		{"v2 with the cgroup's path visible", map[string]string{"proc": "0::/kubepods/pod1/c1\n", "cg/kubepods/pod1/c1/memory.max": "1048576\n", "cg/memory.max": "max\n"}, 1048576, false},
		{"v2 path not visible", map[string]string{"proc": "0::/kubepods/pod1/c1\n", "cg/memory.max": "2097152\n"}, 2097152, false},
		{"v1", map[string]string{"proc": "4:memory:/docker/abc\n3:cpu:/docker/abc\n0::/\n", "cg/memory/memory.limit_in_bytes": "268435456\n"}, 268435456, false},
		{"v1 with joined controllers", map[string]string{"proc": "5:memory,hugetlb:/x\n", "cg/memory/x/memory.limit_in_bytes": "4096\n"}, 4096, false},
		{"v1 without a limit", map[string]string{"proc": "4:memory:/\n", "cg/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"no cgroup files", map[string]string{"proc": "0::/\n"}, 0, false},
		{"no /proc/self/cgroup", map[string]string{}, 0, false},
		{"v2, a limit on a parent", map[string]string{"proc": "0::/init\n", "cg/init/memory.max": "max\n", "cg/memory.max": "536870912\n"}, 536870912, false},
		{"v2, the smallest of the path", map[string]string{"proc": "0::/pod/c1\n", "cg/pod/c1/memory.max": "3000\n", "cg/pod/memory.max": "2000\n", "cg/memory.max": "4000\n"}, 2000, false},
		{"v1 mounted with joined controllers", map[string]string{"proc": "5:memory,hugetlb:/x\n", "cg/memory,hugetlb/x/memory.limit_in_bytes": "8192\n"}, 8192, false},
		{"garbage", map[string]string{"proc": "0::/\n", "cg/memory.max": "lots\n"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fixture(t, tc.files)
			got, err := CgroupLimit(filepath.Join(root, "cg"), filepath.Join(root, "proc"))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %d, %v; want %d, error %t", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestSet(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	root := fixture(t, map[string]string{"proc": "0::/\n", "cg/memory.max": "1000000000\n"})
	t.Setenv("GOMEMLIMIT", "")
	got, err := Set(filepath.Join(root, "cg"), filepath.Join(root, "proc"))
	if err != nil || got != 900000000 {
		t.Fatalf("got %d, %v; want 900000000", got, err)
	}
	if limit := debug.SetMemoryLimit(-1); limit != 900000000 {
		t.Errorf("the runtime's limit is %d, want 900000000", limit)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "2GiB")
	if got, err := Set(filepath.Join(root, "cg"), filepath.Join(root, "proc")); err != nil || got != 0 {
		t.Errorf("with GOMEMLIMIT set: got %d, %v; want 0 (left to the runtime)", got, err)
	}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set the limit was changed to %d", limit)
	}
}
