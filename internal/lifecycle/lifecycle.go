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

// Package lifecycle holds what every controller does alike when its run
// ends: a pass cut off because the controller stops (leader election lost,
// shutdown, a PublishedResource's controller stopped) is not an error, so
// controller-runtime logs no "Reconciler error" for it and no Event is
// recorded.
package lifecycle

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
)

// FencedRetry is when a pass whose write the fence refused is tried again:
// the Lease renewal period. By then this replica has renewed the Lease
// (the pass goes on) or has stopped leading and exits.
const FencedRetry = 2 * time.Second

// Stopping reports whether err comes from the end of the run whose context
// is run (not from the deadline of one request).
func Stopping(run context.Context, err error) bool {
	return err != nil && run.Err() != nil && errors.Is(err, context.Canceled)
}

// Fenced reports whether a pass of the run whose context is run ended with
// err while this replica may have lost the lead: the fence refused one of
// its writes, or it failed while the fence is closed (what it read may be
// the new leader's work under way, a conflict that is not one). Nothing is
// reported (no Event, no condition, no error log) and the pass is tried
// again after FencedRetry.
func Fenced(run context.Context, err error) bool {
	return errors.Is(err, fence.ErrLeaseNotRenewed) || err != nil && fence.Closed(run)
}

// Quiet reports whether a pass that ended with err must not be reported:
// the run stops, or the fence refused a write or is closed.
func Quiet(run context.Context, err error) bool {
	return Stopping(run, err) || Fenced(run, err)
}

// QuietOnStop wraps a reconciler: a pass that ends with Stopping returns
// neither an error nor a requeue; one that ends with Fenced is requeued
// after FencedRetry, without an error.
func QuietOnStop[T comparable](r reconcile.TypedReconciler[T]) reconcile.TypedReconciler[T] {
	return reconcile.TypedFunc[T](func(ctx context.Context, req T) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		return Result(ctx, res, err)
	})
}

// Result is what a reconciler returns for a pass that ended with res, err
// (see QuietOnStop).
func Result(run context.Context, res reconcile.Result, err error) (reconcile.Result, error) {
	switch {
	case Stopping(run, err):
		return reconcile.Result{}, nil
	case Fenced(run, err):
		return reconcile.Result{RequeueAfter: FencedRetry}, nil
	}
	return res, err
}
