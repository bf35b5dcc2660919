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

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadPassTraces reads the finalizer pass of each object from an agent
// log in the console format: the first pass that handled an event and
// wrote metadata; requeued passes, passes without the finalizer and other
// lines are skipped.
func TestReadPassTraces(t *testing.T) {
	log := `2026-11-26T17:06:46.001Z	INFO	app/app.go:144	Starting api-syncagent	{"version": "x"}
2026-11-26T17:06:46.050Z	DEBUG	syncagent-sync	sync/controller.go:529	Sync pass	{"publishedresource": "things", "cluster": "ws1", "request": {"name":"quiet-00","namespace":"default"}, "took": "10ms", "writes": "metadata success at 0s for 9ms"}
2026-11-26T17:06:46.096Z	DEBUG	syncagent-sync	sync/controller.go:529	Sync pass	{"publishedresource": "things", "cluster": "ws1", "request": {"name":"quiet-00","namespace":"default"}, "took": "72.549ms", "queued": "65µs", "event": "2026-11-26T17:06:46.023390531Z", "writes": "metadata success at 1ms for 63ms, create success at 64ms for 3ms", "requeueAfter": "2s"}
2026-11-26T17:06:46.104Z	DEBUG	syncagent-sync	sync/controller.go:529	Sync pass	{"publishedresource": "things", "cluster": "ws1", "request": {"name":"quiet-00","namespace":"default"}, "took": "107µs", "queued": "23.839ms", "event": "2026-11-26T17:06:46.080645596Z", "writes": "metadata success at 0s for 1ms"}
2026-11-26T17:06:46.110Z	DEBUG	syncagent-sync	sync/controller.go:529	Sync pass	{"publishedresource": "things", "cluster": "ws2", "request": {"name":"quiet-00","namespace":"default"}, "took": "5ms", "queued": "2ms", "event": "2026-11-26T17:06:46.100Z", "writes": "metadata conflict at 0s for 5ms"}
2026-11-26T17:06:46.119Z	DEBUG	syncagent-sync	sync/controller.go:529	Sync pass	{"publishedresource": "things", "cluster": "ws2", "request": {"name":"quiet-00","namespace":"default"}, "took": "86.417ms", "queued": "8ms", "event": "2026-11-26T17:06:46.025Z", "writes": "create success at 0s for 3ms, metadata success at 3ms for 79ms"}
`
	path := filepath.Join(t.TempDir(), "agent.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readPassTraces(path)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	start1 := at("2026-11-26T17:06:46.023455531Z")
	start2 := at("2026-11-26T17:06:46.033Z")
	want := map[string]passTrace{
		"ws1/quiet-00": {event: at("2026-11-26T17:06:46.023390531Z"), start: start1, patchAt: start1.Add(time.Millisecond), patchEnded: start1.Add(64 * time.Millisecond)},
		"ws2/quiet-00": {event: at("2026-11-26T17:06:46.025Z"), start: start2, patchAt: start2.Add(3 * time.Millisecond), patchEnded: start2.Add(82 * time.Millisecond)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d traces, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if g := got[k]; !g.event.Equal(w.event) || !g.start.Equal(w.start) || !g.patchAt.Equal(w.patchAt) || !g.patchEnded.Equal(w.patchEnded) {
			t.Errorf("%s: got %+v, want %+v", k, g, w)
		}
	}

	if err := os.WriteFile(path, []byte("x\tSync pass\t{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readPassTraces(path); err == nil {
		t.Error("a broken trace line was not reported")
	}
}
