// Package lifecycle holds what every controller does alike when its run
// ends: a pass cut off because the controller stops (leader election lost,
// shutdown, a PublishedResource's controller stopped) is not an error, so
// controller-runtime logs no "Reconciler error" for it and no Event is
// recorded.
package lifecycle

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Stopping reports whether err comes from the end of the run whose context
// is run (not from the deadline of one request).
func Stopping(run context.Context, err error) bool {
	return err != nil && run.Err() != nil && errors.Is(err, context.Canceled)
}

// QuietOnStop wraps a reconciler: a pass that ends with Stopping returns
// neither an error nor a requeue.
func QuietOnStop[T comparable](r reconcile.TypedReconciler[T]) reconcile.TypedReconciler[T] {
	return reconcile.TypedFunc[T](func(ctx context.Context, req T) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if Stopping(ctx, err) {
			return reconcile.Result{}, nil
		}
		return res, err
	})
}
