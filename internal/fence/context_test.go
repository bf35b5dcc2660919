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

package fence

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestClosed: a context without a fence is never closed; one with a fence
// is closed exactly while the fence refuses writes.
func TestClosed(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	f := New(10*time.Second, logr.Discard())
	f.now = c.now
	ctx := NewContext(context.Background(), f)
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"before the Lease is held", func() {}, true},
		{"held", func() { f.Written(c.now(), true) }, false},
		{"paused past the renew deadline", func() { c.advance(11 * time.Second) }, true},
		{"renewed", func() { f.Written(c.now(), true) }, false},
	}
	for _, s := range steps {
		s.do()
		if got := Closed(ctx); got != s.want {
			t.Fatalf("%s: Closed = %v, want %v", s.name, got, s.want)
		}
	}
	if Closed(context.Background()) {
		t.Error("a context without a fence is closed")
	}
}
