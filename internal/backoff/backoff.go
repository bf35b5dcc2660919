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

// Package backoff computes the capped exponential waits the controllers
// use between retries, and waits them.
package backoff

import (
	"context"
	"time"
)

// Sleep waits d; false if ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Exponential returns the wait after failures earlier consecutive
// failures: initial doubled that many times, at most maxWait.
func Exponential(initial, maxWait time.Duration, failures int) time.Duration {
	return min(initial<<min(max(failures, 0), 20), maxWait)
}
