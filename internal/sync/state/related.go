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
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// Data keys of related state Secrets.
const (
	relatedStateKey  = "state"
	relatedRecordKey = "record"
)

// ObjectRef names an object on one side.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// RefOf returns the reference to obj.
func RefOf(obj *unstructured.Unstructured) ObjectRef {
	return ObjectRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Unstructured returns an object with only the type and name of r.
func (r ObjectRef) Unstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(r.APIVersion)
	u.SetKind(r.Kind)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Name)
	return u
}

// GroupKind returns the reference's group and kind.
func (r ObjectRef) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind).GroupKind()
}

// RelatedRecord describes one synced related object.
type RelatedRecord struct {
	// Primary is the kcp primary.
	Primary    ObjectRef `json:"primary"`
	Identifier string    `json:"identifier"`
	// OriginSide is "kcp" or "service".
	OriginSide  string    `json:"originSide"`
	Origin      ObjectRef `json:"origin"`
	Destination ObjectRef `json:"destination"`
	// DestinationUID is the UID of the copy this agent wrote (empty in
	// records written before it was kept): an object put in its place by
	// someone else has another UID.
	DestinationUID types.UID `json:"destinationUID,omitempty"`
	// Finalizer is the finalizer the agent put on a kcp-origin source for
	// this record, its own (empty in records written before per-agent
	// finalizers: the source then carries the legacy one, which is the
	// agent's to migrate or remove).
	Finalizer string `json:"finalizer,omitempty"`
}

// Related identifies the state of one related object of a primary.
type Related struct {
	Primary
	RelatedRecord
}

// RelatedSecretName returns the name of a related object's state Secret.
func RelatedSecretName(r Related) string {
	gk := r.Origin.GroupKind()
	h := sha1Hex(encode(map[string]string{
		"primaryGroup":    schema.FromAPIVersionAndKind(r.APIVersion, r.Kind).Group,
		"kind":            r.Kind,
		"name":            r.Name,
		"namespace":       r.Namespace,
		"identifier":      r.Identifier,
		"originGroup":     gk.Group,
		"originKind":      gk.Kind,
		"originNamespace": r.Origin.Namespace,
		"originName":      r.Origin.Name,
	}))
	return fmt.Sprintf("obj-state-%s-%s", r.Cluster, h[:20])
}

// GetRelated returns the normalized last state of a related object, or nil.
func (s *Store) GetRelated(ctx context.Context, r Related) (map[string]any, error) {
	state, found, err := s.readRelated(ctx, s.Client, r)
	if found || err != nil {
		return state, err
	}

	// The reference kept related state in the primary's Secret.
	legacyCluster := ""
	if r.OriginSide == "kcp" {
		legacyCluster = r.Cluster
	}
	key := LegacyKey(legacyCluster, r.Origin.Namespace, r.Origin.Name)
	var list corev1.SecretList
	if err := s.list(ctx, &list, r.Primary, s.selector(r.Primary, false)); err != nil {
		return nil, fmt.Errorf("failed to list state Secrets: %w", err)
	}
	gk := r.Origin.GroupKind()
	for _, sec := range list.Items {
		if state := normalize(sec.Data[key], &gk); state != nil {
			return state, nil
		}
	}
	return nil, nil
}

// RelatedDestinationUID returns the UID of the copy the stored record of r
// names ("" if there is no record or it has no UID), from the cache or,
// with live, from the API server.
func (s *Store) RelatedDestinationUID(ctx context.Context, r Related, live bool) (types.UID, error) {
	rec, err := s.StoredRecord(ctx, r, live)
	if err != nil || rec == nil {
		return "", err
	}
	return rec.DestinationUID, nil
}

// StoredRecord returns the stored record of r (nil if there is none, or it
// cannot be read), from the cache or, with live, from the API server.
func (s *Store) StoredRecord(ctx context.Context, r Related, live bool) (*RelatedRecord, error) {
	var reader ctrlruntimeclient.Reader = s.Client
	if live {
		reader = s.live()
	}
	secret := &corev1.Secret{}
	err := reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: RelatedSecretName(r)}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get related state Secret: %w", err)
	}
	var rec RelatedRecord
	if json.Unmarshal(secret.Data[relatedRecordKey], &rec) != nil {
		return nil, nil
	}
	return &rec, nil
}

// GetRelatedLive reads the related object's own state Secret from the API
// server: before a destination is refused as someone else's, a state
// Secret written a moment ago must not be missed because the cache has not
// seen it yet.
func (s *Store) GetRelatedLive(ctx context.Context, r Related) (map[string]any, error) {
	state, _, err := s.readRelated(ctx, s.live(), r)
	return state, err
}

// live returns the reader for reads that must not lag.
func (s *Store) live() ctrlruntimeclient.Reader {
	if s.Live == nil {
		return s.Client
	}
	return s.Live
}

// readRelated reads the related object's own state Secret through reader;
// found is false when the Secret does not exist.
func (s *Store) readRelated(ctx context.Context, reader ctrlruntimeclient.Reader, r Related) (state map[string]any, found bool, err error) {
	secret := &corev1.Secret{}
	err = reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: RelatedSecretName(r)}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("failed to get related state Secret: %w", err)
	}
	return normalize(secret.Data[relatedStateKey], nil), true, nil
}

// PutRelated stores desired as the last state of a related object.
func (s *Store) PutRelated(ctx context.Context, r Related, desired map[string]any) error {
	snapshot := (&unstructured.Unstructured{Object: desired}).DeepCopy()
	snapshot.SetAPIVersion(r.Origin.APIVersion)
	snapshot.SetKind(r.Origin.Kind)
	snapshot.SetName(r.Origin.Name)
	if r.Origin.Namespace != "" {
		snapshot.SetNamespace(r.Origin.Namespace)
	}
	data, err := snapshot.MarshalJSON()
	if err != nil {
		return fmt.Errorf("failed to encode state: %w", err)
	}
	record := r.RelatedRecord
	record.Primary = ObjectRef{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	recordData, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("failed to encode state record: %w", err)
	}
	want := map[string][]byte{relatedStateKey: bytes.TrimSpace(data), relatedRecordKey: recordData}
	wantLabels := s.labels(r.Primary)
	wantLabels[keys.RelatedIdentifier] = r.Identifier

	name := RelatedSecretName(r)
	secret := &corev1.Secret{}
	err = s.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name, Labels: wantLabels},
			Type:       corev1.SecretTypeOpaque,
			Data:       want,
		}
		if err := s.Client.Create(ctx, secret); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // cache lag, as in Put
			}
			return fmt.Errorf("failed to create related state Secret: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("failed to get related state Secret: %w", err)
	}
	if labels.Equals(secret.Labels, wantLabels) && bytes.Equal(secret.Data[relatedStateKey], want[relatedStateKey]) &&
		bytes.Equal(secret.Data[relatedRecordKey], want[relatedRecordKey]) {
		return nil
	}
	secret.Labels = wantLabels
	secret.Data = want
	if err := s.Client.Update(ctx, secret); err != nil {
		return fmt.Errorf("failed to update related state Secret: %w", err)
	}
	return nil
}

// NameFinalizer makes each of records name finalizer (see
// RelatedRecord.Finalizer), leaving the rest of the Secret as it is; a
// record that is gone is skipped.
func (s *Store) NameFinalizer(ctx context.Context, records []StoredRelated, finalizer string) error {
	for _, r := range records {
		if r.Finalizer == finalizer {
			continue
		}
		secret := &corev1.Secret{}
		err := s.live().Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: r.SecretName}, secret)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("failed to get related state Secret: %w", err)
		}
		var rec RelatedRecord
		if err := json.Unmarshal(secret.Data[relatedRecordKey], &rec); err != nil {
			continue // unreadable: it goes with its primary
		}
		rec.Finalizer = finalizer
		data, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("failed to encode state record: %w", err)
		}
		secret.Data[relatedRecordKey] = data
		if err := s.Client.Update(ctx, secret); ctrlruntimeclient.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to update related state Secret: %w", err)
		}
	}
	return nil
}

// LegacyFinalizerOurs reports whether the legacy finalizer on a kcp-origin
// source is this agent's, given the agent's record of it (nil: none), whether
// the reference's state of it exists in the primary's Secret (after a switch
// from the reference), and the agent's other records of it (holders, see
// SourceHolders): the source was recorded before the agent had a finalizer
// of its own (a record naming none, or only the reference's state), and no
// other record names the agent's own (then the agent took the source over
// already, and a legacy finalizer on it is another agent's).
func LegacyFinalizerOurs(record *RelatedRecord, referenceState bool, holders []StoredRelated) bool {
	if record != nil && record.Finalizer != "" || record == nil && !referenceState {
		return false
	}
	return !slices.ContainsFunc(holders, func(h StoredRelated) bool { return h.Finalizer != "" })
}

// StoredRelated is a related state Secret found by ListRelated or
// RelatedRecordsOf.
type StoredRelated struct {
	SecretName string
	// Cluster is the workspace of the primary.
	Cluster string
	// Agent is the agent that wrote the record (empty in records of
	// versions before the agent label).
	Agent string
	RelatedRecord
}

// RelatedRecordsOf returns the readable related records of every primary of
// group and kind gk, sorted by Secret name, whichever agent wrote them: the
// Secret's name does not name the agent, so another agent that took a
// PublishedResource over (in the same namespace) rewrites this agent's
// records as its own, and a release must still find the sources this
// agent's finalizer is on (StoredRelated.Agent says whose each is).
func (s *Store) RelatedRecordsOf(ctx context.Context, gk schema.GroupKind) ([]StoredRelated, error) {
	var list corev1.SecretList
	if err := s.Client.List(ctx, &list, ctrlruntimeclient.InNamespace(s.Namespace),
		ctrlruntimeclient.HasLabels{keys.RelatedIdentifier}); err != nil {
		return nil, fmt.Errorf("failed to list related state Secrets: %w", err)
	}
	var out []StoredRelated
	for i := range list.Items {
		if st, ok := storedRelated(&list.Items[i]); ok && st.Primary.GroupKind() == gk {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b StoredRelated) int { return cmp.Compare(a.SecretName, b.SecretName) })
	return out, nil
}

// storedRelated reads a related state Secret; ok is false when its record
// cannot be read.
func storedRelated(secret *corev1.Secret) (st StoredRelated, ok bool) {
	st = StoredRelated{SecretName: secret.Name, Cluster: secret.Labels[keys.RemoteObjectCluster], Agent: secret.Labels[keys.AgentName]}
	if err := json.Unmarshal(secret.Data[relatedRecordKey], &st.RelatedRecord); err != nil {
		return StoredRelated{SecretName: st.SecretName, Cluster: st.Cluster, Agent: st.Agent}, false
	}
	return st, true
}

// OriginKey returns the RelatedObjectKey of the record's origin.
func (r StoredRelated) OriginKey() string {
	return RelatedObjectKey(r.Cluster, r.OriginSide, r.Origin)
}

// PrimaryOf returns the primary a record belongs to.
func (r StoredRelated) PrimaryOf() Primary {
	p := Primary{APIVersion: r.Primary.APIVersion, Kind: r.Primary.Kind}
	p.Cluster, p.Namespace, p.Name = r.Cluster, r.Primary.Namespace, r.Primary.Name
	return p
}

// ListRelated returns the related objects recorded for p, all of them with
// an empty identifier, sorted by Secret name. Records of a same-named
// primary of another kind are not p's.
func (s *Store) ListRelated(ctx context.Context, p Primary, identifier string) ([]StoredRelated, error) {
	return s.listRelated(ctx, p, identifier, false)
}

// ListRelatedLive is ListRelated read from the API server, for decisions
// that cannot be undone (a released source, a forgotten copy): a record
// written a moment ago may be missing from the cache for a while.
func (s *Store) ListRelatedLive(ctx context.Context, p Primary) ([]StoredRelated, error) {
	return s.listRelated(ctx, p, "", true)
}

func (s *Store) listRelated(ctx context.Context, p Primary, identifier string, live bool) ([]StoredRelated, error) {
	sel := s.selector(p, true)
	req, err := labels.NewRequirement(keys.RelatedIdentifier, selection.Exists, nil)
	if identifier != "" {
		req, err = labels.NewRequirement(keys.RelatedIdentifier, selection.Equals, []string{identifier})
	}
	if err != nil {
		return nil, fmt.Errorf("invalid related identifier %q: %w", identifier, err)
	}
	list := corev1.SecretList{}
	if live {
		err = s.listLive(ctx, &list, sel.Add(*req))
	} else {
		err = s.list(ctx, &list, p, sel.Add(*req))
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list related state Secrets: %w", err)
	}
	var out []StoredRelated
	for _, sec := range list.Items {
		if ofOtherKind(p, &sec) {
			continue
		}
		st, ok := storedRelated(&sec)
		if !ok {
			// Unreadable: it still belongs to p and goes with it.
			st.Identifier = sec.Labels[keys.RelatedIdentifier]
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b StoredRelated) int { return cmp.Compare(a.SecretName, b.SecretName) })
	return out, nil
}

// DeleteRelated deletes one related state Secret by name.
func (s *Store) DeleteRelated(ctx context.Context, secretName string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: secretName}}
	if err := s.Client.Delete(ctx, secret); ctrlruntimeclient.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete related state Secret %s: %w", secretName, err)
	}
	return nil
}

// PrimaryOfRelated returns the kcp primary a related state Secret belongs
// to; ok is false for other Secrets.
func PrimaryOfRelated(secret *corev1.Secret) (ref ObjectRef, ok bool) {
	if _, isRelated := secret.Labels[keys.RelatedIdentifier]; !isRelated {
		return ObjectRef{}, false
	}
	st, ok := storedRelated(secret)
	if !ok || st.Primary.Name == "" {
		return ObjectRef{}, true
	}
	return st.Primary, true
}
