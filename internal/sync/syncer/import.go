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

package syncer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/imports"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// imported reports whether obj was created by an import of a
// service-cluster object.
func imported(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[keys.ImportedFrom]
	return ok
}

// claimed reports whether local was claimed by an import that is not
// finished.
func claimed(local *unstructured.Unstructured) bool {
	_, ok := local.GetAnnotations()[keys.Importing]
	return ok
}

// ImportPrimary identifies obj, a kcp object of ws that an import is
// about to create, as a primary.
func ImportPrimary(ws Workspace, obj *unstructured.Unstructured) state.Primary {
	return primaryOf(ws, obj)
}

// ClaimForImport makes local, read from the API server, the copy of the
// kcp object p before that object exists: it gets p's sync labels and
// annotations and the claim annotation (an optimistic lock on the version
// read), and no state. From then on every pass of p finds it by its
// labels, so no second copy is made; a pass finishes the import only if p
// was created by this import, and drops the claim otherwise; nothing
// deletes a claimed object.
func (s *Syncer) ClaimForImport(ctx context.Context, local *unstructured.Unstructured, p state.Primary) error {
	patch := ctrlruntimeclient.MergeFromWithOptions(local.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
	s.addSyncMetadata(local, p)
	a := local.GetAnnotations()
	a[keys.Importing] = p.Cluster + "/" + objmeta.QualifiedName(p.Namespace, p.Name)
	local.SetAnnotations(a)
	if err := s.Service.Patch(ctx, local, patch); err != nil {
		return fmt.Errorf("failed to claim the object to import: %w", err)
	}
	return nil
}

// DropClaim undoes an import's claim on the object at key for the kcp
// object p (the import did not happen or did not finish, or p is not the
// import's): read from the API server, the object loses p's sync labels
// and annotations and the claim, and p's state goes (an import that
// stopped between its state and the claim's removal left it). The claim
// decides, not the state: a claimed object is the service owner's. It
// reports whether the object was claimed for p (false: the caller's view
// of it is behind).
func (s *Syncer) DropClaim(ctx context.Context, key types.NamespacedName, p state.Primary) (bool, error) {
	local := typedRef(s.LocalGVK, key)
	if err := s.Service.Get(ctx, key, local); err != nil {
		return false, ctrlruntimeclient.IgnoreNotFound(err)
	}
	if !claimed(local) || !p.Selector().Matches(labels.Set(local.GetLabels())) {
		return false, nil
	}
	patch := objmeta.DropClaimPatch(local.GetUID(), local.GetResourceVersion())
	if err := s.Service.Patch(ctx, local, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, fmt.Errorf("failed to drop the claim of an import: %w", ctrlruntimeclient.IgnoreNotFound(err))
	}
	return true, s.State.Delete(ctx, p)
}

// finishImport handles the claimed local copy of obj in a pass: if obj was
// created by the import of local, the import is finished (the state the
// sync computes is recorded unless state exists, a pass since may have
// merged a kcp change with it; the sync metadata is completed and the
// claim and the request removed; the object's spec is not written, so from
// then on only what changes in kcp is merged into it); otherwise the claim
// is dropped (obj is someone else's; a claim the API server no longer
// shows is a cache behind: the pass is repeated).
func (s *Syncer) finishImport(ctx context.Context, ws Workspace, obj, local *unstructured.Unstructured, p state.Primary) (Result, error) {
	key := types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}
	if !imports.CreatedBy(obj, local) {
		dropped, err := s.DropClaim(ctx, key, p)
		res := Result{Requeue: true}
		if dropped {
			res.Writes = 1
		}
		return res, err
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
	patch := ctrlruntimeclient.MergeFromWithOptions(local.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
	s.addSyncMetadata(local, p)
	l, a := local.GetLabels(), local.GetAnnotations()
	delete(l, keys.ImportInto)
	for _, k := range []string{keys.Importing, keys.ImportName, keys.ImportNamespace} {
		delete(a, k)
	}
	local.SetLabels(l)
	local.SetAnnotations(a)
	if err := s.Service.Patch(ctx, local, patch); err != nil {
		if apierrors.IsConflict(err) || ObjectNotFound(err, key.Name) {
			return res, ctrlruntimeclient.IgnoreNotFound(err)
		}
		return res, fmt.Errorf("failed to finish the import: %w", err)
	}
	res.Writes++
	res.Requeue = true
	res.Imported = local
	s.Event(obj, corev1.EventTypeNormal, ReasonObjectPlaced, "The object imported from the service cluster is its local copy.")
	return res, nil
}

// dropClaimOf handles a local copy of the kcp object p, being deleted or
// gone, that an import claimed: the claim is dropped and the object kept.
// local is then nil; if the API server shows no claim any more (the
// caller's copies cache is behind), local is what the server shows.
func (s *Syncer) dropClaimOf(ctx context.Context, local *unstructured.Unstructured, p state.Primary) (*unstructured.Unstructured, Result, error) {
	dropped, err := s.DropClaim(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}, p)
	switch {
	case err != nil:
		return nil, Result{}, err
	case dropped:
		return nil, Result{Requeue: true, Writes: 1}, nil
	}
	live, err := s.findLocalLive(ctx, p)
	if err != nil || live != nil && claimed(live) {
		return nil, Result{Requeue: true}, err
	}
	return live, Result{}, nil
}
