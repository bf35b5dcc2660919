// Package backoff computes the capped exponential waits the controllers
// use between retries.
package backoff

import "time"

// Exponential returns the wait after failures earlier consecutive
// failures: initial doubled that many times, at most maxWait.
func Exponential(initial, maxWait time.Duration, failures int) time.Duration {
	return min(initial<<min(max(failures, 0), 20), maxWait)
}
