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

package conditions

import (
	"context"
	"fmt"

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
// The Writer leaves out what the CRD prunes (StatusFields), so it never
// loops and writes nothing on an in-sync restart.
type Writer struct {
	Client ctrlruntimeclient.Client
	// Reader reads fresh objects after a conflict, and the
	// PublishedResource CRD (the manager's API reader).
	Reader     ctrlruntimeclient.Reader
	FieldOwner string
	Log        logr.Logger
	// Fields is what the CRD keeps (nil: the agent's shared record).
	Fields *StatusFields
}

func (w *Writer) fields() *StatusFields {
	if w.Fields != nil {
		return w.Fields
	}
	return sharedStatusFields
}

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
		if !equality.Semantic.DeepEqual(orig.Status.Conditions, pr.Status.Conditions) || orig.Status.ObservedGeneration != pr.Status.ObservedGeneration {
			keepsConditions, keepsObservedGeneration := w.fields().kept(ctx, w.Reader, w.Log)
			if !keepsConditions {
				pr.Status.Conditions = orig.Status.Conditions
			}
			if !keepsObservedGeneration {
				pr.Status.ObservedGeneration = orig.Status.ObservedGeneration
			}
		}
		if equality.Semantic.DeepEqual(orig.Status, pr.Status) {
			return nil
		}
		wroteConditions, wroteObservedGeneration := len(pr.Status.Conditions) > 0, pr.Status.ObservedGeneration != 0

		patch := ctrlruntimeclient.MergeFromWithOptions(orig, ctrlruntimeclient.MergeFromWithOptimisticLock{})
		if err := w.Client.Status().Patch(ctx, pr, patch, ctrlruntimeclient.FieldOwner(w.FieldOwner)); err != nil {
			return fmt.Errorf("failed to patch the status of PublishedResource %s: %w", pr.Name, err)
		}
		conditionsPruned := wroteConditions && len(pr.Status.Conditions) == 0
		observedGenerationPruned := wroteObservedGeneration && pr.Status.ObservedGeneration == 0
		if conditionsPruned || observedGenerationPruned {
			w.fields().pruned(conditionsPruned, observedGenerationPruned, w.Log)
		}
		return nil
	})
}
