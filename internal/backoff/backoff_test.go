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

package backoff

import (
	"context"
	"testing"
	"time"
)

func TestExponential(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{0, time.Second}, {1, 2 * time.Second}, {3, 8 * time.Second}, {8, 256 * time.Second}, {9, 5 * time.Minute}, {1000, 5 * time.Minute}, {-1, time.Second},
	} {
		if got := Exponential(time.Second, 5*time.Minute, tc.failures); got != tc.want {
			t.Errorf("Exponential(1s, 5m, %d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

// TestSleep: a wait ends with its duration, or at once when its context
// ends.
func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep of 1 ms with a live context returned false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context returned true")
	}
}
