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
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// auditLine is one audit event as the kube-apiserver writes it.
func auditLine(t *testing.T, verb, ua, resource, name string, received, done time.Duration, holder *string) string {
	t.Helper()
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	e := map[string]any{
		"stage": "ResponseComplete", "verb": verb, "userAgent": ua,
		"objectRef":                map[string]any{"resource": resource, "namespace": "kcp-system", "name": name},
		"responseStatus":           map[string]any{"code": 200},
		"requestReceivedTimestamp": base.Add(received).Format(time.RFC3339Nano),
		"stageTimestamp":           base.Add(done).Format(time.RFC3339Nano),
	}
	if resource == "leases" {
		e["objectRef"].(map[string]any)["apiGroup"] = "coordination.k8s.io"
		e["requestObject"] = map[string]any{"spec": map[string]any{"holderIdentity": holder}}
	}
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestOneWriter(t *testing.T) {
	const a, b = "api-syncagent/v1 (linux/amd64) host_a", "api-syncagent/v1 (linux/amd64) host_b"
	ida, idb, none := "host_a", "host_b", ""
	s := time.Second
	const c = "api-syncagent/v1 (linux/amd64) host_c"
	idc := "host_c"
	lease := func(ua string, at time.Duration, holder *string) string {
		return auditLine(t, "update", ua, "leases", "syncagent.agent", at, at+10*time.Millisecond, holder)
	}
	otherLease := func(ua string, at time.Duration, holder *string) string {
		return auditLine(t, "update", ua, "leases", "syncagent.second", at, at+10*time.Millisecond, holder)
	}
	write := func(ua string, at time.Duration) string {
		return auditLine(t, "patch", ua, "things", "x", at, at+5*time.Millisecond, nil)
	}
	tests := []struct {
		name  string
		lines []string
		want  int // violations
	}{
		{"a takes over from b", []string{lease(b, 0, &idb), write(b, 1*s), lease(a, 20*s, &ida), write(a, 21*s)}, 0},
		{"the old leader writes after the takeover", []string{lease(b, 0, &idb), lease(a, 20*s, &ida), write(b, 21*s)}, 1},
		{"a write before any holder", []string{write(a, 1*s), lease(a, 2*s, &ida)}, 1},
		{"a write after the Lease was given up", []string{lease(a, 0, &ida), lease(a, 5*s, &none), write(a, 6*s)}, 1},
		{"a write received while its holder's renewal is in flight", []string{lease(a, 0, &ida), lease(a, 2*s, &ida), write(a, 2*s+5*time.Millisecond)}, 0},
		{"Events are not state", []string{lease(b, 0, &idb), auditLine(t, "create", a, "events", "e", 1*s, 1*s, nil)}, 0},
		{"a type named events in another group is state", []string{lease(b, 0, &idb), withGroup(t, auditLine(t, "create", a, "events", "e", 1*s, 1*s, nil), "calendar.example.com")}, 1},
		{"other clients are not the agent", []string{lease(b, 0, &idb), write("kubectl/v1.33", 1*s)}, 0},
		{"another agent's leader writes what is its own", []string{lease(b, 0, &idb), otherLease(c, 0, &idc), write(c, 1*s)}, 0},
		{"another agent's leader writes before its Lease is known", []string{lease(b, 0, &idb), write(c, 1*s), otherLease(c, 2*s, &idc)}, 0},
		{"a replica that held both Leases is judged by this one", []string{lease(b, 0, &idb), otherLease(b, 1*s, &idb), lease(a, 20*s, &ida), write(b, 21*s)}, 1},
		{"a Lease write of another agent that failed still tells its replica", []string{lease(b, 0, &idb), failed(t, otherLease(c, 0, &idc)), write(c, 1*s)}, 0},
		{"a replica of ours that writes another agent's Lease is judged", []string{lease(b, 0, &idb), lease(a, 20*s, &ida), otherLease(b, 21*s, &idb)}, 1},
	}
	for _, tt := range tests {
		vs, _, err := OneWriter(strings.NewReader(strings.Join(tt.lines, "\n")), "kcp-system", "syncagent.agent")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(vs) != tt.want {
			t.Errorf("%s: %d violations %v, want %d", tt.name, len(vs), vs, tt.want)
		}
	}
}

// TestOneWriterJudgesOnlyThisAgent: the count is of this agent's writes, and
// a Lease name the log never saw written is an error, not a pass (every
// replica would be taken for another agent's).
func TestOneWriterJudgesOnlyThisAgent(t *testing.T) {
	const a, c = "api-syncagent/v1 (linux/amd64) host_a", "api-syncagent/v1 (linux/amd64) host_c"
	ida, idc := "host_a", "host_c"
	lines := strings.Join([]string{
		auditLine(t, "update", a, "leases", "syncagent.agent", 0, time.Millisecond, &ida),
		auditLine(t, "update", c, "leases", "syncagent.second", 0, time.Millisecond, &idc),
		auditLine(t, "patch", a, "things", "x", time.Second, time.Second, nil),
		auditLine(t, "patch", c, "things", "y", time.Second, time.Second, nil),
		auditLine(t, "patch", c, "things", "z", time.Second, time.Second, nil),
	}, "\n")
	for lease, want := range map[string]int{"syncagent.agent": 1, "syncagent.second": 2} {
		vs, writes, err := OneWriter(strings.NewReader(lines), "kcp-system", lease)
		if err != nil || len(vs) != 0 || writes != want {
			t.Errorf("%s: %d writes judged, violations %v, error %v; want %d, none, none", lease, writes, vs, err, want)
		}
	}
	if _, _, err := OneWriter(strings.NewReader(lines), "kcp-system", "syncagent.typo"); err == nil {
		t.Error("a Lease the log never saw written passed the check")
	}
}

// failed makes an audit line's response a conflict.
func failed(t *testing.T, line string) string {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	e["responseStatus"] = map[string]any{"code": 409}
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// withGroup sets the API group of an audit line's object.
func withGroup(t *testing.T, line, group string) string {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	e["objectRef"].(map[string]any)["apiGroup"] = group
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
