package syncer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// ReleaseDeletedSources is the pass of a primary that is not synced (it
// does not match spec.filter, or synchronization is disabled): the
// kcp-origin related sources its records name and that are being deleted
// are released as in a synced pass (releaseSource: the copy, the record,
// then the finalizer), so that a consumer deleting a source is never held
// up by the state of the primary that uses it. Records of entries removed
// from the PublishedResource are forgotten as a synced pass prunes them:
// the source is released, its copy stays unless the source is being
// deleted. Nothing else is written.
//
// Sources with the finalizer but no record (a pass that ended between the
// finalizer and the first copy) are released by the primary's next synced
// pass or its deletion, or by the PublishedResource's release.
func (s *Syncer) ReleaseDeletedSources(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) (Result, error) {
	res := Result{}
	remote := objmeta.Remote{Cluster: ws.Cluster, Namespace: obj.GetNamespace(), Name: obj.GetName(), Path: ws.Path}
	p := state.Primary{Remote: remote, APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind()}
	stored, err := s.State.ListRelated(ctx, p, "")
	if err != nil {
		return res, err
	}
	for _, st := range stored {
		if st.OriginSide != string(related.SideKcp) || st.Origin.Name == "" {
			continue
		}
		origin := st.Origin.Unstructured()
		if err := ws.Client.Get(ctx, types.NamespacedName{Namespace: st.Origin.Namespace, Name: st.Origin.Name}, origin); err != nil {
			if !apierrors.IsNotFound(err) {
				return res, fmt.Errorf("failed to get related source %s: %w", st.Origin.Name, err)
			}
			origin = nil
		}
		deleting := origin != nil && origin.GetDeletionTimestamp() != nil
		var r Result
		switch e := s.relatedEntry(st.Identifier); {
		case e == nil || e.Origin != related.SideKcp:
			// The entry is gone from the PublishedResource.
			r, err = s.forgetRelated(ctx, ws, p, obj, st, deleting)
		case deleting:
			r, err = s.releaseSource(ctx, ws, e, state.Related{Primary: p, RelatedRecord: st.RelatedRecord}, origin)
		}
		res.add(r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}
