package syncer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// imported reports whether obj was created by an import of a
// service-cluster object.
func imported(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[keys.ImportedFrom]
	return ok
}

// AdoptImported makes the service-cluster object at key, from which obj
// (a kcp object of ws) was imported, obj's local copy, as an adoption
// does: the desired state the sync computes is recorded as the last known
// one, then the sync labels are added, and nothing else of the object is
// written (it keeps its spec; from then on only what changes in kcp is
// merged into it). Run again on an object that already carries obj's
// labels, it writes nothing. ErrConflict (wrapped) means the object now
// belongs to someone else.
func (s *Syncer) AdoptImported(ctx context.Context, ws Workspace, obj *unstructured.Unstructured, key types.NamespacedName) (Result, error) {
	local := typedRef(s.LocalGVK, key)
	if err := s.Service.Get(ctx, key, local); err != nil {
		return Result{}, fmt.Errorf("failed to get the imported object: %w", err)
	}
	mutated, err := applyMutator(s.SpecMutator, obj, local)
	if err != nil {
		return Result{}, wrapMutation(err)
	}
	var res Result
	desired, err := s.desired(ctx, ws, obj, mutated, local, local.GetNamespace(), &res)
	if err != nil {
		return Result{}, err
	}
	return s.adopt(ctx, obj, primaryOf(ws, obj), key, desired, res)
}
