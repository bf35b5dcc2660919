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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// sourcePropagation is how the copy of a recorded related object goes: a
// kcp-origin source says so itself, read from the workspace's server (a
// source already gone leaves the default; one that cannot be read is an
// error, since an orphan taken for a delete cannot be undone);
// service-origin copies in kcp go in the background.
func (s *Syncer) sourcePropagation(ctx context.Context, ws Workspace, rec state.RelatedRecord) (objmeta.Propagation, error) {
	if rec.OriginSide != string(related.SideKcp) {
		return objmeta.PropagateBackground, nil
	}
	src := rec.Origin.Unstructured()
	err := ws.reader().Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(src), src)
	switch {
	case ObjectNotFound(err, src.GetName()):
		return objmeta.PropagateBackground, nil
	case err != nil:
		return "", fmt.Errorf("failed to read the deletion propagation of related %s %s: %w", src.GetKind(), src.GetName(), err)
	}
	policy, _ := objmeta.PropagationOf(src)
	return policy, nil
}

// orphanedFrom is the value of keys.OrphanedFrom for an object of a
// workspace.
func orphanedFrom(cluster, namespace, name string) string {
	return cluster + "/" + namespace + "/" + name
}

// releaseMessage is the Event that announces the release of what under
// policy.
func releaseMessage(policy objmeta.Propagation, what string) string {
	switch policy {
	case objmeta.PropagateOrphan:
		return "Keeping " + what + " (deletion propagation orphan); it no longer belongs to this object."
	case objmeta.PropagateForeground:
		return "Deleting " + what + ", its dependents first (deletion propagation foreground)."
	}
	return "Deleting " + what + "."
}

// readCopy reads obj (by name; nil when it is gone or another object of
// its UID has the name now).
func readCopy(ctx context.Context, c ctrlruntimeclient.Client, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	err := c.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(obj), cur)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read %s %s: %w", obj.GetKind(), obj.GetName(), err)
	case obj.GetUID() != "" && cur.GetUID() != obj.GetUID():
		return nil, nil
	}
	return cur, nil
}

// releaseCopy lets go of the related copy obj as policy says: orphan
// keeps it and marks it keys.OrphanedFrom (the source), so that no record
// takes it over again; otherwise it is deleted (only the object of obj's
// UID, if it has one), unless it is seen being deleted already or kept by
// an earlier orphan. It reports whether it wrote.
func releaseCopy(ctx context.Context, c ctrlruntimeclient.Client, obj *unstructured.Unstructured, policy objmeta.Propagation, from string) (bool, error) {
	cur, err := readCopy(ctx, c, obj)
	if err != nil || (cur != nil && cur.GetDeletionTimestamp() != nil) {
		return false, err
	}
	if cur != nil && cur.GetAnnotations()[keys.OrphanedFrom] != "" {
		// Kept by an earlier deletion (orphan): nobody's copy any more,
		// whatever a record that outlived its source still says.
		return false, nil
	}
	if policy != objmeta.PropagateOrphan {
		// Not read (a cache that has not seen it yet) is no proof that it
		// is gone: the delete tells.
		return deleteIfExists(ctx, c, obj, policy)
	}
	if cur == nil {
		return false, nil
	}
	patch := objmeta.OrphanPatch(cur.GetUID(), from)
	if err := c.Patch(ctx, cur, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); ctrlruntimeclient.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("failed to keep %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return true, nil
}

// deleteIfExists deletes obj (only the object of obj's UID, if it has
// one) with policy's propagation; it reports whether a delete was issued.
func deleteIfExists(ctx context.Context, c ctrlruntimeclient.Client, obj *unstructured.Unstructured, policy objmeta.Propagation) (bool, error) {
	opts := []ctrlruntimeclient.DeleteOption{ctrlruntimeclient.PropagationPolicy(policy.DeletionPropagation())}
	uid := obj.GetUID()
	if uid != "" {
		opts = append(opts, ctrlruntimeclient.Preconditions{UID: &uid})
	}
	err := c.Delete(ctx, obj, opts...)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsConflict(err) && uid != "":
		// Another object has the name now (not ours), unless the conflict
		// came from elsewhere.
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		gerr := c.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(obj), cur)
		if apierrors.IsNotFound(gerr) || (gerr == nil && cur.GetUID() != uid) {
			return false, nil
		}
		return false, fmt.Errorf("failed to delete %s %s: %w", obj.GetKind(), obj.GetName(), err)
	case err != nil:
		return false, fmt.Errorf("failed to delete %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return true, nil
}
