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
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// ReleaseDeletedSources is the pass of a primary that is not synced (it
// does not match spec.filter, or synchronization is disabled): the
// kcp-origin related sources its records name and that are being deleted
// are released as in a synced pass (releaseSource: the copy, the
// finalizer, then the record), so that a consumer deleting a source is
// never held up by the state of the primary that uses it. Records of
// entries removed from the PublishedResource are forgotten as a synced
// pass prunes them: the source is released, its copy stays unless the
// source is being deleted. Nothing else is written.
//
// Sources with the finalizer but no record (a pass that ended between the
// finalizer and the first copy) are released by the primary's next synced
// pass or its deletion, or by the PublishedResource's release.
func (s *Syncer) ReleaseDeletedSources(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) (Result, error) {
	res := Result{}
	p := primaryOf(ws, obj)
	stored, err := s.State.ListRelated(ctx, p, "")
	if err != nil {
		return res, err
	}
	// Sources of current entries first: a record of a removed entry whose
	// type is no longer served must not hold up a consumer's deletion.
	var removed []state.StoredRelated
	for _, st := range stored {
		if st.OriginSide != string(related.SideKcp) || st.Origin.Name == "" {
			continue
		}
		e := s.relatedEntry(st.Identifier)
		if e == nil || e.Origin != related.SideKcp {
			removed = append(removed, st)
			continue
		}
		origin, err := s.readSource(ctx, ws, st)
		if err != nil {
			return res, err
		}
		if origin == nil || origin.GetDeletionTimestamp() == nil {
			continue
		}
		r, err := s.releaseSource(ctx, ws, e, state.Related{Primary: p, RelatedRecord: st.RelatedRecord}, origin)
		res.add(r)
		if err != nil {
			return res, err
		}
	}
	var errs []error
	for _, st := range removed {
		origin, err := s.readSource(ctx, ws, st)
		if err != nil {
			// Its type may no longer be served: the record stays (the
			// PublishedResource's release takes it), the others go on.
			errs = append(errs, err)
			continue
		}
		r, err := s.forgetRelated(ctx, ws, p, obj, st, origin != nil && origin.GetDeletionTimestamp() != nil)
		res.add(r)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// readSource reads a record's kcp-origin source: nil if the workspace
// says that object is gone (a 404 that names it; one for the whole
// resource is an error, not an answer).
func (s *Syncer) readSource(ctx context.Context, ws Workspace, st state.StoredRelated) (*unstructured.Unstructured, error) {
	origin := st.Origin.Unstructured()
	err := ws.Client.Get(ctx, types.NamespacedName{Namespace: st.Origin.Namespace, Name: st.Origin.Name}, origin)
	switch {
	case err == nil:
		return origin, nil
	case ObjectNotFound(err, st.Origin.Name):
		return nil, nil
	}
	return nil, fmt.Errorf("failed to get related source %s: %w", st.Origin.Name, err)
}
