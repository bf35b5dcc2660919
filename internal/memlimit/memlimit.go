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
// to stay under (the rest: stacks, the binary, memory the runtime has not
// returned yet).
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

// CgroupLimit returns the memory limit in bytes of the cgroup that the
// file procCgroup (/proc/self/cgroup) names under root, cgroup v2 or v1;
// 0 if there is none. A cgroup path that is not visible (a container's
// own cgroup namespace shows "/") is looked up at root itself.
func CgroupLimit(root, procCgroup string) (int64, error) {
	data, err := os.ReadFile(procCgroup)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", procCgroup, err)
	}
	var candidates []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			candidates = append(candidates, filepath.Join(root, parts[2], "memory.max"), filepath.Join(root, "memory.max"))
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			candidates = append(candidates, filepath.Join(root, "memory", parts[2], "memory.limit_in_bytes"), filepath.Join(root, "memory", "memory.limit_in_bytes"))
		}
	}
	for _, path := range candidates {
		content, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
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
	return 0, nil
}
