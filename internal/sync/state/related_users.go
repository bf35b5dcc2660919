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

package state

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// RelatedObjectIndex names the cache index of related state Secrets by the
// objects their record names (origin and destination). Two primaries can
// select the same related object; the index tells the deletion of one of
// them that the other still uses the object.
const RelatedObjectIndex = "syncagent.kcp.io/related-object"

// RelatedObjectIndexValues returns the index values of a related state
// Secret: one RelatedObjectKey for its origin and one for its destination.
func RelatedObjectIndexValues(obj ctrlruntimeclient.Object) []string {
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return nil
	}
	if _, isRelated := secret.Labels[keys.RelatedIdentifier]; !isRelated {
		return nil
	}
	st, ok := storedRelated(secret)
	if !ok || st.Origin.Name == "" {
		return nil
	}
	destSide := sideKcp
	if st.OriginSide == sideKcp {
		destSide = sideService
	}
	return []string{st.OriginKey(), RelatedObjectKey(st.Cluster, destSide, st.Destination)}
}

// Sides of a RelatedRecord.
const (
	sideKcp     = "kcp"
	sideService = "service"
)

// RelatedObjectKey identifies an object on one side: kcp-side objects
// within their workspace (cluster), service-side ones cluster-wide. The
// version is left out, as one object is served in several.
func RelatedObjectKey(cluster, side string, ref ObjectRef) string {
	if side != sideKcp {
		cluster = ""
	}
	gk := ref.GroupKind()
	return strings.Join([]string{side, cluster, gk.Group, gk.Kind, ref.Namespace, ref.Name}, "/")
}

// UsedByOthers reports whether a related state Secret of a primary other
// than p records ref on side, as origin or destination.
func (s *Store) UsedByOthers(ctx context.Context, p Primary, side string, ref ObjectRef) (bool, error) {
	others, err := s.OthersUsing(ctx, p, side, ref)
	return len(others) > 0, err
}

// OthersUsing returns the records of primaries other than p that name ref
// on side, as origin or destination. Candidates come from the cache's
// RelatedObjectIndex and each is confirmed by a live read, so that a record
// deleted a moment ago never keeps a copy or a finalizer alive. (A record
// written a moment ago may be missed; its primary's next pass restores what
// a caller removes because of that.)
func (s *Store) OthersUsing(ctx context.Context, p Primary, side string, ref ObjectRef) ([]StoredRelated, error) {
	key := RelatedObjectKey(p.Cluster, side, ref)
	var list corev1.SecretList
	if err := s.Client.List(ctx, &list, ctrlruntimeclient.InNamespace(s.Namespace),
		ctrlruntimeclient.MatchingFields{RelatedObjectIndex: key}); err != nil {
		return nil, fmt.Errorf("failed to list related state Secrets: %w", err)
	}
	own := ObjectRef{APIVersion: p.APIVersion, Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}
	var out []StoredRelated
	for i := range list.Items {
		candidate := &list.Items[i]
		if owner, _ := PrimaryOfRelated(candidate); candidate.Labels[keys.RemoteObjectCluster] == p.Cluster && sameObject(owner, own) {
			continue
		}
		live := &corev1.Secret{}
		err := s.live().Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: candidate.Name}, live)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("failed to get related state Secret %s: %w", candidate.Name, err)
		}
		if live.DeletionTimestamp != nil || !slices.Contains(RelatedObjectIndexValues(live), key) {
			continue
		}
		if st, ok := storedRelated(live); ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// SourceHolders returns the records of primaries other than p that name
// ref as their kcp origin (confirmed live, as OthersUsing): the records
// whose primaries hold the source's finalizer. A record that names ref only
// as the kcp copy of a service object holds nothing.
func (s *Store) SourceHolders(ctx context.Context, p Primary, ref ObjectRef) ([]StoredRelated, error) {
	others, err := s.OthersUsing(ctx, p, sideKcp, ref)
	if err != nil {
		return nil, err
	}
	key := RelatedObjectKey(p.Cluster, sideKcp, ref)
	return slices.DeleteFunc(others, func(o StoredRelated) bool { return !s.holdsSource(o, key) }), nil
}

// holdsSource reports whether st is a record of this agent (or of a
// version before the agent label) that names the object of key as its kcp
// origin. Another agent's record (in the same namespace) holds its own
// finalizer, none of this agent's.
func (s *Store) holdsSource(st StoredRelated, key string) bool {
	return st.OriginSide == sideKcp && st.OriginKey() == key && (st.Agent == "" || st.Agent == s.AgentName)
}

// sameObject compares two references by group, kind, namespace and name.
func sameObject(a, b ObjectRef) bool {
	return a.GroupKind() == b.GroupKind() && a.Namespace == b.Namespace && a.Name == b.Name
}

// RecordsOfSource returns the agent's records, as the cache has them, that
// name ref in workspace cluster as their kcp origin: the primaries whose
// finalizer the source carries. For an event handler, which must not wait
// on the API server; a record the cache has not seen yet is missed.
func (s *Store) RecordsOfSource(ctx context.Context, cluster string, ref ObjectRef) ([]StoredRelated, error) {
	key := RelatedObjectKey(cluster, sideKcp, ref)
	var list corev1.SecretList
	if err := s.Client.List(ctx, &list, ctrlruntimeclient.InNamespace(s.Namespace),
		ctrlruntimeclient.MatchingFields{RelatedObjectIndex: key}); err != nil {
		return nil, fmt.Errorf("failed to list related state Secrets: %w", err)
	}
	return s.recordsOfSource(list.Items, key), nil
}

// RecordsOfSourceLive is RecordsOfSource read from the API server (every
// related state Secret of the namespace): for a decision that cannot be
// undone, such as releasing a source no cached record names.
func (s *Store) RecordsOfSourceLive(ctx context.Context, cluster string, ref ObjectRef) ([]StoredRelated, error) {
	var list corev1.SecretList
	if err := s.live().List(ctx, &list, ctrlruntimeclient.InNamespace(s.Namespace), ctrlruntimeclient.HasLabels{keys.RelatedIdentifier}); err != nil {
		return nil, fmt.Errorf("failed to list related state Secrets: %w", err)
	}
	return s.recordsOfSource(list.Items, RelatedObjectKey(cluster, sideKcp, ref)), nil
}

func (s *Store) recordsOfSource(secrets []corev1.Secret, key string) []StoredRelated {
	var out []StoredRelated
	for i := range secrets {
		st, ok := storedRelated(&secrets[i])
		if ok && s.holdsSource(st, key) {
			out = append(out, st)
		}
	}
	return out
}
