package framework

import "context"

// T is the part of testing.TB the framework uses. Tests pass their
// *testing.T; the demo (hack/demo) passes its own implementation, so the
// demo and the tests build their environment with the same code.
type T interface {
	Helper()
	Name() string
	Context() context.Context
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
