// Package logtest holds loggers for tests: it must not be imported by the
// agent's own code.
package logtest

import (
	"sync/atomic"

	"github.com/go-logr/logr"
)

// ErrorCounter is a logr.LogSink that counts the ERROR lines logged
// through it and drops everything else.
type ErrorCounter struct{ n atomic.Int32 }

// Errors is the number of ERROR lines logged so far.
func (e *ErrorCounter) Errors() int32 { return e.n.Load() }

func (*ErrorCounter) Init(logr.RuntimeInfo)            {}
func (*ErrorCounter) Enabled(int) bool                 { return true }
func (*ErrorCounter) Info(int, string, ...any)         {}
func (e *ErrorCounter) Error(error, string, ...any)    { e.n.Add(1) }
func (e *ErrorCounter) WithValues(...any) logr.LogSink { return e }
func (e *ErrorCounter) WithName(string) logr.LogSink   { return e }
