package conditions

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/retry"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Writer writes PublishedResource status for one controller. Each write is a
// JSON merge patch computed against the object it was derived from, with
// optimistic locking, so a controller working on a stale copy conflicts and
// retries on a fresh one instead of overwriting another controller's
// condition. Writes happen only when the status differs.
//
// Against an old PublishedResource CRD without the conditions and
// observedGeneration fields (contract §1.1), the API server prunes them.
// The Writer notices that once, logs a hint and from then on compares and
// writes only the fields the CRD keeps, so it never loops.
type Writer struct {
	Client ctrlruntimeclient.Client
	// Reader reads fresh objects after a conflict (the manager's API reader).
	Reader     ctrlruntimeclient.Reader
	FieldOwner string
	Log        logr.Logger
}

// conditionsPruned records that the service cluster's PublishedResource CRD
// prunes conditions. It is process-wide: the agent talks to one service
// cluster, and the hint is logged once, not once per controller.
var conditionsPruned atomic.Bool

// Update applies mutate to the status of pr and writes it when it changed.
// pr is updated with the result.
func (w *Writer) Update(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, mutate func(*syncagentv1alpha1.PublishedResourceStatus)) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := w.Reader.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(pr), pr); err != nil {
				return err
			}
		}
		first = false

		orig := pr.DeepCopy()
		mutate(&pr.Status)
		if conditionsPruned.Load() {
			pr.Status.Conditions, pr.Status.ObservedGeneration = orig.Status.Conditions, orig.Status.ObservedGeneration
		}
		if equality.Semantic.DeepEqual(orig.Status, pr.Status) {
			return nil
		}
		wroteConditions := len(pr.Status.Conditions) > 0

		patch := ctrlruntimeclient.MergeFromWithOptions(orig, ctrlruntimeclient.MergeFromWithOptimisticLock{})
		if err := w.Client.Status().Patch(ctx, pr, patch, ctrlruntimeclient.FieldOwner(w.FieldOwner)); err != nil {
			return fmt.Errorf("failed to patch the status of PublishedResource %s: %w", pr.Name, err)
		}
		if wroteConditions && len(pr.Status.Conditions) == 0 && !conditionsPruned.Swap(true) {
			w.Log.Info("The PublishedResource CRD in this cluster has no status.conditions (an older CRD); conditions are not written. Upgrade the CRD (deploy/crd or the Helm chart with crds.enabled) to get them.")
		}
		return nil
	})
}
