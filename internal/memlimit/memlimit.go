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

// Package memlimit gives the Go runtime a soft memory limit below the
// container's. Without one, the garbage collector lets the heap grow to
// twice what is live before it collects: an agent whose live memory fits
// its container's limit comfortably can still be killed for running out of
// memory. With the limit, the collector works harder as the heap nears it.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// Share is the part of the container's memory limit the Go runtime aims
// to keep the memory it manages under (heap, stacks and its own
// structures, returned memory aside); the rest is for what it does not
// manage: the binary's mapping, memory outside Go, the kernel's share.
const Share = 0.9

// unlimited is where cgroup v1 reports "no limit" (a page-rounded
// MaxInt64); any larger limit is none.
const unlimited = int64(1) << 62

// Set sets the runtime's memory limit to Share of the memory limit of the
// process's cgroup (CgroupLimit), unless GOMEMLIMIT (the runtime's own
// setting) is set or there is no limit. It returns the limit it set, 0 if
// none. In a container: Set("/sys/fs/cgroup", "/proc/self/cgroup").
func Set(root, procCgroup string) (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := CgroupLimit(root, procCgroup)
	if err != nil || limit == 0 {
		return 0, err
	}
	soft := int64(float64(limit) * Share)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// CgroupLimit returns the memory limit in bytes of the process's cgroup,
// which the file procCgroup (/proc/self/cgroup) names, under root
// (/sys/fs/cgroup), cgroup v2 or v1; 0 if there is none. A parent's limit
// bounds its children, so the smallest limit from the cgroup up to root
// counts; a cgroup path that is not visible (a container's own cgroup
// namespace shows "/") contributes what root shows.
func CgroupLimit(root, procCgroup string) (int64, error) {
	data, err := os.ReadFile(procCgroup)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", procCgroup, err)
	}
	var limit int64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mounts []string
		file := "memory.max"
		switch {
		case parts[0] == "0" && parts[1] == "":
			mounts = []string{root}
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			// v1: the memory controller's hierarchy, mounted alone or
			// with the controllers it is joined with.
			mounts, file = []string{filepath.Join(root, "memory"), filepath.Join(root, parts[1])}, "memory.limit_in_bytes"
		default:
			continue
		}
		for _, mount := range mounts {
			l, err := smallestUp(mount, parts[2], file)
			if err != nil {
				return 0, err
			}
			limit = smaller(limit, l)
		}
	}
	return limit, nil
}

// smallestUp returns the smallest limit in file from mount/path up to
// mount, 0 if none.
func smallestUp(mount, path, file string) (int64, error) {
	var limit int64
	dir := filepath.Join(mount, path)
	for {
		l, err := readLimit(filepath.Join(dir, file))
		if err != nil {
			return 0, err
		}
		limit = smaller(limit, l)
		if dir == mount || !strings.HasPrefix(dir, mount) {
			return limit, nil
		}
		dir = filepath.Dir(dir)
	}
}

// smaller returns the smaller of two limits, 0 meaning none.
func smaller(a, b int64) int64 {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// readLimit reads a limit file: 0 for a missing file, "max" or an
// unlimited value.
func readLimit(path string) (int64, error) {
	content, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	value := strings.TrimSpace(string(content))
	if value == "max" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s holds %q, no memory limit: %w", path, value, err)
	}
	if limit <= 0 || limit >= unlimited {
		return 0, nil
	}
	return limit, nil
}
