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

package publisher

import "testing"

// TestGate: a nil gate publishes; a new one is Unknown; Set reports each
// change and only changes, and forgets the other publisher once this agent
// publishes.
func TestGate(t *testing.T) {
	var none *Gate
	if s, _ := none.Get(); s != Publishing {
		t.Errorf("nil gate: %v, want Publishing", s)
	}
	g := NewGate()
	steps := []struct {
		state       State
		other       string
		wantChanged bool
		wantOther   string
	}{
		{Publishing, "", true, ""},
		{Publishing, "", false, ""},
		{Refused, "syncagent.a.eu", true, "syncagent.a.eu"},
		{Refused, "syncagent.a.eu", false, "syncagent.a.eu"},
		{Refused, "syncagent.a.us", true, "syncagent.a.us"},
		{Publishing, "ignored", true, ""},
	}
	if s, _ := g.Get(); s != Unknown {
		t.Fatalf("new gate: %v, want Unknown", s)
	}
	for i, st := range steps {
		if changed := g.Set(st.state, st.other); changed != st.wantChanged {
			t.Errorf("step %d: changed %v, want %v", i, changed, st.wantChanged)
		}
		if s, other := g.Get(); s != st.state || other != st.wantOther {
			t.Errorf("step %d: %v/%q, want %v/%q", i, s, other, st.state, st.wantOther)
		}
	}
}
