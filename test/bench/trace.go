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
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// passTrace is what our agent's debug log says about the pass that put an
// object's finalizer into kcp ("Sync pass", internal/controller/sync): when
// its event entered the queue, when the pass started, and when its
// finalizer PATCH started and ended. The reference agent logs no such line.
type passTrace struct {
	event, start        time.Time
	patchAt, patchEnded time.Time
}

// traceMessage is the pass trace's log message, stated by value: the bench
// imports no package of the agent, as it measures the reference too.
const traceMessage = "\tSync pass\t"

// readPassTraces reads the passes that wrote a finalizer (metadata) from a
// console-format agent log, by "<cluster>/<name>"; the first such pass of
// an object that handled an event (the one its create caused) wins.
func readPassTraces(path string) (map[string]passTrace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	traces := map[string]passTrace{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, traceMessage)
		if i < 0 {
			continue
		}
		var fields struct {
			Cluster string `json:"cluster"`
			Request struct {
				Name string `json:"name"`
			} `json:"request"`
			Queued string `json:"queued"`
			Event  string `json:"event"`
			Writes string `json:"writes"`
		}
		if err := json.Unmarshal([]byte(line[i+len(traceMessage):]), &fields); err != nil {
			return nil, fmt.Errorf("%s: a pass trace that is not JSON: %w", path, err)
		}
		key := fields.Cluster + "/" + fields.Request.Name
		if _, ok := traces[key]; ok || fields.Event == "" {
			continue
		}
		at, took, ok := metadataWrite(fields.Writes)
		if !ok {
			continue
		}
		event, err := time.Parse(time.RFC3339Nano, fields.Event)
		if err != nil {
			return nil, fmt.Errorf("%s: pass trace of %s: %w", path, key, err)
		}
		queued, err := time.ParseDuration(fields.Queued)
		if err != nil {
			return nil, fmt.Errorf("%s: pass trace of %s: %w", path, key, err)
		}
		start := event.Add(queued)
		traces[key] = passTrace{event: event, start: start, patchAt: start.Add(at), patchEnded: start.Add(at + took)}
	}
	return traces, sc.Err()
}

// metadataWrite finds the successful metadata write (the finalizer PATCH)
// in a trace's writes, "metadata success at 2ms for 310ms, create …".
func metadataWrite(writes string) (at, took time.Duration, ok bool) {
	for w := range strings.SplitSeq(writes, ", ") {
		var op, result, atS, tookS string
		if n, _ := fmt.Sscanf(w, "%s %s at %s for %s", &op, &result, &atS, &tookS); n != 4 || op != "metadata" || result != "success" {
			continue
		}
		var err1, err2 error
		at, err1 = time.ParseDuration(atS)
		took, err2 = time.ParseDuration(tookS)
		return at, took, err1 == nil && err2 == nil
	}
	return 0, 0, false
}
