package framework

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Poll interval of all wait helpers.
const pollInterval = 250 * time.Millisecond

// WaitFor polls cond until it returns true, fails the test with what on
// timeout. An error from cond counts as "not yet"; the last one is reported
// on timeout.
func WaitFor(t T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if lastErr != nil {
			t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
