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

package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLeasesOfWriters: each written object of the group maps to the Leases
// of the replicas that wrote it; a replica belongs to the Lease it wrote
// as holder (not to one it only tried, or wrote naming another); writes of
// other groups are left out.
func TestLeasesOfWriters(t *testing.T) {
	const s = time.Second
	eu, us := "api-syncagent/v1 (linux/amd64) eu-1", "api-syncagent/v1 (linux/amd64) us-1"
	ideu, idus := "eu-1", "us-1"
	lines := []string{
		auditLine(t, "update", eu, "leases", "syncagent.x.eu", 0, s, &ideu),
		auditLine(t, "update", us, "leases", "syncagent.x.us", 0, s, &idus),
		// us-1 writes eu's Lease naming eu-1 (never happens, but it
		// must not make us-1 a replica of eu).
		auditLine(t, "update", us, "leases", "syncagent.x.eu", 2*s, 2*s, &ideu),
		// The eu agent holds an endpoint's Lease: it stays a replica of eu.
		auditLine(t, "update", eu, "leases", "endpoint.0123456789abcdef0123.syncagent.x", 2*s, 2*s, &ideu),
		withGroup(t, auditLine(t, "patch", eu, "things", "a", 3*s, 3*s, nil), "example.com"),
		withGroup(t, auditLine(t, "create", us, "things", "b", 3*s, 3*s, nil), "example.com"),
		withGroup(t, auditLine(t, "patch", eu, "things", "both", 3*s, 3*s, nil), "example.com"),
		withGroup(t, auditLine(t, "patch", us, "things", "both", 4*s, 4*s, nil), "example.com"),
		withGroup(t, auditLine(t, "patch", "api-syncagent/v1 (linux/amd64) stray", "things", "stray", 4*s, 4*s, nil), "example.com"),
		withGroup(t, auditLine(t, "patch", eu, "gadgets", "g", 4*s, 4*s, nil), "other.example.com"),
		auditLine(t, "get", eu, "things", "read", 4*s, 4*s, nil),
	}
	got, err := LeasesOfWriters(strings.NewReader(strings.Join(lines, "\n")), "kcp-system", "example.com")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]bool{
		"things.example.com kcp-system/a":     {"syncagent.x.eu": true},
		"things.example.com kcp-system/b":     {"syncagent.x.us": true},
		"things.example.com kcp-system/both":  {"syncagent.x.eu": true, "syncagent.x.us": true},
		"things.example.com kcp-system/stray": {"": true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
