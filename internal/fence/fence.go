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

// Package fence keeps a replica that may have lost the leader Lease from
// writing. Leader election alone does not: a leader that was paused (a
// stopped process, a long GC pause, a frozen node) for longer than the
// lease goes on with the work it had in hand when it resumes, for as long
// as it takes its elector to notice, while the new leader already writes.
//
// The fence knows when this replica last wrote the Lease as its holder (the
// time the write was sent, measured on the monotonic clock, which runs on
// while the process is stopped, and on the wall clock, which also counts a
// suspended machine) and lets the agent's writes through only within
// ValidFor of it. ValidFor is the renew deadline, shorter than the lease
// duration that another replica waits after it last saw the Lease change:
// the difference is the margin for writes in flight.
package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// ErrLeaseNotRenewed: a write was refused because this replica has not
// renewed the leader Lease recently enough to be sure it still holds it.
var ErrLeaseNotRenewed = errors.New("the leader Lease is not renewed")

// ErrEndpointLeaseNotRenewed: a write for a workspace of a virtual
// workspace endpoint was refused because this agent has not renewed the
// endpoint's Lease recently enough to be sure it still serves the
// endpoint. It is an ErrLeaseNotRenewed (errors.Is).
var ErrEndpointLeaseNotRenewed error = endpointLeaseError{}

type endpointLeaseError struct{}

func (endpointLeaseError) Error() string { return "the endpoint's Lease is not renewed" }

func (endpointLeaseError) Is(target error) bool { return target == ErrLeaseNotRenewed }

// Fence tells whether this replica may write.
type Fence struct {
	validFor time.Duration
	now      func() time.Time
	log      logr.Logger
	// err is what a refused write wraps; stops and resumes are logged.
	err            error
	stops, resumes string

	mu sync.Mutex
	// renewed is when the last successful write of the Lease naming this
	// replica as holder was sent; zero: it does not hold the Lease.
	renewed time.Time
	// closed: a write was refused since the last renewal (logged once).
	closed bool
}

// New returns a fence that lets writes through for validFor after each
// renewal; it logs when it starts refusing writes of a replica that held
// the Lease, and when they resume.
func New(validFor time.Duration, log logr.Logger) *Fence {
	return &Fence{validFor: validFor, now: time.Now, log: log, err: ErrLeaseNotRenewed,
		stops:   "Writes stop: the leader Lease was not renewed in time; this replica may no longer lead",
		resumes: "The leader Lease was renewed; writes resume"}
}

// Refusing returns an endpoint fence that refuses every write: that of an
// endpoint this agent does not serve.
func Refusing() *Fence { return NewEndpoint(0, logr.Discard()) }

// NewEndpoint returns the fence of an endpoint's Lease (see New): the
// writes it refuses are those of the passes over the endpoint's
// workspaces, whose requests carry it (WithEndpoint).
func NewEndpoint(validFor time.Duration, log logr.Logger) *Fence {
	return &Fence{validFor: validFor, now: time.Now, log: log, err: ErrEndpointLeaseNotRenewed,
		stops:   "Writes for the endpoint's workspaces stop: its Lease is not held or was not renewed in time",
		resumes: "The endpoint's Lease is held; writes for its workspaces resume"}
}

// Now is the time to pass to Written for a write of the Lease that is
// about to be sent.
func (f *Fence) Now() time.Time { return f.now() }

// Written records a successful write of the Lease, sent at sent, that
// names this replica as holder (held) or gives the Lease up (!held).
func (f *Fence) Written(sent time.Time, held bool) {
	f.mu.Lock()
	reopened := false
	switch {
	case !held:
		f.renewed = time.Time{}
	case sent.After(f.renewed):
		f.renewed = sent
		reopened, f.closed = f.closed, false
	}
	f.mu.Unlock()
	if reopened {
		f.log.Info(f.resumes)
	}
}

// Check returns nil if this replica may write now.
func (f *Fence) Check() error {
	_, err := f.check()
	return err
}

// check returns, if this replica may write now, until when.
func (f *Fence) check() (time.Time, error) {
	f.mu.Lock()
	renewed, now := f.renewed, f.now()
	refused := renewed.IsZero() || age(now, renewed) >= f.validFor
	first := refused && !f.closed && !renewed.IsZero()
	f.closed = f.closed || refused
	f.mu.Unlock()
	switch {
	case !refused:
		return renewed.Add(f.validFor), nil
	case renewed.IsZero():
		return time.Time{}, fmt.Errorf("refusing to write: %w (this replica does not hold it)", f.err)
	}
	a := age(now, renewed).Round(time.Millisecond)
	if first {
		f.log.Info(f.stops, "lastRenewal", a.String()+" ago", "limit", f.validFor.String())
	}
	return time.Time{}, fmt.Errorf("refusing to write: %w since %s (writes stop after %s, until it is renewed)", f.err, a, f.validFor)
}

// age is how long ago renewed was by the monotonic clock (which runs on
// while the process is stopped) or by the wall clock (which also counts a
// suspended machine), whichever is longer.
func age(now, renewed time.Time) time.Duration {
	return max(now.Sub(renewed), now.Round(0).Sub(renewed.Round(0)))
}

// Wrap returns a transport that refuses the writes (POST, PUT, PATCH,
// DELETE) the fence does not let through, without sending them, and those
// the endpoint fence their request's context carries (WithEndpoint) does
// not. f may be nil (no leader election): then only the latter are
// checked. Events are let through: they record what happened and change no
// object.
func (f *Fence) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{fence: f, next: rt}
}

type roundTripper struct {
	fence *Fence
	next  http.RoundTripper
}

// gate is the fences a write must pass: it passes while all are open,
// until the first closes.
type gate []*Fence

func (g gate) check() (time.Time, error) {
	var until time.Time
	for _, f := range g {
		u, err := f.check()
		if err != nil {
			return time.Time{}, err
		}
		if until.IsZero() || u.Before(until) {
			until = u
		}
	}
	return until, nil
}

// RoundTrip sends a write only while the fences are open: a request that
// is still dialling, queued behind a lost connection or retried by HTTP/2
// when the lease runs out is abandoned before it reaches the server
// (bytes already handed to the kernel cannot be called back; the 5 s
// between the renew deadline and the lease duration cover them). The cut
// follows the renewals: a slow write under a lease that keeps being
// renewed is never cut.
func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if !mutating(req.Method) || isEvent(req.URL.Path) {
		return r.next.RoundTrip(req)
	}
	var g gate
	if r.fence != nil {
		g = append(g, r.fence)
	}
	if f := endpointFence(req.Context()); f != nil {
		g = append(g, f)
	}
	if len(g) == 0 {
		return r.next.RoundTrip(req)
	}
	until, err := g.check()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{gate: g, cancel: cancel}
	w.arm(until)
	done := func() {
		w.stop()
		cancel(nil)
	}
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		// The transport reads the body as it sends it: a process stopped
		// after the check above and resumed after the lease ran out (its
		// watchdog fires in the same instant as the send goes on) reads
		// a refusal instead, so the server gets no complete request.
		req.Body = &checkedBody{ReadCloser: req.Body, gate: g}
		if getBody := req.GetBody; getBody != nil {
			req.GetBody = func() (io.ReadCloser, error) {
				b, err := getBody()
				if err != nil {
					return nil, err
				}
				return &checkedBody{ReadCloser: b, gate: g}, nil
			}
		}
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		done()
		if errors.Is(context.Cause(ctx), ErrLeaseNotRenewed) {
			return nil, fmt.Errorf("%s %s: cut off, the write may or may not have been applied: %w", req.Method, req.URL.Path, context.Cause(ctx))
		}
		return nil, err
	}
	resp.Body = &fencedBody{ReadCloser: resp.Body, ctx: ctx, done: done}
	return resp, nil
}

// checkedBody is a write's request body that asks the fence again on every
// read.
type checkedBody struct {
	io.ReadCloser
	gate gate
}

func (b *checkedBody) Read(p []byte) (int, error) {
	if _, err := b.gate.check(); err != nil {
		return 0, err
	}
	return b.ReadCloser.Read(p)
}

// watchdog cuts a write when the fence closes while it is under way: when
// the time runs out it asks the fence again and, if the Lease was renewed
// meanwhile, waits for the new end.
type watchdog struct {
	gate   gate
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func (w *watchdog) arm(until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.timer = time.AfterFunc(time.Until(until), w.fire)
}

func (w *watchdog) fire() {
	until, err := w.gate.check()
	if err != nil {
		w.cancel(fmt.Errorf("%w (the lease ran out while the request was under way)", err))
		return
	}
	w.arm(until)
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// fencedBody ends the write's watchdog when the body is closed and says
// when a read was cut off by the fence.
type fencedBody struct {
	io.ReadCloser
	ctx  context.Context
	done func()
}

func (b *fencedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.ctx), ErrLeaseNotRenewed) {
		err = fmt.Errorf("%w: %w", err, context.Cause(b.ctx))
	}
	return n, err
}

func (b *fencedBody) Close() error {
	defer b.done()
	return b.ReadCloser.Close()
}

func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// isEvent tells whether path is a request for core or events.k8s.io
// Events. kcp paths have /clusters/<name> before the API path, and virtual
// workspace URLs a prefix before that.
func isEvent(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if (p == "api" || p == "apis") && (i == 0 || (i >= 2 && parts[i-2] == "clusters")) {
			parts = parts[i:]
			break
		}
	}
	switch {
	case len(parts) > 2 && parts[0] == "api" && parts[1] == "v1":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis" && parts[1] == "events.k8s.io":
		parts = parts[3:]
	default:
		return false
	}
	if len(parts) > 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return parts[0] == "events"
}
