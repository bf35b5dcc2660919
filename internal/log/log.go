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

// Package log builds the agent's zap logger and installs it as the logger of
// controller-runtime and klog.
package log

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"k8s.io/klog/v2"
	ctrlruntimelog "sigs.k8s.io/controller-runtime/pkg/log"
)

// New returns a logger writing to stderr in the given format ("JSON" or
// "Console", case-insensitive), at debug level when debug is set.
func New(format string, debug bool) (logr.Logger, error) {
	level := zapcore.InfoLevel
	if debug {
		level = zapcore.DebugLevel
	}
	var cfg zap.Config
	switch {
	case strings.EqualFold(format, "JSON"):
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	case strings.EqualFold(format, "Console"):
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
	default:
		return logr.Logger{}, fmt.Errorf("unknown log format %q", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.Sampling = nil
	cfg.DisableStacktrace = !debug

	z, err := cfg.Build()
	if err != nil {
		return logr.Logger{}, fmt.Errorf("failed to build logger: %w", err)
	}
	l := zapr.NewLogger(z)
	ctrlruntimelog.SetLogger(l)
	klog.SetLogger(l)
	return l, nil
}
