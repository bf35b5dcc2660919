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
