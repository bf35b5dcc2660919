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
	"os/exec"
	"regexp"
	"sync"
	"time"
)

// kcpOptionsTimeout bounds `kcp start options`, which only prints.
const kcpOptionsTimeout = time.Minute

// kcpStartFlags caches the flags each kcp binary's `start` takes, by path.
var kcpStartFlags sync.Map // string -> map[string]bool

var flagName = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)

// parseStartOptions returns the flag names `kcp start options` lists.
func parseStartOptions(out []byte) map[string]bool {
	flags := map[string]bool{}
	for _, m := range flagName.FindAllSubmatch(out, -1) {
		flags[string(m[1])] = true
	}
	return flags
}

// KcpStartFlags returns the flags the kcp binary's `start` takes, as
// `kcp start options` lists them: kcp versions differ (kcp ≥ 0.31 no longer
// takes --external-hostname), so the test bed asks the binary instead of
// assuming one version.
func KcpStartFlags(ctx context.Context, bin string) (map[string]bool, error) {
	if flags, ok := kcpStartFlags.Load(bin); ok {
		return flags.(map[string]bool), nil
	}
	ctx, cancel := context.WithTimeout(ctx, kcpOptionsTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "start", "options").Output()
	if err != nil {
		return nil, fmt.Errorf("failed to list the flags of %s start: %w", bin, err)
	}
	flags := parseStartOptions(out)
	// Every kcp lists its port flag; without it the output is not what we
	// parse, and every optional flag would silently be left out.
	if !flags["secure-port"] {
		return nil, fmt.Errorf("%s start options lists no --secure-port; cannot tell which flags it takes", bin)
	}
	kcpStartFlags.Store(bin, flags)
	return flags, nil
}

// versionedKcpArgs returns the flags of `kcp start` that only some kcp
// versions take, for the binary bin.
func versionedKcpArgs(ctx context.Context, bin string) ([]string, error) {
	flags, err := KcpStartFlags(ctx, bin)
	if err != nil {
		return nil, err
	}
	var args []string
	if flags["external-hostname"] {
		args = append(args, "--external-hostname=127.0.0.1")
	}
	return args, nil
}
