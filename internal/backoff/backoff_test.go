package backoff

import (
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
