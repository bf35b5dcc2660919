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

// Package health serves /healthz and /readyz. Unlike the reference agent,
// whose listener answered 404 on both paths, every check here is real:
// /healthz reports that the process serves requests, /readyz runs the
// registered readiness checks and answers 500 while any of them fails.
package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Check returns nil when the checked thing is healthy.
type Check func(ctx context.Context) error

// checkTimeout bounds a single /readyz evaluation so a hanging dependency
// (kcp, the service cluster) turns into a failed check instead of a hung probe.
const checkTimeout = 5 * time.Second

// Server holds named readiness checks and serves them over HTTP.
type Server struct {
	mu     sync.RWMutex
	checks map[string]Check
}

// NewServer returns a Server without checks.
func NewServer() *Server {
	return &Server{checks: map[string]Check{}}
}

// AddReadyCheck registers (or replaces) a named readiness check.
func (s *Server) AddReadyCheck(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

// Handler returns the HTTP handler for /healthz and /readyz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", s.serveReady)
	return mux
}

// Ready runs all checks and returns one line per check and whether all passed.
func (s *Server) Ready(ctx context.Context) (report string, ok bool) {
	s.mu.RLock()
	names := make([]string, 0, len(s.checks))
	for name := range s.checks {
		names = append(names, name)
	}
	checks := make(map[string]Check, len(s.checks))
	for name, c := range s.checks {
		checks[name] = c
	}
	s.mu.RUnlock()
	sort.Strings(names)

	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()

	ok = true
	var b strings.Builder
	for _, name := range names {
		if err := checks[name](ctx); err != nil {
			ok = false
			fmt.Fprintf(&b, "[-] %s failed: %v\n", name, err)
		} else {
			fmt.Fprintf(&b, "[+] %s ok\n", name)
		}
	}
	if len(names) == 0 {
		ok = false
		b.WriteString("[-] no readiness checks registered yet\n")
	}
	return b.String(), ok
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	report, ok := s.Ready(r.Context())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !ok {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = fmt.Fprint(w, report)
}

// Serve listens on addr and serves until ctx is cancelled. The listener is
// opened before Serve returns its error channel, so bind errors surface at once.
func (s *Server) Serve(ctx context.Context, addr string) (<-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("failed to listen on health address %q: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	return done, nil
}

// Cached wraps a check so that its result is reused for ttl. Probes arrive
// every few seconds from every kubelet; a cached result keeps them from
// turning into a steady request stream against kcp.
func Cached(ttl time.Duration, c Check) Check {
	var (
		mu      sync.Mutex
		last    time.Time
		lastErr error
	)
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if !last.IsZero() && time.Since(last) < ttl {
			return lastErr
		}
		lastErr = c(ctx)
		last = time.Now()
		return lastErr
	}
}

// Flag is a readiness check backed by a boolean that becomes true once.
type Flag struct {
	mu     sync.RWMutex
	set    bool
	reason string
}

// NewFlag returns an unset flag whose check fails with reason.
func NewFlag(reason string) *Flag { return &Flag{reason: reason} }

// Set marks the flag as done.
func (f *Flag) Set() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = true
}

// Check implements Check.
func (f *Flag) Check(context.Context) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.set {
		return errors.New(f.reason)
	}
	return nil
}
