package syncer

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// imported reports whether obj was created by an import of a
// service-cluster object.
func imported(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[keys.ImportedFrom]
	return ok
}

// ImportPrimary identifies obj, a kcp object of ws that an import is
// about to create, as a primary.
func ImportPrimary(ws Workspace, obj *unstructured.Unstructured) state.Primary {
	return primaryOf(ws, obj)
}

// ClaimForImport makes local, read from the API server, the copy of the
// kcp object p before that object exists: it gets p's sync labels and
// annotations (an optimistic lock on the version read), and no state. From
// then on every pass of p finds it by its labels, and nothing deletes it
// while it has no state (a cleanup needs the state), so an import that
// stops here creates no second copy.
func (s *Syncer) ClaimForImport(ctx context.Context, local *unstructured.Unstructured, p state.Primary) error {
	patch := ctrlruntimeclient.MergeFromWithOptions(local.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
	s.addSyncMetadata(local, p)
	if err := s.Service.Patch(ctx, local, patch); err != nil {
		return fmt.Errorf("failed to label the object to import: %w", err)
	}
	return nil
}

// UnclaimForImport undoes ClaimForImport when the kcp object could not be
// created: local loses p's sync labels and annotations (only if it still
// has no state).
func (s *Syncer) UnclaimForImport(ctx context.Context, local *unstructured.Unstructured, p state.Primary) error {
	if !p.Selector().Matches(labels.Set(local.GetLabels())) {
		return nil
	}
	if last, err := s.State.Get(ctx, p); err != nil || last != nil {
		return err
	}
	l, a := map[string]any{}, map[string]any{}
	for k := range p.Labels(s.AgentName) {
		l[k] = nil
	}
	for k := range p.Annotations() {
		a[k] = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": l, "annotations": a}})
	if err != nil {
		return err
	}
	if err := s.Service.Patch(ctx, local, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); ctrlruntimeclient.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to remove the labels of an import that did not happen: %w", err)
	}
	return nil
}

// AdoptImported finishes the import of the service-cluster object at key
// as the copy of obj (a kcp object of ws created from it): the desired
// state the sync computes is recorded as the last known one, unless state
// exists (a pass since may have merged a kcp change with it), and the sync
// labels and annotations are made complete; the object's spec is not
// written, so from then on only what changes in kcp is merged into it.
// Run again, it writes nothing. ErrConflict (wrapped) means the object
// belongs to someone else.
func (s *Syncer) AdoptImported(ctx context.Context, ws Workspace, obj *unstructured.Unstructured, key types.NamespacedName) (Result, error) {
	p := primaryOf(ws, obj)
	local := typedRef(s.LocalGVK, key)
	if err := s.Service.Get(ctx, key, local); err != nil {
		return Result{}, fmt.Errorf("failed to get the imported object: %w", err)
	}
	if local.GetDeletionTimestamp() != nil {
		return Result{Waiting: waitingFor("the imported object", local)}, nil
	}
	if !objmeta.Adoptable(local, p.Remote, s.AgentName) || objmeta.OfOtherKind(local, p.GroupKind()) {
		return Result{}, fmt.Errorf("%w: %s %s", ErrConflict, s.LocalGVK.Kind, key)
	}
	var res Result
	last, err := s.State.Get(ctx, p)
	if err != nil {
		return Result{}, err
	}
	if last == nil {
		mutated, err := applyMutator(s.SpecMutator, obj, local)
		if err != nil {
			return Result{}, wrapMutation(err)
		}
		desired, err := s.desired(ctx, ws, obj, mutated, local, local.GetNamespace(), &res)
		if err != nil {
			return Result{}, err
		}
		if err := s.State.Put(ctx, p, desired.Object); err != nil {
			return res, err
		}
		res.Writes++
	}
	if len(missing(local.GetLabels(), p.Labels(s.AgentName))) > 0 || len(missing(local.GetAnnotations(), p.Annotations())) > 0 {
		patch := ctrlruntimeclient.MergeFromWithOptions(local.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
		s.addSyncMetadata(local, p)
		if err := s.Service.Patch(ctx, local, patch); err != nil {
			if apierrors.IsConflict(err) {
				return res, err
			}
			return res, fmt.Errorf("failed to label the imported object: %w", err)
		}
		res.Writes++
	}
	return res, nil
}
