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

// Package publisher tells the two publishing controllers whether this
// agent publishes. The apiexport controller decides it from the APIExport's
// record of its agent name's publisher on every pass (export.Publisher);
// the apiresourceschema controller creates no schema and writes no
// condition until that is known, and none while another agent of its name
// publishes. It holds no lock across I/O: only the decision.
package publisher

import "sync"

// State is what the apiexport controller last found.
type State int

const (
	// Unknown: the apiexport controller has not read the export yet.
	Unknown State = iota
	// Publishing: nobody else is recorded as the publisher.
	Publishing
	// Refused: another agent of this name is recorded as the publisher.
	Refused
)

// Gate holds the decision. A nil *Gate always says Publishing: without the
// apiexport controller nothing decides, and the apiresourceschema
// controller works as it always did.
type Gate struct {
	mu    sync.Mutex
	state State
	other string
}

// NewGate returns a gate in state Unknown.
func NewGate() *Gate { return &Gate{} }

// Set records state (other: the publisher recorded instead of this agent,
// for Refused) and reports whether it changed.
func (g *Gate) Set(state State, other string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if state != Refused {
		other = ""
	}
	changed := g.state != state || g.other != other
	g.state, g.other = state, other
	return changed
}

// Get returns the state and, when Refused, the publisher recorded instead.
func (g *Gate) Get() (State, string) {
	if g == nil {
		return Publishing, ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state, g.other
}
