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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
	smdtyped "sigs.k8s.io/structured-merge-diff/v4/typed"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/merge"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// Related objects (contract §6.13) are synced after the primary is in
// sync, entry by entry in spec order. Their copies carry no agent
// metadata; the state Secret of each copy is the record that it is ours:
// an existing destination without state is adopted only if it already
// equals the origin, otherwise it is someone else's and is left alone
// (ObjectConflict). The finalizer goes on kcp-origin sources before their
// first copy is written and is released when the primary is deleted, when
// the source itself is deleted, or when the primary no longer selects it.

// side returns the client of one side for related objects.
func (s *Syncer) side(ws Workspace, side related.Side) ctrlruntimeclient.Client {
	if side == related.SideKcp {
		return ws.Client
	}
	return s.RelatedService
}

// syncRelated syncs every related entry of the primary obj with local copy
// local, then records the service-origin copies in obj's annotations and
// prunes the state of objects no longer selected.
func (s *Syncer) syncRelated(ctx context.Context, ws Workspace, p state.Primary, obj, local *unstructured.Unstructured) (Result, error) {
	// Without entries the records of removed ones are still pruned below.
	primaries := related.Primaries{Kcp: obj, Service: local, ClusterName: ws.Cluster, ClusterPath: ws.Path}
	readers := related.Readers{Kcp: ws.Client, Service: s.RelatedService}

	res := Result{}
	annotations := map[string]string{}
	keep := sets.New[string]()
	var deferred []error // conflicts and refusals
	for _, e := range s.Related {
		pairs, err := e.Resolve(ctx, primaries, readers)
		if err != nil {
			return res, err
		}
		for i, pair := range pairs {
			rec := s.relatedRecord(e, pair)
			r, err := s.syncRelatedObject(ctx, ws, obj, e, state.Related{Primary: p, RelatedRecord: rec}, pair.Origin)
			res.add(r)
			keep.Insert(state.RelatedSecretName(state.Related{Primary: p, RelatedRecord: rec}))
			var refused *RefusedError
			switch {
			case errors.Is(err, ErrConflict), errors.As(err, &refused):
				// Someone else decides: the other related objects go on. A
				// copy that exists keeps its annotation.
				deferred = append(deferred, err)
				if refused == nil || !refused.Existing {
					continue
				}
			case err != nil:
				return res, err
			}
			if e.Origin == related.SideService {
				annotations[keys.RelatedResourcesPrefix+e.Identifier+"."+strconv.Itoa(i)] = annotationValue(rec.Destination)
			}
		}
	}

	r, err := s.pruneRelated(ctx, ws, p, obj, keep)
	res.add(r)
	if err != nil {
		return res, err
	}
	r, err = s.updateRelatedAnnotations(ctx, ws, obj, annotations)
	res.add(r)
	if err != nil {
		return res, err
	}
	return res, errors.Join(deferred...)
}

func (r *Result) add(o Result) {
	r.Writes += o.Writes
	r.Requeue = r.Requeue || o.Requeue
	r.Unresolved = r.Unresolved || o.Unresolved
	if r.Imported == nil {
		r.Imported = o.Imported
	}
	if r.Waiting == "" {
		r.Waiting = o.Waiting
	}
}

func (s *Syncer) relatedRecord(e *related.Entry, pair related.Pair) state.RelatedRecord {
	dest := e.DestinationType().GVK
	return state.RelatedRecord{
		Identifier: e.Identifier,
		OriginSide: string(e.Origin),
		Origin: state.ObjectRef{
			APIVersion: pair.Origin.GetAPIVersion(), Kind: pair.Origin.GetKind(),
			Namespace: pair.Origin.GetNamespace(), Name: pair.Origin.GetName(),
		},
		Destination: state.ObjectRef{
			APIVersion: dest.GroupVersion().String(), Kind: dest.Kind,
			Namespace: pair.Destination.Namespace, Name: pair.Destination.Name,
		},
	}
}

// annotationValue is the value of a related-resources annotation: compact
// JSON with the keys namespace (if any), name, apiVersion, kind in this
// order (contract §4.2).
func annotationValue(ref state.ObjectRef) string {
	var b strings.Builder
	b.WriteByte('{')
	if ref.Namespace != "" {
		b.WriteString(`"namespace":` + quote(ref.Namespace) + ",")
	}
	b.WriteString(`"name":` + quote(ref.Name) + `,"apiVersion":` + quote(ref.APIVersion) + `,"kind":` + quote(ref.Kind) + "}")
	return b.String()
}

func quote(s string) string {
	data, _ := json.Marshal(s) // a string always encodes
	return string(data)
}

// syncRelatedObject syncs one origin object to its destination.
func (s *Syncer) syncRelatedObject(ctx context.Context, ws Workspace, primary *unstructured.Unstructured, e *related.Entry, rec state.Related, origin *unstructured.Unstructured) (Result, error) {
	res := Result{}
	destClient := s.side(ws, e.Destination())
	destType := e.DestinationType()

	if origin.GetDeletionTimestamp() != nil {
		if e.Origin == related.SideKcp {
			return s.releaseSource(ctx, ws, e, rec, origin)
		}
		return res, nil // a service-origin source going away leaves its kcp copy
	}
	destKey := types.NamespacedName{Namespace: rec.Destination.Namespace, Name: rec.Destination.Name}
	dest := rec.Destination.Unstructured()
	if err := destClient.Get(ctx, destKey, dest); err != nil {
		if !apierrors.IsNotFound(err) {
			return res, fmt.Errorf("failed to get related destination %s: %w", destKey, err)
		}
		dest = nil
	}
	other := rec.Destination.Unstructured().Object
	if dest != nil {
		other = dest.Object
	}
	desired, err := desiredCopy(e, origin, other)
	if err != nil {
		return res, err
	}

	last, err := s.State.GetRelated(ctx, rec)
	if err != nil {
		return res, err
	}
	// A kcp copy of a service-origin object stays when its source goes
	// (and so does its record, see pruneRelated); an object a consumer put
	// in its place has another UID and is not ours.
	recordedUID, replaced := types.UID(""), false
	if e.Origin == related.SideService && last != nil && dest != nil {
		if recordedUID, err = s.State.RelatedDestinationUID(ctx, rec, false); err != nil {
			return res, err
		}
		if recordedUID != "" && recordedUID != dest.GetUID() {
			// The cache may not have the record of a copy written a
			// moment ago: ask the server before refusing.
			if recordedUID, err = s.State.RelatedDestinationUID(ctx, rec, true); err != nil {
				return res, err
			}
		}
		if replaced = recordedUID != "" && recordedUID != dest.GetUID(); replaced {
			last = nil
		}
	}

	// Without state the copy is ours only if it already is what we would
	// write, or if another primary's record says it is the copy of the same
	// origin (two primaries naming one object share its copy). Before
	// refusing it, make sure our own state is not just missing from a
	// lagging cache.
	foreign := dest != nil && last == nil && merge.Overwrite(dest.DeepCopy(), desired.Object)
	// A copy kept by an earlier deletion (orphan) is nobody's copy any
	// more, whatever it holds or whoever created it.
	orphaned := dest != nil && dest.GetAnnotations()[keys.OrphanedFrom] != ""
	if orphaned {
		foreign, last = true, nil
	}
	if foreign && !replaced && !orphaned {
		if last, err = s.State.GetRelatedLive(ctx, rec); err != nil {
			return res, err
		}
		if last != nil && e.Origin == related.SideService {
			if recordedUID, err = s.State.RelatedDestinationUID(ctx, rec, true); err != nil {
				return res, err
			}
			if recordedUID != "" && recordedUID != dest.GetUID() {
				last = nil
			}
		}
		foreign = last == nil
	}
	if foreign && !orphaned && e.Origin == related.SideService {
		cur, retry, err := s.earlierCopy(ctx, ws, rec, dest)
		switch {
		case err != nil:
			return res, err
		case retry:
			// Gone or replaced since the cache saw it: look again.
			res.Requeue = true
			return res, nil
		case cur != nil:
			// A kcp copy this agent created for an earlier incarnation of
			// the primary (deleted and created again; the copy stays, its
			// record went with the primary): taken over from its current
			// content.
			dest = cur
			foreign, last = false, objmeta.Desired(cur, e.SyncStatus).Object
		}
	}
	if foreign && !orphaned && e.Origin == related.SideKcp {
		// A service copy created for this very record whose record was
		// never written (the pass ended between the two writes, or the
		// create's answer was lost) and whose source changed since: taken
		// over from what the create wrote, so that fields the service side
		// added since survive the merge.
		_, created, err := s.copyOfRecord(ctx, rec)
		if err != nil {
			return res, err
		}
		if created != nil {
			foreign, last = false, objmeta.Desired(created, e.SyncStatus).Object
		}
	}
	if foreign && !orphaned {
		shared, err := s.sharedCopy(ctx, ws, e, rec, dest.GetUID())
		if err != nil {
			return res, err
		}
		foreign = !shared
	}
	switch {
	case dest != nil && dest.GetDeletionTimestamp() != nil:
		res.Waiting = waitingFor(fmt.Sprintf("the related object %q", e.Identifier), dest)
		return res, nil
	case foreign:
		s.Event(primary, corev1.EventTypeWarning, ReasonObjectConflict,
			fmt.Sprintf("The related object %q cannot be placed: an object with its name exists and was not created by this service.", e.Identifier))
		return res, fmt.Errorf("%w: related %s %s", ErrConflict, rec.Destination.Kind, destKey)
	}

	// From here on this pass writes (a copy or the state): a kcp-origin
	// source gets the finalizer first. A refused source never gets it, as
	// nothing would release it once the primary stops selecting it.
	fin := s.finalizers()
	var stored *state.RelatedRecord
	if e.Origin == related.SideKcp {
		rec.Finalizer = fin.Own
		if stored, err = s.State.StoredRecord(ctx, rec, false); err != nil {
			return res, err
		}
	}
	// A legacy finalizer is replaced only on a source this agent recorded
	// before it had a finalizer of its own (it was put there for this
	// role); on a source new to the agent it is another agent's and stays.
	if e.Origin == related.SideKcp && !fin.Owns(origin) {
		patch := ctrlruntimeclient.MergeFromWithOptions(origin.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
		migrate, holders, err := s.legacyOurs(ctx, rec, stored, last)
		if err != nil {
			return res, err
		}
		if migrate {
			// Once the agent's own finalizer is on the source, a legacy one
			// is another agent's: the agent's other records of the source
			// say so first, or one of them would take it for the agent's.
			if err := s.State.NameFinalizer(ctx, holders, fin.Own); err != nil {
				return res, err
			}
		}
		fin.Take(origin, migrate)
		if err := ws.Client.Patch(ctx, origin, patch); err != nil {
			if ObjectNotFound(err, origin.GetName()) {
				// Deleted since it was read: nothing of it to copy.
				res.Requeue = true
				return res, nil
			}
			return res, fmt.Errorf("failed to add the finalizer to related %s %s: %w", origin.GetKind(), origin.GetName(), err)
		}
		res.Writes++
		s.Event(origin, corev1.EventTypeNormal, ReasonObjectAccepted, "The object was accepted for synchronization.")
	}

	switch {
	case dest == nil:
		if e.Origin == related.SideKcp {
			// The workspace cache may still hold a source whose release
			// deleted its copy a moment ago: a copy created now would have
			// no source and nobody to delete it.
			gone, err := goneFromServer(ctx, ws, origin)
			if err != nil {
				return res, err
			}
			if gone {
				res.Requeue = true
				return res, nil
			}
		}
		if destType.Namespaced && destKey.Namespace != "" {
			var labels, annotations map[string]string
			if e.Origin == related.SideKcp {
				// Into the service cluster: a namespace the agent may
				// delete again once the workspace is gone.
				if labels, annotations, err = s.CreatedNamespaceMetadata(ws.Cluster, destKey.Namespace); err != nil {
					return res, err
				}
			}
			created, err := ensureNamespace(ctx, destClient, destKey.Namespace, labels, annotations)
			if err != nil {
				if r := refusal(e, "Namespace", types.NamespacedName{Name: destKey.Namespace}, false, err); r != nil {
					return res, r
				}
				return res, err
			}
			if created {
				res.Writes++
			}
		}
		if e.Origin == related.SideService && last != nil {
			// The record must not name a copy that is gone when the new
			// one exists: if the pass ends between the two writes, the
			// next one would take the new copy for someone else's.
			pending := rec
			pending.DestinationUID = ""
			if err := s.State.PutRelated(ctx, pending, last); err != nil {
				return res, err
			}
			res.Writes++
		}
		dest = desired.DeepCopy()
		dest.SetAPIVersion(rec.Destination.APIVersion)
		dest.SetKind(rec.Destination.Kind)
		dest.SetNamespace(destKey.Namespace)
		dest.SetName(destKey.Name)
		if err := destClient.Create(ctx, dest, ctrlruntimeclient.FieldOwner(s.copyManager(rec))); err != nil {
			if apierrors.IsAlreadyExists(err) {
				if hidden, herr := hiddenInKcp(ctx, ws, e, dest); herr != nil {
					return res, herr
				} else if hidden {
					// A copy with a record is ours: it exists, hidden.
					return res, &RefusedError{Identifier: e.Identifier, Kind: rec.Destination.Kind, Namespace: destKey.Namespace, Name: destKey.Name,
						Existing: last != nil, Err: err}
				}
				// Our cache has not seen it yet: look again shortly.
				res.Requeue = true
				return res, nil
			}
			if r := refusal(e, rec.Destination.Kind, destKey, false, err); r != nil {
				return res, r
			}
			return res, fmt.Errorf("failed to create related destination %s: %w", destKey, err)
		}
		res.Writes++
		s.Event(s.kcpSide(e, origin, dest), corev1.EventTypeNormal, ReasonObjectPlaced, "The related object was placed.")
	case last != nil:
		patch, err := merge.ThreeWay(last, desired.Object)
		if err != nil {
			return res, err
		}
		if patch != nil {
			if err := destClient.Patch(ctx, dest, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); err != nil {
				if ObjectNotFound(err, destKey.Name) {
					// Deleted since it was read: the next pass creates it again.
					res.Requeue = true
					return res, nil
				}
				if r := refusal(e, rec.Destination.Kind, destKey, true, err); r != nil {
					return res, r
				}
				return res, fmt.Errorf("failed to patch related destination %s: %w", destKey, err)
			}
			res.Writes++
			s.Event(s.kcpSide(e, origin, dest), corev1.EventTypeNormal, ReasonObjectSynced, "The related object was updated.")
		}
	}
	if e.Origin == related.SideService {
		rec.DestinationUID = dest.GetUID()
	}
	// A record without the agent's finalizer (written before it had its
	// own) is written again once the source carries it.
	if last == nil || !equality.Semantic.DeepEqual(last, desired.Object) || recordedUID != rec.DestinationUID ||
		e.Origin == related.SideKcp && (stored == nil || stored.Finalizer != rec.Finalizer) {
		if err := s.State.PutRelated(ctx, rec, desired.Object); err != nil {
			return res, err
		}
		res.Writes++
	}

	r, err := s.syncRelatedStatus(ctx, destClient, e, origin, dest)
	res.add(r)
	if res.Writes > 0 {
		res.Requeue = true
	}
	return res, err
}

// sharedCopy reports whether another primary's record names the existing
// destination of rec as the copy of rec's origin.
func (s *Syncer) sharedCopy(ctx context.Context, ws Workspace, e *related.Entry, rec state.Related, destUID types.UID) (bool, error) {
	others, err := s.State.OthersUsing(ctx, rec.Primary, string(e.Destination()), rec.Destination)
	if err != nil {
		return false, err
	}
	if others, err = s.alive(ctx, ws, rec.Primary, others); err != nil {
		return false, err
	}
	// Another record proves only the object it names (an object put in
	// the copy's place has another UID).
	origin := state.RelatedObjectKey(rec.Cluster, rec.OriginSide, rec.Origin)
	return slices.ContainsFunc(others, func(o state.StoredRelated) bool {
		return o.OriginKey() == origin && (o.DestinationUID == "" || o.DestinationUID == destUID)
	}), nil
}

// kcpSide returns the kcp-side object of a related pair, which gets the Events.
func (s *Syncer) kcpSide(e *related.Entry, origin, dest *unstructured.Unstructured) *unstructured.Unstructured {
	if e.Origin == related.SideKcp {
		return origin
	}
	return dest
}

// syncRelatedStatus copies the origin's status to the destination with
// syncStatus, through the destination's status subresource.
func (s *Syncer) syncRelatedStatus(ctx context.Context, destClient ctrlruntimeclient.Client, e *related.Entry, origin, dest *unstructured.Unstructured) (Result, error) {
	if !e.SyncStatus {
		return Result{}, nil
	}
	status, has := origin.Object["status"]
	if equality.Semantic.DeepEqual(status, dest.Object["status"]) {
		return Result{}, nil
	}
	warn := func() {
		if s.Warned != nil && s.Warned.First(s.kcpSide(e, origin, dest)) {
			s.Event(s.kcpSide(e, origin, dest), corev1.EventTypeWarning, ReasonStatusSubresMissing,
				"The related object's status cannot be copied: its type has no status subresource.")
		}
	}
	if !e.DestinationType().HasStatus {
		warn()
		return Result{}, nil
	}
	updated := dest.DeepCopy()
	if has {
		updated.Object["status"] = status
	} else {
		delete(updated.Object, "status")
	}
	if err := destClient.Status().Update(ctx, updated); err != nil {
		if apierrors.IsNotFound(err) {
			warn()
			return Result{}, nil
		}
		return Result{}, fmt.Errorf("failed to update the related object's status: %w", err)
	}
	return Result{Writes: 1, Requeue: true}, nil
}

// releaseSource handles a kcp-origin source in deletion: its copy goes,
// then the finalizer, then the record. A source that no longer carries the
// agent's finalizer (another primary of the agent let it go, or a pass
// ended before its record was deleted) but that this record still names
// has its copy and record released all the same.
func (s *Syncer) releaseSource(ctx context.Context, ws Workspace, e *related.Entry, rec state.Related, origin *unstructured.Unstructured) (Result, error) {
	res := Result{}
	fin := s.finalizers()
	held := fin.Holds(origin)
	secretName := state.RelatedSecretName(rec)
	stored, err := s.State.GetRelated(ctx, rec)
	if err == nil && stored == nil && held {
		// Once released, the source goes and nothing would delete the
		// copy: a record the cache has not seen yet counts.
		stored, err = s.State.GetRelatedLive(ctx, rec)
	}
	if err != nil {
		return res, err
	}
	if !held && stored == nil {
		return res, nil
	}
	legacy := held && !fin.Owns(origin)
	if legacy {
		// The legacy finalizer is the agent's only while its state from
		// before per-agent finalizers exists; the record then goes after
		// the finalizer.
		record, err := s.storedRecord(ctx, rec)
		if err != nil {
			return res, err
		}
		ours, _, err := s.legacyOurs(ctx, rec, record, stored)
		if err != nil || !ours {
			return res, err
		}
	}
	var dest *unstructured.Unstructured
	if stored != nil {
		dest, err = s.unsharedCopy(ctx, ws, e, rec)
	} else {
		// A copy whose pass ended before its record was written.
		dest, err = s.unrecordedCopy(ctx, ws, e, rec, origin)
	}
	if err != nil {
		return res, err
	}
	if dest != nil {
		// The source is of kcp origin (it holds the finalizer): its own
		// policy says how its copy goes.
		policy, _ := objmeta.PropagationOf(origin)
		wrote, err := releaseCopy(ctx, s.side(ws, e.Destination()), dest, policy, orphanedFrom(ws.Cluster, origin.GetNamespace(), origin.GetName()))
		if err != nil {
			return res, err
		}
		if wrote {
			res.Writes++
			s.Event(origin, corev1.EventTypeNormal, ReasonObjectCleanup, releaseMessage(policy, "the related object's copy"))
		}
		if policy == objmeta.PropagateForeground {
			// The source stays until its copy and the copy's dependents
			// are gone.
			cur, err := readCopy(ctx, s.side(ws, e.Destination()), dest)
			if err != nil {
				return res, err
			}
			if cur != nil {
				res.Waiting = waitingFor("the related object's copy", cur)
				return res, nil
			}
		}
	}
	// The finalizer goes before the record: a record outliving its
	// finalizer is found and let go by the next pass, a finalizer outliving
	// its record (a failed patch) would be found by nothing while the
	// primary is not synced (30-minute soak of seed 43).
	r, err := s.removeFinalizer(ctx, ws, origin, legacy)
	res.add(r)
	if err != nil {
		return res, err
	}
	return res, s.State.DeleteRelated(ctx, secretName)
}

// storedRecord reads r's stored record from the cache, or from the API
// server if the cache has none (a record written a moment ago counts).
func (s *Syncer) storedRecord(ctx context.Context, r state.Related) (*state.RelatedRecord, error) {
	rec, err := s.State.StoredRecord(ctx, r, false)
	if err == nil && rec == nil {
		rec, err = s.State.StoredRecord(ctx, r, true)
	}
	return rec, err
}

// legacyOurs reports whether the legacy finalizer on r's kcp-origin source
// is the agent's (state.LegacyFinalizerOurs; last is r's state, which
// without a record is the reference's), with the agent's other records of
// the source it read to tell (none when the record alone tells).
func (s *Syncer) legacyOurs(ctx context.Context, r state.Related, record *state.RelatedRecord, last map[string]any) (bool, []state.StoredRelated, error) {
	if !state.LegacyFinalizerOurs(record, last != nil, nil) {
		return false, nil, nil
	}
	holders, err := s.State.SourceHolders(ctx, r.Primary, r.Origin)
	if err != nil {
		return false, nil, err
	}
	return state.LegacyFinalizerOurs(record, last != nil, holders), holders, nil
}

// desiredCopy is what the destination of origin should hold; other is
// the existing destination (or an empty object of its type).
func desiredCopy(e *related.Entry, origin *unstructured.Unstructured, other map[string]any) (*unstructured.Unstructured, error) {
	mutated, err := e.Mutator.Apply(origin.Object, other)
	if err != nil {
		return nil, fmt.Errorf("related %q: spec mutation: %w", e.Identifier, err)
	}
	return objmeta.Desired(&unstructured.Unstructured{Object: mutated}, e.SyncStatus), nil
}

// unsharedCopy returns the recorded destination of rec unless another
// primary that still exists records it too (two sources copied to one
// name): the copy is then left to that primary.
func (s *Syncer) unsharedCopy(ctx context.Context, ws Workspace, e *related.Entry, rec state.Related) (*unstructured.Unstructured, error) {
	others, err := s.State.OthersUsing(ctx, rec.Primary, string(e.Destination()), rec.Destination)
	if err != nil {
		return nil, err
	}
	if alive, err := s.alive(ctx, ws, rec.Primary, others); err != nil || len(alive) > 0 {
		return nil, err
	}
	return rec.Destination.Unstructured(), nil
}

// unrecordedCopy returns the destination of rec, which has no record, if
// it is a copy of origin that this agent wrote and whose record was never
// written (the pass ended between the two writes): this agent's field
// manager created it, it holds exactly what origin's copy would, and no
// other primary that still exists records it. Otherwise, or when it
// cannot be read for good (its type is gone, the agent may not read it),
// nil: someone else's object is never deleted, and the source's release
// does not wait for what cannot be decided.
func (s *Syncer) unrecordedCopy(ctx context.Context, ws Workspace, e *related.Entry, rec state.Related, origin *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	dest, created, err := s.copyOfRecord(ctx, rec)
	switch {
	case err != nil || dest == nil:
		return nil, err
	case created == nil:
		// Copies written before they had a manager of their own: the
		// agent's, identical to origin's copy, and recorded by no other
		// primary that still exists.
		if !createdBy(dest, keys.FieldManager) {
			return nil, nil
		}
		desired, err := desiredCopy(e, origin, dest.Object)
		if err != nil || merge.Overwrite(dest.DeepCopy(), desired.Object) {
			return nil, nil //nolint:nilerr // a copy that cannot be computed is not known to be ours
		}
		if cp, err := s.unsharedCopy(ctx, ws, e, rec); err != nil || cp == nil {
			return nil, err
		}
	}
	cp := rec.Destination.Unstructured()
	cp.SetUID(dest.GetUID()) // only the object read here
	return cp, nil
}

// copyManager is the field manager that creates the service copy of a
// kcp-origin record: one of its own per record (agent, primary, entry,
// origin object), so that a copy whose record was never written is told
// apart from every other object, the agent's copies for other records and
// other agents' included.
func (s *Syncer) copyManager(rec state.Related) string {
	sum := sha256.Sum256([]byte(s.AgentName + "/" + state.RelatedSecretName(rec)))
	return keys.FieldManager + "-" + hex.EncodeToString(sum[:])[:20]
}

// copyOfRecord reads the service-side destination of rec from the server
// (the caches of related types drop managedFields) and, if rec's own
// manager (copyManager) created it, what that create wrote (the fields the
// manager still owns); dest is nil when it cannot be read for good (gone,
// its type gone, the agent may not read it).
func (s *Syncer) copyOfRecord(ctx context.Context, rec state.Related) (dest, created *unstructured.Unstructured, err error) {
	dest = rec.Destination.Unstructured()
	err = s.Service.Get(ctx, types.NamespacedName{Namespace: rec.Destination.Namespace, Name: rec.Destination.Name}, dest)
	switch {
	case apierrors.IsNotFound(err), apimeta.IsNoMatchError(err), apierrors.IsForbidden(err):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("failed to get related destination %s: %w", rec.Destination.Name, err)
	}
	manager := s.copyManager(rec)
	for _, m := range dest.GetManagedFields() {
		if m.Manager == manager && m.FieldsV1 != nil {
			return dest, ownedFields(dest, m.FieldsV1.Raw), nil
		}
	}
	return dest, nil, nil
}

// ownedFields returns the part of obj that the fields set (a managedFields
// entry's FieldsV1) names; all of obj if the set cannot be read.
func ownedFields(obj *unstructured.Unstructured, fieldsV1 []byte) *unstructured.Unstructured {
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(fieldsV1)); err != nil {
		return obj
	}
	tv, err := smdtyped.DeducedParseableType.FromUnstructured(obj.Object)
	if err != nil {
		return obj
	}
	m, ok := tv.ExtractItems(set.Leaves()).AsValue().Unstructured().(map[string]any)
	if !ok {
		return obj
	}
	return &unstructured.Unstructured{Object: m}
}

// removeFinalizer releases our finalizer from a kcp-side object. A related
// source that is also a primary the agent syncs (contract §7 #31) is
// released all the same: its primary role does the related roles' cleanup
// itself (see releaseHolders), and if this role is done first while the
// object is being deleted, the primary's cleanup runs as for a vanished
// object (a primary whose PublishedResource is gone has no deletion flow
// that could take the finalizer off later). An object that is not being
// deleted gets it again from its own sync.
func (s *Syncer) removeFinalizer(ctx context.Context, ws Workspace, obj *unstructured.Unstructured, legacyOurs bool) (Result, error) {
	patch := ctrlruntimeclient.MergeFromWithOptions(obj.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
	if !s.finalizers().Release(obj, legacyOurs) {
		return Result{}, nil
	}
	if err := ws.Client.Patch(ctx, obj, patch); err != nil {
		if ObjectNotFound(err, obj.GetName()) {
			// Gone from kcp: it holds nothing any more. Not a write, so
			// the caller goes on instead of looking again at a cache that
			// may still show it (a watch that missed its deletion).
			return Result{}, nil
		}
		return Result{}, fmt.Errorf("failed to remove the finalizer from %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	s.Event(obj, corev1.EventTypeNormal, ReasonObjectDeleted, "The object was released by the service.")
	return Result{Writes: 1}, nil
}

// releaseRecorded removes the finalizer from the recorded kcp-origin
// source, if it still exists. The caller has made sure no other primary
// holds it.
func (s *Syncer) releaseRecorded(ctx context.Context, ws Workspace, rec state.RelatedRecord) (Result, error) {
	if rec.OriginSide != string(related.SideKcp) || rec.Origin.Name == "" {
		return Result{}, nil
	}
	origin := rec.Origin.Unstructured()
	err := ws.Client.Get(ctx, types.NamespacedName{Namespace: rec.Origin.Namespace, Name: rec.Origin.Name}, origin)
	if apierrors.IsNotFound(err) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("failed to get related source %s: %w", rec.Origin.Name, err)
	}
	// The caller made sure no other primary holds the source.
	return s.removeFinalizer(ctx, ws, origin, state.LegacyFinalizerOurs(&rec, false, nil))
}

// releaseHolders does, for a primary in deletion that other primaries
// hold as a kcp-origin related object (contract §7 #31), what
// their syncs do when they see a source deleted: their copies of it are
// deleted (if they recorded state for them), then their records. Their
// syncs run only on their own events (or never, if their
// PublishedResource is disabled, filtered or stopped), so waiting for them
// could hang the deletion.
func (s *Syncer) releaseHolders(ctx context.Context, ws Workspace, p state.Primary, obj *unstructured.Unstructured) (Result, error) {
	self := state.RefOf(obj)
	// Records of primaries that are gone (orphans) are cleaned up too: the
	// source is going, so their copies of it have no use either.
	holders, err := s.State.SourceHolders(ctx, p, self)
	if err != nil || len(holders) == 0 {
		return Result{}, err
	}
	res := Result{}
	for _, h := range holders {
		rec := state.Related{Primary: h.PrimaryOf(), RelatedRecord: h.RelatedRecord}
		stored, err := s.State.GetRelated(ctx, rec)
		if err != nil {
			return res, err
		}
		if stored != nil {
			policy := objmeta.PropagateBackground
			if h.OriginSide == string(related.SideKcp) {
				policy, _ = objmeta.PropagationOf(obj) // obj is the source
			}
			wrote, err := releaseCopy(ctx, s.side(ws, related.Side(h.OriginSide).Opposite()), h.Destination.Unstructured(), policy, orphanedFrom(ws.Cluster, self.Namespace, self.Name))
			if err != nil {
				return res, err
			}
			if wrote {
				res.Writes++
				s.Event(obj, corev1.EventTypeNormal, ReasonObjectCleanup, releaseMessage(policy, "the copy another object made of this one as a related object"))
			}
		}
		if err := s.State.DeleteRelated(ctx, h.SecretName); err != nil {
			return res, err
		}
		res.Writes++
	}
	return res, nil
}

// heldByOthers reports whether the record of another primary that still
// exists names ref as its kcp origin: only such a record releases the
// source's finalizer later. (A record that names it as the copy of a
// service object never does, and the record of a primary that is gone is
// an orphan.) A primary of another kind counts as existing.
func (s *Syncer) heldByOthers(ctx context.Context, ws Workspace, p state.Primary, ref state.ObjectRef) (bool, error) {
	holders, err := s.State.SourceHolders(ctx, p, ref)
	if err != nil {
		return false, err
	}
	alive, err := s.alive(ctx, ws, p, holders)
	return len(alive) > 0, err
}

// alive returns the records whose primary still exists, by a live read in
// the workspace: a record of a primary that vanished without its deletion
// being processed (an orphan) keeps nothing alive and lets nobody adopt.
// A primary whose type the workspace does not serve cannot be checked and
// counts as alive.
func (s *Syncer) alive(ctx context.Context, ws Workspace, p state.Primary, records []state.StoredRelated) ([]state.StoredRelated, error) {
	reader := ws.reader()
	own := schema.FromAPIVersionAndKind(p.APIVersion, p.Kind).GroupKind()
	var out []state.StoredRelated
	for _, o := range records {
		if o.Cluster != p.Cluster {
			// Another workspace's record (service-side objects are shared
			// across workspaces): it cannot be checked here, so it counts.
			out = append(out, o)
			continue
		}
		primary := o.Primary.Unstructured()
		if o.Primary.GroupKind() == own {
			// Read in the version this controller syncs.
			primary.SetAPIVersion(p.APIVersion)
		}
		err := reader.Get(ctx, types.NamespacedName{Namespace: o.Primary.Namespace, Name: o.Primary.Name}, primary)
		switch {
		case ObjectNotFound(err, o.Primary.Name):
		case err == nil, apimeta.IsNoMatchError(err), apierrors.IsNotFound(err):
			// A 404 that is not about the object (the type is not served)
			// cannot tell: the record counts.
			out = append(out, o)
		default:
			return nil, fmt.Errorf("failed to get primary %s: %w", o.Primary.Name, err)
		}
	}
	return out, nil
}

// ObjectNotFound reports whether err says that the object name does not
// exist (not that its type is not served).
func ObjectNotFound(err error, name string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	// A 404 without a Status body (a path the server does not serve, such
	// as a virtual workspace whose binding is going away) is turned into a
	// Status by client-go that names the requested object too; it says
	// nothing about the object.
	d := status.Status().Details
	if d == nil || d.Name != name {
		return false
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return false
		}
	}
	return status.Status().Message != genericNotFoundMessage
}

// genericNotFoundMessage is client-go's message for a 404 whose body is
// not a Status.
const genericNotFoundMessage = "the server could not find the requested resource"

// sharing reports whether other primaries that still exist hold a record's
// source (see heldByOthers) and use its destination.
func (s *Syncer) sharing(ctx context.Context, ws Workspace, p state.Primary, st state.StoredRelated) (source, dest bool, err error) {
	if st.OriginSide == string(related.SideKcp) && st.Origin.Name != "" {
		if source, err = s.heldByOthers(ctx, ws, p, st.Origin); err != nil {
			return false, false, err
		}
	}
	if st.Destination.Name != "" {
		others, err := s.State.OthersUsing(ctx, p, string(related.Side(st.OriginSide).Opposite()), st.Destination)
		if err != nil {
			return false, false, err
		}
		alive, err := s.alive(ctx, ws, p, others)
		if err != nil {
			return false, false, err
		}
		dest = len(alive) > 0
	}
	return source, dest, nil
}

// forgetRelated deletes a record's state Secret, releases its kcp-origin
// source and, with deleteCopy, deletes its destination, except what other
// primaries still use. When something is shared, the record goes first and
// the check is repeated: of two primaries that let go at the same moment,
// the one that looks last cleans up, so nothing is left behind.
func (s *Syncer) forgetRelated(ctx context.Context, ws Workspace, p state.Primary, obj *unstructured.Unstructured, st state.StoredRelated, deleteCopy bool) (Result, error) {
	res := Result{}
	sourceShared, destShared, err := s.sharing(ctx, ws, p, st)
	if err != nil {
		return res, err
	}
	recordGone := false
	if sourceShared || (deleteCopy && destShared) {
		if err := s.State.DeleteRelated(ctx, st.SecretName); err != nil {
			return res, err
		}
		res.Writes++
		recordGone = true
		if sourceShared, destShared, err = s.sharing(ctx, ws, p, st); err != nil {
			return res, err
		}
	}
	if deleteCopy && !destShared && st.Destination.Name != "" {
		cp := st.Destination.Unstructured()
		cp.SetUID(st.DestinationUID) // only the object this agent wrote
		policy, err := s.sourcePropagation(ctx, ws, st.RelatedRecord)
		if err != nil {
			return res, err
		}
		wrote, err := releaseCopy(ctx, s.side(ws, related.Side(st.OriginSide).Opposite()), cp, policy, orphanedFrom(ws.Cluster, st.Origin.Namespace, st.Origin.Name))
		if err != nil {
			return res, err
		}
		if wrote {
			res.Writes++
			s.Event(obj, corev1.EventTypeNormal, ReasonObjectCleanup, releaseMessage(policy, fmt.Sprintf("the copy of related object %q", st.Identifier)))
		}
	}
	if !sourceShared {
		r, err := s.releaseRecorded(ctx, ws, st.RelatedRecord)
		res.add(r)
		if err != nil {
			return res, err
		}
	}
	if !recordGone {
		if err := s.State.DeleteRelated(ctx, st.SecretName); err != nil {
			return res, err
		}
		res.Writes++
	}
	return res, nil
}

// pruneRelated drops the state of related objects the primary no longer
// selects (their copies stay) and releases kcp-origin sources. The record
// of a service-origin copy stays as long as the copy does: it is the proof
// that the copy is ours, so a source that comes back (deleted and created
// again, selected again) updates its copy instead of finding it foreign.
func (s *Syncer) pruneRelated(ctx context.Context, ws Workspace, p state.Primary, obj *unstructured.Unstructured, keep sets.Set[string]) (Result, error) {
	stored, err := s.State.ListRelated(ctx, p, "")
	if err != nil {
		return Result{}, err
	}
	res := Result{}
	for _, st := range stored {
		if keep.Has(st.SecretName) {
			continue
		}
		if s.keepRecord(ctx, ws, st) {
			continue
		}
		r, err := s.forgetRelated(ctx, ws, p, obj, st, false)
		res.add(r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// updateRelatedAnnotations sets the related-resources annotations of obj
// to want and removes stale ones (contract §4.2, §7 #17).
func (s *Syncer) updateRelatedAnnotations(ctx context.Context, ws Workspace, obj *unstructured.Unstructured, want map[string]string) (Result, error) {
	have := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if strings.HasPrefix(k, keys.RelatedResourcesPrefix) {
			have[k] = v
		}
	}
	if maps.Equal(have, want) {
		return Result{}, nil
	}
	changes := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[k]; !ok {
			changes[k] = nil
		}
	}
	for k, v := range want {
		changes[k] = v
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": changes}})
	if err != nil {
		return Result{}, fmt.Errorf("failed to encode the annotation patch: %w", err)
	}
	if err := ws.Client.Patch(ctx, obj, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); err != nil {
		return Result{}, fmt.Errorf("failed to update the related-resources annotations: %w", err)
	}
	return Result{Writes: 1, Requeue: true}, nil
}

// deleteRelated runs the related part of the primary's deletion (contract
// §6.13): copies of kcp-origin objects and of entries with cleanup are
// deleted, then kcp-origin sources are released. It works from the state
// records, so it needs neither copy of the primary; sources the current
// rules select but that have no record in the cache are released too
// (their record is asked of the server first). An object
// another primary also uses (its own record names it) keeps its copy and
// finalizer; the last primary to go removes them.
func (s *Syncer) deleteRelated(ctx context.Context, ws Workspace, p state.Primary, obj, local *unstructured.Unstructured) (Result, error) {
	res := Result{}
	stored, err := s.State.ListRelated(ctx, p, "")
	if err != nil {
		return res, err
	}
	recorded := sets.New[string]()
	for _, st := range stored {
		recorded.Insert(st.SecretName)
	}

	if len(s.Related) > 0 && local != nil {
		primaries := related.Primaries{Kcp: obj, Service: local, ClusterName: ws.Cluster, ClusterPath: ws.Path}
		readers := related.Readers{Kcp: ws.Client, Service: s.RelatedService}
		for _, e := range s.Related {
			if e.Origin != related.SideKcp {
				continue
			}
			// Best effort: a resolution error only means nothing extra to release.
			pairs, _ := e.Resolve(ctx, primaries, readers)
			for _, pair := range pairs {
				rec := state.Related{Primary: p, RelatedRecord: s.relatedRecord(e, pair)}
				if recorded.Has(state.RelatedSecretName(rec)) {
					continue // released below, from the record
				}
				shared, err := s.heldByOthers(ctx, ws, p, rec.Origin)
				if err != nil {
					return res, err
				}
				if !shared {
					// releaseSource also deletes a copy the reference's
					// state (kept in the primary's Secret) records.
					r, err := s.releaseSource(ctx, ws, e, rec, pair.Origin)
					res.add(r)
					if err != nil {
						return res, err
					}
				}
			}
		}
	}

	r, err := s.forgetRecords(ctx, ws, p, obj, stored)
	res.add(r)
	return res, err
}

// forgetRecords forgets the related records of a primary being deleted:
// kcp-origin copies and those of entries with cleanup go too.
func (s *Syncer) forgetRecords(ctx context.Context, ws Workspace, p state.Primary, obj *unstructured.Unstructured, stored []state.StoredRelated) (Result, error) {
	res := Result{}
	for _, st := range stored {
		cleanup := st.OriginSide == string(related.SideKcp)
		if e := s.relatedEntry(st.Identifier); e != nil && e.Cleanup {
			cleanup = true
		}
		r, err := s.forgetRelated(ctx, ws, p, obj, st, cleanup)
		res.add(r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// forgetUnseenRelated is the last related step of a primary's deletion:
// records the cache has not seen yet (written a moment ago; after a
// restart of the service cluster's API server the cache can lag for up to
// 30 s) are listed from the server, once per deletion, and forgotten: the
// state Secrets that go next would otherwise take with them the only
// trace of copies that nothing else deletes.
func (s *Syncer) forgetUnseenRelated(ctx context.Context, ws Workspace, p state.Primary, obj *unstructured.Unstructured) (Result, error) {
	stored, err := s.State.ListRelatedLive(ctx, p)
	if err != nil || len(stored) == 0 {
		return Result{}, err
	}
	return s.forgetRecords(ctx, ws, p, obj, stored)
}

func (s *Syncer) relatedEntry(identifier string) *related.Entry {
	for _, e := range s.Related {
		if e.Identifier == identifier {
			return e
		}
	}
	return nil
}

// hiddenInKcp reports whether the kcp destination dest of a service-origin
// entry, which kcp says exists, is hidden from the agent: the workspace's
// server does not show it either (since kcp 0.29 an object outside the
// label selector of the consumer's accepted claim), so no later pass
// would see it.
func hiddenInKcp(ctx context.Context, ws Workspace, e *related.Entry, dest *unstructured.Unstructured) (bool, error) {
	if e.Origin != related.SideService || ws.Live == nil {
		return false, nil
	}
	cur, err := readLive(ctx, ws, dest)
	return cur == nil, err
}

// goneFromServer tells whether a kcp object read from the workspace cache
// is gone from the server or being deleted (or is another object by now).
func goneFromServer(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) (bool, error) {
	if ws.Live == nil {
		return false, nil
	}
	cur, err := readLive(ctx, ws, obj)
	switch {
	case err != nil:
		return false, err
	case cur == nil:
		return true, nil
	}
	return cur.GetDeletionTimestamp() != nil || cur.GetUID() != obj.GetUID(), nil
}

// readLive reads obj's kind and name from the workspace's server (ws.Live);
// nil when the server does not show such an object.
func readLive(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	err := ws.Live.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(obj), cur)
	switch {
	case ObjectNotFound(err, obj.GetName()):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read related %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return cur, nil
}

// earlierCopy returns the kcp object dest as the server has it if this
// agent created it as rec's copy (rec's own field manager, copyManager: the
// same record for a primary deleted and created again under its name; no
// other primary, origin or agent), nil otherwise. The workspace caches keep
// no managedFields, so dest is read again from the server (ws.Live;
// without one, a cached object that lacks them is not taken over). retry:
// dest is gone or another object since the cache saw it.
func (s *Syncer) earlierCopy(ctx context.Context, ws Workspace, rec state.Related, dest *unstructured.Unstructured) (cur *unstructured.Unstructured, retry bool, err error) {
	manager := s.copyManager(rec)
	if createdBy(dest, manager) {
		return dest, false, nil
	}
	if ws.Live == nil {
		return nil, false, nil
	}
	cur = &unstructured.Unstructured{}
	cur.SetGroupVersionKind(dest.GroupVersionKind())
	err = ws.Live.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(dest), cur)
	switch {
	case ObjectNotFound(err, dest.GetName()):
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("failed to read related %s %s: %w", dest.GetKind(), dest.GetName(), err)
	case cur.GetUID() != dest.GetUID():
		return nil, true, nil
	case createdBy(cur, manager):
		return cur, false, nil
	}
	return nil, false, nil
}

// createdBy tells whether manager wrote obj (a consumer's object of the
// same name has other managers).
func createdBy(obj *unstructured.Unstructured, manager string) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager {
			return true
		}
	}
	return false
}

// keepRecord tells whether the record of a related object the primary no
// longer resolves stays: a service-origin copy whose entry is still
// configured and which is still the object this agent wrote (same UID;
// records written before UIDs were kept: any object of that name). Its
// absence in the cache is confirmed with the server; when the copy cannot
// be read the record stays (dropping it would turn the copy into someone
// else's for good).
func (s *Syncer) keepRecord(ctx context.Context, ws Workspace, st state.StoredRelated) bool {
	if st.OriginSide != string(related.SideService) || st.Destination.Name == "" || s.relatedEntry(st.Identifier) == nil {
		return false
	}
	key := types.NamespacedName{Namespace: st.Destination.Namespace, Name: st.Destination.Name}
	readers := []ctrlruntimeclient.Reader{ws.Client}
	if ws.Live != nil {
		readers = append(readers, ws.Live)
	}
	for _, r := range readers {
		cp := st.Destination.Unstructured()
		err := r.Get(ctx, key, cp)
		switch {
		case err == nil:
			return st.DestinationUID == "" || cp.GetUID() == st.DestinationUID
		case !ObjectNotFound(err, key.Name):
			return true // unreadable, or a 404 that says nothing about the object
		}
	}
	return false
}
