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

// Package state stores the last-known state of synced primaries (contract
// §4.4), the input of the three-way merge. The format is the reference's,
// so an agent switched from the reference reads its state and does not
// overwrite service-side fields:
//
//   - one Secret per kcp primary in the agent's namespace, named
//     obj-state-<cluster>-<h20>, h20 = the first 20 hex characters of the
//     SHA-1 of the JSON encoding (newline included) of
//     {"apiVersion","kind","name","namespace"} of the kcp object;
//   - labels syncagent.kcp.io/object-state=true, the remote-object labels of
//     the primary and (ours, additive) the agent name;
//   - the data key is the 40-hex SHA-1 of the JSON encoding (newline
//     included) of {ClusterName, WorkspacePath:"", Namespace, Name};
//   - the value is the compact JSON of the spec-mutated kcp object with
//     filtered metadata (apiVersion, kind, name and namespace are kept, as
//     the reference does, so that a rollback to it stays possible).
//
// Reading normalizes the stored object to what the merge compares (no
// apiVersion, kind or metadata besides labels and annotations), so both
// the reference's and our snapshots work. If the Secret with the computed
// name is missing (the kcp apiVersion changed through a version projection),
// state Secrets are looked up by their labels and accepted only if the
// stored object's group and kind match; the next write migrates the state
// to the new name. Unreadable JSON means "no state". Deleting a primary's
// state deletes every state Secret carrying its labels, except those that
// hold the state of a same-named object of another group and kind.
package state

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // the contract fixes SHA-1 for state names and keys.
	"encoding/hex"
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
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

// Primary identifies a kcp primary object.
type Primary struct {
	objmeta.Remote
	// APIVersion and Kind are the kcp-side type.
	APIVersion, Kind string
}

// GroupKind returns the kcp-side group and kind of the primary.
func (p Primary) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(p.APIVersion, p.Kind).GroupKind()
}

// Annotations returns the annotations a local copy of the primary carries:
// those of its Remote and its kcp kind.
func (p Primary) Annotations() map[string]string {
	a := p.Remote.Annotations()
	a[keys.RemoteObjectKind] = p.GroupKind().String()
	return a
}

func encode(v any) []byte {
	var buf bytes.Buffer
	// Encoding plain maps and structs of strings cannot fail.
	_ = json.NewEncoder(&buf).Encode(v)
	return buf.Bytes()
}

func sha1Hex(data []byte) string {
	sum := sha1.Sum(data) //nolint:gosec // see import.
	return hex.EncodeToString(sum[:])
}

// SecretName returns the name of the primary's state Secret.
func SecretName(p Primary) string {
	h := sha1Hex(encode(map[string]string{
		"apiVersion": p.APIVersion,
		"kind":       p.Kind,
		"name":       p.Name,
		"namespace":  p.Namespace,
	}))
	return fmt.Sprintf("obj-state-%s-%s", p.Cluster, h[:20])
}

// LegacyKey returns the reference's data key for an object: cluster is the
// logical cluster for kcp-side sources and "" for service-side ones.
func LegacyKey(cluster, namespace, name string) string {
	return sha1Hex(encode(struct {
		ClusterName   string
		WorkspacePath string
		Namespace     string
		Name          string
	}{cluster, "", namespace, name}))
}

// Store reads and writes state Secrets.
type Store struct {
	// Client reads (from a cache) and writes Secrets in Namespace.
	Client ctrlruntimeclient.Client
	// Live reads Secrets from the API server, for decisions a lagging cache
	// must not make; nil means Client.
	Live      ctrlruntimeclient.Reader
	Namespace string
	AgentName string
}

// selector finds p's state Secrets: the primary's own ones, and with
// related set also those of its related objects.
func (s *Store) selector(p Primary, related bool) labels.Selector {
	set := labels.Set{}
	for k, v := range p.Labels(s.AgentName) {
		if k != keys.AgentName { // the reference's Secrets lack it
			set[k] = v
		}
	}
	set[keys.ObjectState] = "true"
	sel := labels.SelectorFromSet(set)
	if p.Namespace == "" {
		// Not another primary's of the same workspace and name in a
		// namespace (its labels are a superset).
		req, _ := labels.NewRequirement(keys.RemoteObjectNamespaceHash, selection.DoesNotExist, nil)
		sel = sel.Add(*req)
	}
	if !related {
		req, _ := labels.NewRequirement(keys.RelatedIdentifier, selection.DoesNotExist, nil)
		sel = sel.Add(*req)
	}
	return sel
}

// list lists the state Secrets of p that sel selects, through the
// objmeta.RemoteIndex index of the Client's cache. The index serves
// lookups without a namespace only (internal/cacheindex); the cache holds
// the Secrets of the agent's namespace alone, and others are skipped.
func (s *Store) list(ctx context.Context, list *corev1.SecretList, p Primary, sel labels.Selector) error {
	if err := s.Client.List(ctx, list, ctrlruntimeclient.MatchingFields{objmeta.RemoteIndex: p.IndexKey()},
		ctrlruntimeclient.MatchingLabelsSelector{Selector: sel}); err != nil {
		return err
	}
	list.Items = slices.DeleteFunc(list.Items, func(sec corev1.Secret) bool { return sec.Namespace != s.Namespace })
	return nil
}

// listLive lists the state Secrets that sel selects from the API server
// (by labels alone: the server knows no cache index).
func (s *Store) listLive(ctx context.Context, list *corev1.SecretList, sel labels.Selector) error {
	return s.live().List(ctx, list, ctrlruntimeclient.InNamespace(s.Namespace), ctrlruntimeclient.MatchingLabelsSelector{Selector: sel})
}

// Get returns the normalized last state of p, or nil if there is none.
func (s *Store) Get(ctx context.Context, p Primary) (map[string]any, error) {
	if state, found, err := s.readPrimary(ctx, s.Client, p); found || err != nil {
		return state, err
	}
	key := LegacyKey(p.Cluster, p.Namespace, p.Name)

	// The name depends on the kcp apiVersion; after a version projection
	// change the state lives under another name.
	var list corev1.SecretList
	if err := s.list(ctx, &list, p, s.selector(p, false)); err != nil {
		return nil, fmt.Errorf("failed to list state Secrets: %w", err)
	}
	gk := schema.FromAPIVersionAndKind(p.APIVersion, p.Kind).GroupKind()
	for _, sec := range list.Items {
		if state := normalize(sec.Data[key], &gk); state != nil {
			return state, nil
		}
	}

	// "No state" makes the caller overwrite every field of the copy, so it
	// is confirmed with the API server: a state Secret written a moment ago
	// (by an adoption, say) may not be in the cache yet.
	if s.Live != nil {
		state, _, err := s.readPrimary(ctx, s.Live, p)
		return state, err
	}
	return nil, nil
}

// readPrimary reads p's state from its Secret through reader; found is
// false when the Secret does not exist.
func (s *Store) readPrimary(ctx context.Context, reader ctrlruntimeclient.Reader, p Primary) (state map[string]any, found bool, err error) {
	secret := &corev1.Secret{}
	err = reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: SecretName(p)}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("failed to get state Secret: %w", err)
	}
	return normalize(secret.Data[LegacyKey(p.Cluster, p.Namespace, p.Name)], nil), true, nil
}

// normalize parses stored state and reduces it to what the merge compares.
// With wantGK set, state of another group/kind is ignored.
func normalize(data []byte, wantGK *schema.GroupKind) map[string]any {
	if len(data) == 0 {
		return nil
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil
	}
	if wantGK != nil && obj.GroupVersionKind().GroupKind() != *wantGK {
		return nil
	}
	return objmeta.Desired(obj, false).Object
}

// Put stores desired (the merge's desired state) as p's last state. Stale
// state Secrets of p under another name are deleted.
func (s *Store) Put(ctx context.Context, p Primary, desired map[string]any) error {
	snapshot := (&unstructured.Unstructured{Object: desired}).DeepCopy()
	snapshot.SetAPIVersion(p.APIVersion)
	snapshot.SetKind(p.Kind)
	snapshot.SetName(p.Name)
	if p.Namespace != "" {
		snapshot.SetNamespace(p.Namespace)
	}
	data, err := snapshot.MarshalJSON()
	if err != nil {
		return fmt.Errorf("failed to encode state: %w", err)
	}
	data = bytes.TrimSpace(data)

	name := SecretName(p)
	key := LegacyKey(p.Cluster, p.Namespace, p.Name)
	secret := &corev1.Secret{}
	err = s.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name, Labels: s.labels(p)},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{key: data},
		}
		if err := s.Client.Create(ctx, secret); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Our cache lags behind an earlier write; the caller's next
				// pass compares again and writes what differs.
				return nil
			}
			return fmt.Errorf("failed to create state Secret: %w", err)
		}
		return s.deleteOthers(ctx, p, name)
	case err != nil:
		return fmt.Errorf("failed to get state Secret: %w", err)
	}

	if bytes.Equal(secret.Data[key], data) && labels.Equals(secret.Labels, s.labels(p)) {
		return nil
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[key] = data
	secret.Labels = s.labels(p)
	if err := s.Client.Update(ctx, secret); err != nil {
		return fmt.Errorf("failed to update state Secret: %w", err)
	}
	return nil
}

func (s *Store) labels(p Primary) map[string]string {
	l := p.Labels(s.AgentName)
	l[keys.ObjectState] = "true"
	return l
}

// Delete removes every state Secret of p, those of its related objects
// included. p's own Secret is deleted by name even if the cache has not
// seen it: it may have been written a moment ago (the copy was created and
// the kcp object deleted right after), and would stay behind forever.
// (Related records the cache misses are the caller's: see
// ListRelatedLive.)
func (s *Store) Delete(ctx context.Context, p Primary) error {
	var list corev1.SecretList
	if err := s.list(ctx, &list, p, s.selector(p, true)); err != nil {
		return fmt.Errorf("failed to list state Secrets: %w", err)
	}
	own := SecretName(p)
	if !slices.ContainsFunc(list.Items, func(sec corev1.Secret) bool { return sec.Name == own }) {
		list.Items = append(list.Items, corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: own}})
	}
	return s.deleteListed(ctx, p, list.Items, "")
}

// Known reports whether the cache holds any state Secret of p (its own or
// its related objects').
func (s *Store) Known(ctx context.Context, p Primary) (bool, error) {
	var list corev1.SecretList
	if err := s.list(ctx, &list, p, s.selector(p, true)); err != nil {
		return false, fmt.Errorf("failed to list state Secrets: %w", err)
	}
	return len(list.Items) > 0, nil
}

// deleteOthers deletes p's own state Secrets except keep.
func (s *Store) deleteOthers(ctx context.Context, p Primary, keep string) error {
	var list corev1.SecretList
	if err := s.list(ctx, &list, p, s.selector(p, false)); err != nil {
		return fmt.Errorf("failed to list state Secrets: %w", err)
	}
	return s.deleteListed(ctx, p, list.Items, keep)
}

// deleteListed deletes the listed state Secrets of p, except keep and those
// of another kind's primary.
func (s *Store) deleteListed(ctx context.Context, p Primary, items []corev1.Secret, keep string) error {
	list := corev1.SecretList{Items: items}
	for i := range list.Items {
		if list.Items[i].Name == keep || ofOtherKind(p, &list.Items[i]) {
			continue
		}
		if err := s.Client.Delete(ctx, &list.Items[i]); ctrlruntimeclient.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete state Secret %s: %w", list.Items[i].Name, err)
		}
	}
	return nil
}

// ofOtherKind reports whether a state Secret that p's labels select belongs
// to a primary of another group and kind. The labels name only the cluster,
// namespace and name, so a same-named object of another PublishedResource
// carries the same ones. Secrets whose owner cannot be read count as p's.
func ofOtherKind(p Primary, secret *corev1.Secret) bool {
	if secret.Name == SecretName(p) {
		return false
	}
	gk := p.GroupKind()
	if ref, ok := PrimaryOfRelated(secret); ok {
		return ref.Name != "" && ref.GroupKind() != gk
	}
	data := secret.Data[LegacyKey(p.Cluster, p.Namespace, p.Name)]
	obj := &unstructured.Unstructured{}
	return len(data) > 0 && obj.UnmarshalJSON(data) == nil && obj.GroupVersionKind().GroupKind() != gk
}
