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
)

// TestEndpointOneWriter: a write for an endpoint's workspace must come from
// the replica the endpoint's Lease names at the time, through handovers,
// another partition's writes of the Lease (which keep its holder) and its
// deletion; other agents' replicas and objects of no endpoint are not
// judged.
func TestEndpointOneWriter(t *testing.T) {
	const s = time.Second
	const eu, us, other = "api-syncagent/v1 (linux/amd64) eu-1", "api-syncagent/v1 (linux/amd64) us-1", "api-syncagent/v1 (linux/amd64) second-1"
	ideu, idus, idother, none := "eu-1", "us-1", "second-1", ""
	const endpoint = "endpoint.0123456789abcdef0123.syncagent.x"
	leaders := []string{
		auditLine(t, "update", eu, "leases", "syncagent.x.eu", 0, 0, &ideu),
		auditLine(t, "update", us, "leases", "syncagent.x.us", 0, 0, &idus),
		auditLine(t, "update", other, "leases", "syncagent.second", 0, 0, &idother),
	}
	lease := func(ua string, at time.Duration, holder *string) string {
		return auditLine(t, "update", ua, "leases", endpoint, at, at+10*time.Millisecond, holder)
	}
	write := func(ua, name string, at time.Duration) string {
		return withGroup(t, auditLine(t, "patch", ua, "things", name, at, at+5*time.Millisecond, nil), "example.com")
	}
	tests := []struct {
		name   string
		lines  []string
		want   int // violations
		judged int
	}{
		{"the holder writes", []string{lease(eu, s, &ideu), write(eu, "ws1-a", 2*s)}, 0, 1},
		{"a handover", []string{lease(eu, s, &ideu), write(eu, "ws1-a", 2*s), lease(eu, 20*s, &none), lease(us, 21*s, &idus), write(us, "ws1-a", 22*s)}, 0, 2},
		{"the old holder writes after the handover", []string{lease(eu, s, &ideu), lease(us, 21*s, &idus), write(eu, "ws1-a", 22*s)}, 1, 1},
		{"a write before the Lease", []string{write(eu, "ws1-a", s), lease(eu, 2*s, &ideu)}, 1, 1},
		{"another partition asks for the endpoint: the holder stays", []string{lease(eu, s, &ideu), lease(us, 2*s, &ideu), write(us, "ws1-a", 3*s), write(eu, "ws1-b", 3*s)}, 1, 2},
		{"a write after the Lease was deleted", []string{lease(eu, s, &ideu), auditLine(t, "delete", eu, "leases", endpoint, 2*s, 2*s, nil), write(eu, "ws1-a", 3*s)}, 1, 1},
		{"a write received while the taker's Lease write is in flight", []string{lease(eu, s, &ideu), lease(eu, 20*s, &none), lease(us, 21*s, &idus), write(us, "ws1-a", 21*s+5*time.Millisecond)}, 1, 1},
		{"a failed Lease write changes nothing", []string{lease(eu, s, &ideu), failed(t, lease(us, 2*s, &idus)), write(eu, "ws1-a", 3*s)}, 0, 1},
		{"another agent's replica is not judged", []string{lease(eu, s, &ideu), write(other, "ws1-a", 2*s)}, 0, 0},
		{"objects of no endpoint are not judged", []string{write(us, "state-a", 2*s)}, 0, 0},
	}
	endpointOf := func(o WrittenObject) string {
		if o.Group == "example.com" && strings.HasPrefix(o.Name, "ws1-") {
			return endpoint
		}
		return ""
	}
	for _, tt := range tests {
		lines := append(append([]string{}, leaders...), tt.lines...)
		vs, judged, err := EndpointOneWriter(strings.NewReader(strings.Join(lines, "\n")), "kcp-system", []string{"syncagent.x.eu", "syncagent.x.us"}, endpointOf)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(vs) != tt.want || judged[endpoint] != tt.judged {
			t.Errorf("%s: %d violations %v of %d writes judged, want %d of %d", tt.name, len(vs), vs, judged[endpoint], tt.want, tt.judged)
		}
	}
}
