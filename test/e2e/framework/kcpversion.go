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
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EnvKcpVersion is the version of the test bed's kcp (KCP_BIN), set by the
// Makefile from its KCP_VERSION: a kcp built from source does not report its
// own release.
const EnvKcpVersion = "KCP_VERSION"

// KcpMinor returns the minor version of the test bed's kcp (32 for 0.32.2).
func KcpMinor() (int, error) {
	v := os.Getenv(EnvKcpVersion)
	if v == "" {
		return 0, fmt.Errorf("$%s is not set; run the e2e tests through `make test-e2e`, which sets it", EnvKcpVersion)
	}
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || parts[0] != "0" {
		return 0, fmt.Errorf("$%s=%q is not a kcp version 0.<minor>[.<patch>]", EnvKcpVersion, v)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, fmt.Errorf("$%s=%q: %w", EnvKcpVersion, v, err)
	}
	return minor, nil
}

// Skipper is the part of testing.TB that skips a test.
type Skipper interface {
	T
	Skipf(format string, args ...any)
}

// RequireKcpMinor skips the test when the test bed's kcp is older than
// 0.<minor>: what it tests does not exist there (why says what).
func RequireKcpMinor(t Skipper, minor int, why string) {
	t.Helper()
	got, err := KcpMinor()
	if err != nil {
		t.Fatal(err)
	}
	if got < minor {
		t.Skipf("kcp 0.%d: %s needs kcp 0.%d or newer", got, why, minor)
	}
}
