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

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/merge"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
)

// Drift kinds: how a synced kcp object and what the agent keeps for it
// on the service cluster differ, as the patroller finds them (the kind
// label of its metrics, docs/metrics.md).
const (
	// DriftNotAccepted: the object lacks our finalizer (its first pass
	// never ran).
	DriftNotAccepted = "not-accepted"
	// DriftMissingCopy: the object has no local copy (and no one else's
	// object holds its name).
	DriftMissingCopy = "missing-copy"
	// DriftCopyDiffers: a field the kcp object owns differs on the local
	// copy. Reported, never repaired: a field changed only on the service
	// side survives until the same field changes in kcp (contract §6.5).
	DriftCopyDiffers = "copy-differs"
	// DriftCopyMetadata: a sync label or annotation of the local copy is
	// missing or wrong.
	DriftCopyMetadata = "copy-metadata"
	// DriftStateMissing: the object's state Secret is gone.
	DriftStateMissing = "state-missing"
	// DriftStatusBehind: the local copy's status has not reached kcp.
	DriftStatusBehind = "status-behind"
	// DriftRelatedMissing: a related object's copy is missing.
	DriftRelatedMissing = "related-missing"
	// DriftRelatedDiffers: a field a related object's origin owns differs
	// on its copy; reported only, as DriftCopyDiffers.
	DriftRelatedDiffers = "related-differs"
	// DriftOrphanCopy: a local copy with state whose kcp object is gone
	// (found by the patroller itself, not by Drift).
	DriftOrphanCopy = "orphan-copy"
)

// Repairable reports whether a pass of the sync repairs drift of kind:
// all but the fields changed on the service side, which the contract
// keeps.
func Repairable(kind string) bool {
	return kind != DriftCopyDiffers && kind != DriftRelatedDiffers
}

// Drift compares the kcp object obj (read from ws's cache) with its local
// copy, state, status and related objects, and returns the kinds of drift
// found, in a fixed order. It writes nothing and reads from the caches
// (related destinations as the sync reads them). Objects being deleted,
// and those whose local copy is being deleted, are the event path's
// business: no drift.
func (s *Syncer) Drift(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) ([]string, error) {
	if obj.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	if !s.finalizers().Owns(obj) {
		return []string{DriftNotAccepted}, nil
	}
	p := primaryOf(ws, obj)
	local, err := s.findLocal(ctx, p)
	switch {
	case err != nil:
		return nil, err
	case local == nil:
		return s.missingCopy(ctx, ws, obj)
	case local.GetDeletionTimestamp() != nil:
		return nil, nil
	}
	mutated, err := applyMutator(s.SpecMutator, obj, local)
	if err != nil {
		return nil, wrapMutation(err)
	}
	desired := objmeta.Desired(mutated, s.StatusSubresource)

	var drift []string
	last, err := s.State.Get(ctx, p)
	if err != nil {
		return nil, err
	}
	if last == nil {
		drift = append(drift, DriftStateMissing)
	}
	if len(missing(local.GetLabels(), p.Labels(s.AgentName))) > 0 || len(missing(local.GetAnnotations(), p.Annotations())) > 0 {
		drift = append(drift, DriftCopyMetadata)
	}
	if merge.Drifted(local.Object, desired.Object) {
		drift = append(drift, DriftCopyDiffers)
	}
	if s.StatusSubresource {
		withStatus, err := applyMutator(s.StatusMutator, local, mutated)
		if err != nil {
			return nil, fmt.Errorf("status mutation: %w", err)
		}
		if !equality.Semantic.DeepEqual(withStatus.Object["status"], obj.Object["status"]) {
			drift = append(drift, DriftStatusBehind)
		}
	}
	kinds, err := s.relatedDrift(ctx, ws, obj, local)
	return append(drift, kinds...), err
}

// missingCopy tells a missing copy from a name that an object the sync
// did not make its copy holds (someone else's: the event path refuses it
// with ObjectConflict, and no repair can change that).
func (s *Syncer) missingCopy(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) ([]string, error) {
	key, _, err := s.wouldBeCopy(ws, obj)
	if err != nil {
		return nil, err
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(s.LocalGVK)
	switch err := s.Service.Get(ctx, key, existing); {
	case apierrors.IsNotFound(err):
		return []string{DriftMissingCopy}, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get the local object %s: %w", key, err)
	}
	return nil, nil
}

// relatedDrift returns the related drift kinds of a synced primary.
func (s *Syncer) relatedDrift(ctx context.Context, ws Workspace, obj, local *unstructured.Unstructured) ([]string, error) {
	primaries := related.Primaries{Kcp: obj, Service: local, ClusterName: ws.Cluster, ClusterPath: ws.Path}
	readers := related.Readers{Kcp: ws.Client, Service: s.RelatedService}
	missing, differs := false, false
	for _, e := range s.Related {
		pairs, err := e.Resolve(ctx, primaries, readers)
		if err != nil {
			return nil, err
		}
		for _, pair := range pairs {
			if pair.Origin.GetDeletionTimestamp() != nil {
				continue
			}
			dest := &unstructured.Unstructured{}
			dest.SetGroupVersionKind(e.DestinationType().GVK)
			err := s.side(ws, e.Destination()).Get(ctx, types.NamespacedName{Namespace: pair.Destination.Namespace, Name: pair.Destination.Name}, dest)
			switch {
			case apierrors.IsNotFound(err):
				missing = true
				continue
			case err != nil:
				return nil, fmt.Errorf("failed to get related destination %s: %w", pair.Destination.Name, err)
			}
			desired, err := desiredCopy(e, pair.Origin, dest.Object)
			if err != nil {
				return nil, err
			}
			if merge.Drifted(dest.Object, desired.Object) {
				differs = true
			}
		}
	}
	var out []string
	if missing {
		out = append(out, DriftRelatedMissing)
	}
	if differs {
		out = append(out, DriftRelatedDiffers)
	}
	return out, nil
}
