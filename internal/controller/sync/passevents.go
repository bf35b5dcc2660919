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

package sync

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
)

// passEvents holds the Events a pass records on kcp objects until the pass
// has ended: a pass that ended fenced (this replica may no longer lead, and
// what it found may be the new leader's work under way, such as a copy
// whose record that leader deleted a moment ago, which looks like someone
// else's) records none of them, and is tried again.
type passEvents struct {
	mu     sync.Mutex
	events []passEvent
}

type passEvent struct {
	obj                        ctrlruntimeclient.Object
	eventType, reason, message string
}

// record is the pass's syncer.EventFunc.
func (e *passEvents) record(obj ctrlruntimeclient.Object, eventType, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, passEvent{obj: obj, eventType: eventType, reason: reason, message: message})
}

// flush records the held Events with recorder, in order, unless the pass
// of the run whose context is run ended fenced with err.
func (e *passEvents) flush(run context.Context, err error, recorder record.EventRecorder) {
	e.mu.Lock()
	events := e.events
	e.events = nil
	e.mu.Unlock()
	if lifecycle.Fenced(run, err) {
		return
	}
	for _, ev := range events {
		recorder.Event(ev.obj, ev.eventType, ev.reason, ev.message)
	}
}
