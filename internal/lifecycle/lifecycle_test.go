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

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
)

func TestQuietOnStop(t *testing.T) {
	stopped, stop := context.WithCancel(context.Background())
	stop()
	failed := errors.New("boom")
	canceled := fmt.Errorf("client rate limiter Wait returned an error: %w", context.Canceled)
	tests := []struct {
		name    string
		ctx     context.Context
		err     error
		wantErr bool
	}{
		{name: "cut off by the end of the run", ctx: stopped, err: canceled},
		{name: "cut off, joined with a status write cut off too", ctx: stopped, err: errors.Join(canceled, canceled)},
		{name: "a real failure while stopping is still reported", ctx: stopped, err: failed, wantErr: true},
		{name: "a canceled request of a running controller is reported", ctx: context.Background(), err: canceled, wantErr: true},
		{name: "a deadline is reported", ctx: stopped, err: context.DeadlineExceeded, wantErr: true},
		{name: "success", ctx: context.Background()},
		{name: "a write the fence refused", ctx: context.Background(), err: fmt.Errorf("failed to patch: %w", fence.ErrLeaseNotRenewed)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				return reconcile.Result{RequeueAfter: time.Second}, tt.err
			})
			res, err := QuietOnStop[reconcile.Request](inner).Reconcile(tt.ctx, reconcile.Request{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want an error: %v", err, tt.wantErr)
			}
			switch quiet := tt.err != nil && !tt.wantErr; {
			case quiet && Fenced(tt.ctx, tt.err) && res.RequeueAfter != FencedRetry:
				t.Errorf("a pass the fence cut off is not tried again after %s: %+v", FencedRetry, res)
			case quiet && !Fenced(tt.ctx, tt.err) && !res.IsZero():
				t.Errorf("a pass cut off by the stop asks for a requeue: %+v", res)
			}
		})
	}
}

// TestStopping: only a cancellation of the controller's own context counts
// as "the controller stops"; a request's deadline or a cancellation while
// the controller runs is a failure.
func TestStopping(t *testing.T) {
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	patchErr := fmt.Errorf("failed to add the finalizer: %w", context.Canceled)
	tests := []struct {
		name string
		run  context.Context
		err  error
		want bool
	}{
		{"the controller stopped during a request", stopped, patchErr, true},
		{"no error", stopped, nil, false},
		{"a request's deadline while stopping", stopped, fmt.Errorf("get: %w", context.DeadlineExceeded), false},
		{"a canceled request while the controller runs", context.Background(), patchErr, false},
		{"another error while stopping", stopped, errors.New("forbidden"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Stopping(tt.run, tt.err); got != tt.want {
				t.Errorf("Stopping = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFencedWhileClosed: a pass that fails while the fence is closed is
// fenced (quiet, tried again), though the fence refused none of its
// writes; with the fence open, or without one, the failure is reported.
func TestFencedWhileClosed(t *testing.T) {
	failed := errors.New("the local object belongs to someone else")
	held := fence.New(time.Hour, logr.Discard())
	held.Written(time.Now(), true)
	tests := []struct {
		name string
		run  context.Context
		err  error
		want bool
	}{
		{"failed while the fence is closed", fence.NewContext(context.Background(), fence.New(time.Hour, logr.Discard())), failed, true},
		{"succeeded while the fence is closed", fence.NewContext(context.Background(), fence.New(time.Hour, logr.Discard())), nil, false},
		{"failed while the fence is open", fence.NewContext(context.Background(), held), failed, false},
		{"failed without leader election", context.Background(), failed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Fenced(tt.run, tt.err); got != tt.want {
				t.Errorf("Fenced = %v, want %v", got, tt.want)
			}
			res, err := Result(tt.run, reconcile.Result{}, tt.err)
			if tt.want && (err != nil || res.RequeueAfter != FencedRetry) {
				t.Errorf("Result = %+v, %v; want a quiet retry after %s", res, err, FencedRetry)
			}
		})
	}
}
