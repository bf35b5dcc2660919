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

// Package syncer syncs one kcp primary object with its local copy on the
// service cluster (contract §6): finalizer, creation (with the naming rules
// and the adoption rules), the three-way spec merge against the stored
// state, status back-sync and the deletion flow. It is independent of any
// controller: the sync controller calls Process for each kcp object with a
// client for the object's workspace.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/mutation"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/merge"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/references"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// Event reasons on kcp objects (contract §4.6).
const (
	ReasonObjectAccepted      = "ObjectAccepted"
	ReasonObjectPlaced        = "ObjectPlaced"
	ReasonObjectSynced        = "ObjectSynced"
	ReasonObjectStatusSynced  = "ObjectStatusSynced"
	ReasonObjectCleanup       = "ObjectCleanup"
	ReasonObjectDeleted       = "ObjectDeleted"
	ReasonObjectConflict      = "ObjectConflict"
	ReasonStatusSubresMissing = "StatusSubresourceMissing"
	ReasonReconcilingError    = "ReconcilingError"
	// ReasonInvalidDeletionPropagation (ours): the kcp object's deletion
	// propagation annotation has a value the agent does not know.
	ReasonInvalidDeletionPropagation = "InvalidDeletionPropagation"
	// ReasonObjectWaiting (ours): an object has waited about a minute for
	// something someone else decides (Result.Waiting).
	ReasonObjectWaiting = "ObjectWaiting"
)

// ErrConflict means the computed local object belongs to another kcp object,
// another agent, or someone else; it is never taken over.
var ErrConflict = errors.New("the local object belongs to someone else")

// EventFunc records an Event on a kcp object; messages must be safe for
// consumers.
type EventFunc func(obj ctrlruntimeclient.Object, eventType, reason, message string)

// Syncer syncs the objects of one PublishedResource. It is built once per
// PublishedResource generation and is read-only afterwards, so it can be
// shared by all workers.
type Syncer struct {
	AgentName string
	// LocalGVK is the storage version of the source type; LocalNamespaced its scope.
	LocalGVK        schema.GroupVersionKind
	LocalNamespaced bool
	// StatusSubresource is set when the type has a status subresource (on
	// both sides; the projection keeps subresources).
	StatusSubresource bool
	Namer             *naming.Namer
	// NamespaceMetadata is put on the service-cluster namespaces the agent
	// creates (nil: nothing).
	NamespaceMetadata *nsmeta.Metadata
	// Service writes local copies and namespaces; it reads namespaces from
	// the manager's cache and other objects live (only adoption needs that).
	Service ctrlruntimeclient.Client
	// Copies lists local copies (a cache of objects that carry sync labels,
	// with the objmeta.RemoteIndex index); nil means Service.
	Copies ctrlruntimeclient.Reader
	State  *state.Store
	Event  EventFunc
	// Warned remembers StatusSubresourceMissing warnings (shared by copies
	// of the Syncer); nil disables the warning.
	Warned *once.PerGeneration
	// WarnedPropagation remembers the unknown deletion propagation values
	// the consumer was warned about before a deletion; nil: no such
	// warning.
	WarnedPropagation *once.PerValue

	// SpecMutator and StatusMutator apply spec.mutation (nil: none).
	SpecMutator, StatusMutator *mutation.Mutator
	// Related are the compiled spec.related entries, in spec order.
	Related []*related.Entry
	// RelatedService reads related objects on the service cluster (from a
	// cache that is not restricted to the agent's namespace) and writes them.
	RelatedService ctrlruntimeclient.Client
	// References are the compiled spec.references; Targets the types they
	// may name (nil: none resolves).
	References []references.Reference
	Targets    *Targets
}

// Workspace is the consumer workspace of a kcp object.
type Workspace struct {
	// Client reads (from the workspace's cache) and writes objects in the
	// workspace; Live reads from its server (nil: Client), for decisions
	// that delete or release.
	Client ctrlruntimeclient.Client
	Live   ctrlruntimeclient.Reader
	// Cluster is the logical cluster name; Path the workspace path ("" unless enabled).
	Cluster, Path string
}

// reader reads from the workspace's server: Live, or Client without it.
func (ws Workspace) reader() ctrlruntimeclient.Reader {
	if ws.Live == nil {
		return ws.Client
	}
	return ws.Live
}

// Result tells the caller what happened.
type Result struct {
	// Requeue asks for a prompt re-check after a write (or a cache that
	// lags one).
	Requeue bool
	// Waiting names what the object waits for that someone else decides:
	// a local copy or related destination that is being deleted, held by
	// finalizers that are not ours. The caller checks again with backoff.
	Waiting string
	// Writes counts the API writes this pass made (both sides).
	Writes int
	// Unresolved is set when a reference field could not be mapped (the
	// consumer was told): the caller checks again with backoff, as the
	// referenced object may appear.
	Unresolved bool
	// Imported is the service-cluster object whose import into kcp this
	// pass finished (nil: none).
	Imported *unstructured.Unstructured
}

// waitingFor is the Waiting text for an object that is being deleted.
func waitingFor(what string, obj *unstructured.Unstructured) string {
	if f := obj.GetFinalizers(); len(f) > 0 {
		return fmt.Sprintf("%s %s is being deleted and held by the finalizers %s", what, objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()), strings.Join(f, ", "))
	}
	return fmt.Sprintf("%s %s is being deleted", what, objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()))
}

// Process syncs obj (a kcp primary, fetched from ws). Errors are returned
// for the caller to retry with backoff; ErrConflict (wrapped) means an
// adoption was refused.
func (s *Syncer) Process(ctx context.Context, ws Workspace, obj *unstructured.Unstructured) (Result, error) {
	p := primaryOf(ws, obj)

	if obj.GetDeletionTimestamp() != nil {
		return s.delete(ctx, ws, obj, p)
	}

	if fin := s.finalizers(); !fin.Owns(obj) {
		// A legacy finalizer on a primary of this export was put there for
		// the same role (by the reference or an earlier version): replaced.
		migrating := fin.Migrating(obj)
		patch := ctrlruntimeclient.MergeFromWithOptions(obj.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
		fin.Take(obj, true)
		if err := ws.Client.Patch(ctx, obj, patch); err != nil {
			if apierrors.IsNotFound(err) {
				// Deleted since the cache showed it: nothing to sync.
				return Result{}, nil
			}
			return Result{}, fmt.Errorf("failed to add the finalizer: %w", err)
		}
		if migrating {
			log.FromContext(ctx).V(1).Info("Replaced the legacy finalizer by the agent's own", "kcp", objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()))
		} else {
			s.Event(obj, corev1.EventTypeNormal, ReasonObjectAccepted, "The object was accepted for synchronization.")
		}
		// The patch returned the updated object: go on in this pass, so that
		// a new object needs one trip through the queue, not two.
		res, err := s.sync(ctx, ws, obj, p)
		res.Writes++
		return res, err
	}
	return s.sync(ctx, ws, obj, p)
}

// primaryOf identifies obj, a kcp object of workspace ws, as a primary.
func primaryOf(ws Workspace, obj *unstructured.Unstructured) state.Primary {
	remote := objmeta.Remote{Cluster: ws.Cluster, Namespace: obj.GetNamespace(), Name: obj.GetName(), Path: ws.Path}
	return state.Primary{Remote: remote, APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind()}
}

// sync brings the local copy, the status and the related objects of obj
// (which carries our finalizer) in line.
func (s *Syncer) sync(ctx context.Context, ws Workspace, obj *unstructured.Unstructured, p state.Primary) (Result, error) {
	s.warnPropagation(obj)
	local, err := s.findLocal(ctx, p)
	if err == nil && local == nil && imported(obj) {
		// An imported object's copy is where it was, not where the naming
		// puts copies: a copies cache behind the import must not make the
		// pass create a second one.
		local, err = s.findLocalLive(ctx, p)
	}
	if err != nil {
		return Result{}, err
	}
	if local != nil && local.GetDeletionTimestamp() != nil {
		// Someone deletes the copy; once it is gone it is re-created.
		return Result{Waiting: waitingFor("the local copy", local)}, nil
	}
	if local != nil && claimed(local) {
		return s.finishImport(ctx, ws, obj, local, p)
	}

	// Spec mutations see the local copy, or the copy that would be created.
	var key types.NamespacedName
	var mutated *unstructured.Unstructured
	if local == nil {
		key, mutated, err = s.wouldBeCopy(ws, obj)
	} else {
		mutated, err = applyMutator(s.SpecMutator, obj, local)
		err = wrapMutation(err)
	}
	if err != nil {
		return Result{}, err
	}
	copyNamespace := key.Namespace
	if local != nil {
		copyNamespace = local.GetNamespace()
	}
	var res Result
	desired, err := s.desired(ctx, ws, obj, mutated, local, copyNamespace, &res)
	if err != nil {
		return Result{}, err
	}
	if local == nil {
		r, err := s.create(ctx, obj, p, key, desired)
		res.add(r)
		return res, err
	}
	r, err := s.updateSpec(ctx, obj, local, p, desired)
	res.add(r)
	if err != nil || r.Writes > 0 || r.Requeue {
		return res, err
	}
	r, err = s.syncStatus(ctx, ws, obj, mutated, local)
	res.add(r)
	if errors.Is(err, errObjectGone) {
		// Deleted since it was read: its deletion is the next pass.
		return res, nil
	}
	if err != nil {
		return res, err
	}
	r, err = s.syncRelated(ctx, ws, p, obj, local)
	res.add(r)
	return res, err
}

// desired is what the copy of obj should hold: obj after its spec
// mutations (mutated) with the local names of the objects it references
// (the status mutations see the consumer's names, the copy gets the local
// ones); references that do not resolve are reported into res.
func (s *Syncer) desired(ctx context.Context, ws Workspace, obj, mutated, local *unstructured.Unstructured, copyNamespace string, res *Result) (*unstructured.Unstructured, error) {
	withRefs, problems, err := s.withLocalReferences(ctx, ws, obj, mutated, local, copyNamespace)
	if err != nil {
		return nil, err
	}
	s.report(obj, problems, res)
	return objmeta.Desired(withRefs, s.StatusSubresource), nil
}

// wouldBeCopy returns the name of the copy that obj would get and obj
// after its spec mutations. Names are computed from the mutated object
// (contract §2.5), and the mutations see the would-be copy under its name:
// the name is computed from the unmutated object first, and once more from
// the mutated one; if that differs, the mutations run again with it.
func (s *Syncer) wouldBeCopy(ws Workspace, obj *unstructured.Unstructured) (types.NamespacedName, *unstructured.Unstructured, error) {
	key, err := s.localName(ws, obj)
	if err != nil {
		return key, nil, fmt.Errorf("failed to compute the local name: %w", err)
	}
	mutated, err := applyMutator(s.SpecMutator, obj, typedRef(s.LocalGVK, key))
	if err != nil || s.SpecMutator.Empty() {
		return key, mutated, wrapMutation(err)
	}
	final, err := s.localName(ws, mutated)
	if err != nil {
		return key, nil, fmt.Errorf("failed to compute the local name: %w", err)
	}
	if final != key {
		mutated, err = applyMutator(s.SpecMutator, obj, typedRef(s.LocalGVK, final))
	}
	return final, mutated, wrapMutation(err)
}

func wrapMutation(err error) error {
	if err != nil {
		return fmt.Errorf("spec mutation: %w", err)
	}
	return nil
}

// typedRef returns an object with only a type and a name.
func typedRef(gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u
}

// applyMutator returns self mutated with other in view; self itself when
// there are no rules.
func applyMutator(m *mutation.Mutator, self, other *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if m.Empty() {
		return self, nil
	}
	var otherObj map[string]any
	if other != nil {
		otherObj = other.Object
	}
	out, err := m.Apply(self.Object, otherObj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// findLocal returns the local copy of remote: found by its labels, never by
// name; copies labelled for another agent are ignored, copies without the
// agent label (older versions) count.
func (s *Syncer) findLocal(ctx context.Context, p state.Primary) (*unstructured.Unstructured, error) {
	remote := p.Remote
	copies := s.copies()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(s.LocalGVK.GroupVersion().WithKind(s.LocalGVK.Kind + "List"))
	if err := copies.List(ctx, list, ctrlruntimeclient.MatchingFields{objmeta.RemoteIndex: remote.IndexKey()},
		ctrlruntimeclient.MatchingLabelsSelector{Selector: remote.Selector()}); err != nil {
		return nil, fmt.Errorf("failed to list local copies: %w", err)
	}
	return s.onlyCopy(list.Items, p.GroupKind())
}

// copies reads local copies: Copies, or Service without it.
func (s *Syncer) copies() ctrlruntimeclient.Reader {
	if s.Copies == nil {
		return s.Service
	}
	return s.Copies
}

// onlyCopy returns the copy among candidates found by the remote-object
// labels: objects of another agent, copies of another kcp kind and state
// Secrets do not count.
func (s *Syncer) onlyCopy(candidates []unstructured.Unstructured, gk schema.GroupKind) (*unstructured.Unstructured, error) {
	var found []unstructured.Unstructured
	for _, item := range candidates {
		if !objmeta.OwnedByOtherAgent(&item, s.AgentName) && !objmeta.IsState(&item) && !objmeta.OfOtherKind(&item, gk) {
			found = append(found, item)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	default:
		return nil, fmt.Errorf("found %d local copies for one kcp object", len(found))
	}
}

// findLocalLive is findLocal through the API server, by the labels alone
// (the server has no field index; the Service client reads unstructured
// objects live): a copy created a moment ago is found whether or not the
// copies cache has seen it, whatever its name, and without naming or
// mutations having to work. It runs once per deletion at most.
func (s *Syncer) findLocalLive(ctx context.Context, p state.Primary) (*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(s.LocalGVK.GroupVersion().WithKind(s.LocalGVK.Kind + "List"))
	if err := s.Service.List(ctx, list, ctrlruntimeclient.MatchingLabelsSelector{Selector: p.Selector()}); err != nil {
		return nil, fmt.Errorf("failed to list local copies: %w", err)
	}
	return s.onlyCopy(list.Items, p.GroupKind())
}

func (s *Syncer) localName(ws Workspace, obj *unstructured.Unstructured) (types.NamespacedName, error) {
	ctx := naming.Context{Object: obj.Object, ClusterName: ws.Cluster, ClusterPath: ws.Path}
	name, err := s.Namer.Name(ctx)
	if err != nil {
		return types.NamespacedName{}, err
	}
	if !s.LocalNamespaced {
		return types.NamespacedName{Name: name}, nil
	}
	namespace, err := s.Namer.Namespace(ctx)
	return types.NamespacedName{Namespace: namespace, Name: name}, err
}

// withSyncMetadata returns a copy of desired plus the labels and
// annotations that tie the copy to its kcp object.
func (s *Syncer) withSyncMetadata(desired map[string]any, p state.Primary) *unstructured.Unstructured {
	u := (&unstructured.Unstructured{Object: desired}).DeepCopy()
	s.addSyncMetadata(u, p)
	return u
}

// addSyncMetadata sets the remote-object labels and annotations (the kcp
// kind among them) on u.
func (s *Syncer) addSyncMetadata(u *unstructured.Unstructured, p state.Primary) {
	u.SetLabels(merge.WithEntries(u.GetLabels(), p.Labels(s.AgentName)))
	u.SetAnnotations(merge.WithEntries(u.GetAnnotations(), p.Annotations()))
}

func (s *Syncer) create(ctx context.Context, obj *unstructured.Unstructured, p state.Primary, key types.NamespacedName, desired *unstructured.Unstructured) (Result, error) {
	res := Result{}
	if key.Namespace != "" {
		labels, annotations, err := s.CreatedNamespaceMetadata(p.Remote.Cluster, key.Namespace)
		if err != nil {
			return Result{}, err
		}
		created, err := ensureNamespace(ctx, s.Service, key.Namespace, labels, annotations)
		if err != nil {
			return Result{}, err
		}
		if created {
			res.Writes++
		}
	}

	local := s.newCopy(key, desired, p)
	err := s.Service.Create(ctx, local)
	if apierrors.IsAlreadyExists(err) {
		return s.adopt(ctx, obj, p, key, desired, res)
	}
	if err != nil {
		return res, fmt.Errorf("failed to create the local copy: %w", err)
	}
	res.Writes++
	log.FromContext(ctx).V(1).Info("Created the local copy", "local", key.String(), "kcp", objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()))
	if err := s.State.Put(ctx, p, desired.Object); err != nil {
		return res, err
	}
	res.Writes++
	s.Event(obj, corev1.EventTypeNormal, ReasonObjectPlaced, "The object was placed on the service cluster.")
	res.Requeue = true
	return res, nil
}

// adopt takes over an existing object with the computed name if it is
// unowned or already ours (contract §6.4); otherwise it refuses. As in the
// reference, only the sync metadata is written: desired is recorded as the
// last known state, so the object's spec is kept and from then on only what
// changes in kcp is merged into it. The state is written first: if the
// labels cannot be added, the next pass adopts again (it would otherwise
// find a copy without state and overwrite its spec). An object that already
// carries this kcp object's lookup labels is our own copy that the copies
// cache has not seen yet: nothing is written (its state is current), the
// pass is repeated.
func (s *Syncer) adopt(ctx context.Context, obj *unstructured.Unstructured, p state.Primary, key types.NamespacedName, desired *unstructured.Unstructured, res Result) (Result, error) {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(s.LocalGVK)
	if err := s.Service.Get(ctx, key, existing); err != nil {
		return res, fmt.Errorf("failed to get the existing local object: %w", err)
	}
	if existing.GetDeletionTimestamp() != nil {
		res.Waiting = waitingFor("the local object", existing)
		return res, nil
	}
	if !objmeta.Adoptable(existing, p.Remote, s.AgentName) || objmeta.OfOtherKind(existing, p.GroupKind()) {
		s.Event(obj, corev1.EventTypeWarning, ReasonObjectConflict, "The object cannot be placed: its name on the service cluster is taken. Contact the service provider.")
		return res, fmt.Errorf("%w: %s %s", ErrConflict, s.LocalGVK.Kind, key)
	}
	if p.Remote.Selector().Matches(labels.Set(existing.GetLabels())) {
		res.Requeue = true
		return res, nil
	}
	if err := s.State.Put(ctx, p, desired.Object); err != nil {
		return res, err
	}
	res.Writes++
	// Another kcp object whose copy would get the same name may adopt it
	// at the same moment: only one of the two label patches succeeds.
	patch := ctrlruntimeclient.MergeFromWithOptions(existing.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
	s.addSyncMetadata(existing, p)
	if err := s.Service.Patch(ctx, existing, patch); err != nil {
		return res, fmt.Errorf("failed to adopt the local object: %w", err)
	}
	res.Writes++
	s.Event(obj, corev1.EventTypeNormal, ReasonObjectPlaced, "An existing object on the service cluster was adopted.")
	res.Requeue = true
	return res, nil
}

// ensureNamespace creates a namespace with labels and annotations through c
// unless it exists; it reports whether it created one. An existing namespace that an
// agent's sweep marked for deletion (found empty) loses the mark before
// anything is written into it: that changes the namespace, and the sweep
// deletes only a namespace that did not change since its mark.
func ensureNamespace(ctx context.Context, c ctrlruntimeclient.Client, name string, labels, annotations map[string]string) (bool, error) {
	ns := &corev1.Namespace{}
	err := c.Get(ctx, types.NamespacedName{Name: name}, ns)
	if err == nil {
		if _, marked := ns.Annotations[keys.DeletionCandidate]; marked {
			patch := []byte(`{"metadata":{"annotations":{"` + keys.DeletionCandidate + `":null}}}`)
			if err := c.Patch(ctx, ns, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); err != nil {
				return false, fmt.Errorf("failed to remove the deletion mark of namespace %s: %w", name, err)
			}
		}
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("failed to get namespace %s: %w", name, err)
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("failed to create namespace %s: %w", name, err)
	}
	return true, nil
}

// createdNamespaceLabels are the labels of a service-cluster namespace the
// agent creates for a workspace: once the workspace is gone and nothing
// lives in it any more, the agent may delete it (see the syncmanager's
// sweep).
func createdNamespaceLabels(agentName, cluster string) map[string]string {
	return map[string]string{keys.CreatedBy: agentName, keys.CreatedForCluster: cluster}
}

// CreatedNamespaceMetadata returns the labels and annotations of a
// service-cluster namespace the agent creates for a workspace: its own
// labels and the configured metadata (--namespace-label and
// --namespace-annotation), which is there from the start, before anything
// keyed on it (a quota, a network policy, admission) sees the namespace.
func (s *Syncer) CreatedNamespaceMetadata(cluster, namespace string) (labels, annotations map[string]string, err error) {
	r, err := s.NamespaceMetadata.Render(nsmeta.Context{ClusterName: cluster, Namespace: namespace})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot create a namespace for workspace %s: %w", cluster, err)
	}
	labels, annotations = r.ForCreate(createdNamespaceLabels(s.AgentName, cluster))
	return labels, annotations, nil
}

// updateSpec brings the local copy of obj in line with desired (contract
// §6.5); a write is announced on obj with ObjectSynced.
func (s *Syncer) updateSpec(ctx context.Context, obj, local *unstructured.Unstructured, p state.Primary, desired *unstructured.Unstructured) (Result, error) {
	last, err := s.State.Get(ctx, p)
	if err != nil {
		return Result{}, err
	}

	res := Result{}
	if last != nil {
		// Inject the sync metadata that is missing or wrong on the copy, so
		// that the patch repairs it.
		injected := desired.DeepCopy()
		if m := missing(local.GetLabels(), p.Labels(s.AgentName)); len(m) > 0 {
			injected.SetLabels(merge.WithEntries(injected.GetLabels(), m))
		}
		if m := missing(local.GetAnnotations(), p.Annotations()); len(m) > 0 {
			injected.SetAnnotations(merge.WithEntries(injected.GetAnnotations(), m))
		}

		patch, err := merge.ThreeWay(last, injected.Object)
		if err != nil {
			return Result{}, err
		}
		if patch != nil {
			if err := s.Service.Patch(ctx, local, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); err != nil {
				if ObjectNotFound(err, local.GetName()) {
					// Deleted behind the agent's back since it was read:
					// the next pass creates it again.
					return Result{Requeue: true}, nil
				}
				return Result{}, fmt.Errorf("failed to patch the local copy: %w", err)
			}
			res.Writes++
		}
	} else {
		updated := local.DeepCopy()
		if merge.Overwrite(updated, s.withSyncMetadata(desired.Object, p).Object) {
			if err := s.Service.Update(ctx, updated); err != nil {
				return Result{}, fmt.Errorf("failed to update the local copy: %w", err)
			}
			res.Writes++
		}
	}

	if last == nil || res.Writes > 0 || !equality.Semantic.DeepEqual(last, desired.Object) {
		if err := s.State.Put(ctx, p, desired.Object); err != nil {
			return res, err
		}
	}
	if res.Writes > 0 {
		s.Event(obj, corev1.EventTypeNormal, ReasonObjectSynced, "The object was updated on the service cluster.")
		res.Requeue = true
	}
	return res, nil
}

// missing returns the entries of want that are missing or wrong in have.
func missing(have, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if have[k] != v {
			out[k] = v
		}
	}
	return out
}

// finalizers is the agent's view of finalizers on kcp objects.
func (s *Syncer) finalizers() finalizer.Of { return finalizer.For(s.AgentName) }

// errObjectGone: the kcp object was deleted since the pass read it.
var errObjectGone = errors.New("the kcp object is gone")

// delete runs the deletion flow (contract §6.7): delete the local copy and
// wait until it is gone, delete the state, release the finalizer. An object
// that carries the legacy finalizer instead of the agent's own (synced or
// accepted by an earlier version or by the reference, and deleted before a
// pass of this one took it over) is released the same way: a primary of
// the agent's own export carries it for the agent, as it did before.
func (s *Syncer) delete(ctx context.Context, ws Workspace, obj *unstructured.Unstructured, p state.Primary) (Result, error) {
	fin := s.finalizers()
	if !fin.Holds(obj) {
		return Result{}, nil
	}
	if res, err := s.cleanup(ctx, ws, obj, p); err != nil || res.Requeue || res.Waiting != "" {
		return res, err
	}
	// The object may also be the kcp-origin related object of other
	// primaries (contract §7 #31): their cleanup for it is done before the
	// shared finalizer goes.
	if res, err := s.releaseHolders(ctx, ws, p, obj); err != nil || res.Writes > 0 {
		res.Requeue = true
		return res, err
	}
	if s.Warned != nil {
		s.Warned.Forget(obj)
	}
	if s.WarnedPropagation != nil {
		s.WarnedPropagation.Forget(obj)
	}
	patch := ctrlruntimeclient.MergeFromWithOptions(obj.DeepCopy(), ctrlruntimeclient.MergeFromWithOptimisticLock{})
	fin.Release(obj, true)
	if err := ws.Client.Patch(ctx, obj, patch); ctrlruntimeclient.IgnoreNotFound(err) != nil {
		return Result{}, fmt.Errorf("failed to remove the finalizer: %w", err)
	}
	log.FromContext(ctx).V(1).Info("Released the kcp object", "kcp", objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()))
	s.Event(obj, corev1.EventTypeNormal, ReasonObjectDeleted, "The object was cleaned up on the service cluster.")
	return Result{Writes: 1}, nil
}

// cleanup removes what obj has on the service cluster: related objects,
// the local copy (waiting until it is gone) and the state. It is done when the result asks for neither a requeue nor a wait.
func (s *Syncer) cleanup(ctx context.Context, ws Workspace, obj *unstructured.Unstructured, p state.Primary) (Result, error) {
	local, err := s.findLocal(ctx, p)
	if err != nil {
		return Result{}, err
	}
	if local == nil {
		// The copies cache may not have seen a copy created a moment ago:
		// before anything is released, the API server confirms there is none.
		if local, err = s.findLocalLive(ctx, p); err != nil {
			return Result{}, err
		}
	}
	if local != nil && claimed(local) {
		// An import that did not finish: the object is the service
		// owner's, not a copy to delete.
		var res Result
		if local, res, err = s.dropClaimOf(ctx, local, p); err != nil || res.Requeue {
			return res, err
		}
	}
	// Related objects first, while the local copy still exists to resolve them.
	if res, err := s.deleteRelated(ctx, ws, p, obj, local); err != nil || res.Writes > 0 {
		res.Requeue = true
		return res, err
	}
	if local != nil {
		return s.deleteLocal(ctx, obj, local, p)
	}
	if res, err := s.forgetUnseenRelated(ctx, ws, p, obj); err != nil || res.Writes > 0 {
		res.Requeue = true
		return res, err
	}
	// The state goes last: while it exists, a vanished object's cleanup
	// goes on (see Vanished).
	return Result{}, s.State.Delete(ctx, p)
}

// deleteLocal deletes the local copy of obj, which is being deleted, as
// obj's deletion propagation policy says: background and foreground delete
// it (the result waits until it is gone), orphan keeps it, unlinked from
// obj, and lets the cleanup go on.
func (s *Syncer) deleteLocal(ctx context.Context, obj, local *unstructured.Unstructured, p state.Primary) (Result, error) {
	policy, known := objmeta.PropagationOf(obj)
	localName := objmeta.QualifiedName(local.GetNamespace(), local.GetName())
	if local.GetDeletionTimestamp() != nil {
		// Being deleted already (an earlier pass, or someone else): other
		// finalizers on the copy (foreground deletion's among them) are
		// honoured, whatever the policy says now.
		return Result{Waiting: waitingFor("the local copy", local)}, nil
	}
	if policy == objmeta.PropagateOrphan {
		patch := objmeta.UnlinkPatch(local.GetUID(), p.Remote)
		if err := s.Service.Patch(ctx, local, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); ctrlruntimeclient.IgnoreNotFound(err) != nil {
			return Result{}, fmt.Errorf("failed to orphan the local copy: %w", err)
		}
		log.FromContext(ctx).V(1).Info("Orphaned the local copy", "local", localName, "kcp", objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()))
		s.Event(obj, corev1.EventTypeNormal, ReasonObjectCleanup, "The object on the service cluster is kept (deletion propagation orphan) and no longer belongs to this object.")
		// The next pass finds no copy and goes on with the state.
		return Result{Requeue: true, Writes: 1}, nil
	}
	if !known {
		s.Event(obj, corev1.EventTypeWarning, ReasonInvalidDeletionPropagation, fmt.Sprintf(
			"The annotation %s is not one of background, foreground, orphan; the object on the service cluster is deleted in the background.", keys.DeletionPropagationPolicy))
	}
	if err := s.Service.Delete(ctx, local, ctrlruntimeclient.PropagationPolicy(policy.DeletionPropagation())); ctrlruntimeclient.IgnoreNotFound(err) != nil {
		return Result{}, fmt.Errorf("failed to delete the local copy: %w", err)
	}
	log.FromContext(ctx).V(1).Info("Deleting the local copy", "local", localName, "kcp", objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()), "propagation", string(policy))
	message := "Deleting the object on the service cluster."
	if policy == objmeta.PropagateForeground {
		message = "Deleting the object on the service cluster, its dependents first (deletion propagation foreground); this object goes once they are gone."
	}
	s.Event(obj, corev1.EventTypeNormal, ReasonObjectCleanup, message)
	return Result{Requeue: true, Writes: 1}, nil
}

// Vanished cleans up after a kcp object that is gone although it carried
// our finalizer or was being synced: the API server deletes an object
// whose finalizer was added while its deletion was in flight (the delete
// decided "no finalizers" on an earlier read), so a copy created right
// then would stay forever. ref names the object (type, namespace, name).
// Nothing is read from a server unless the caches know a copy or state of
// it, nothing is done unless state of its kind exists, and nothing is
// deleted unless the workspace's server confirms the object is gone (a
// cache after a reconnect can miss live objects).
func (s *Syncer) Vanished(ctx context.Context, ws Workspace, ref *unstructured.Unstructured) (Result, error) {
	p := primaryOf(ws, ref)
	local, err := s.findLocal(ctx, p)
	if err != nil {
		return Result{}, err
	}
	// A local object an import claimed has no state yet: it goes back to
	// the service owner once the server confirms the kcp object is gone.
	claim := local != nil && claimed(local)
	if !claim {
		if local == nil {
			known, err := s.State.Known(ctx, p)
			if err != nil || !known {
				return Result{}, err
			}
		}
		// Only an object this PublishedResource synced counts: it has state of
		// its own kind. A copy alone may be that of a same-named object of
		// another PublishedResource with the same source kind (the copy's
		// labels do not name the kind).
		if last, err := s.State.Get(ctx, p); err != nil || last == nil {
			return Result{}, err
		}
	}
	err = ws.reader().Get(ctx, types.NamespacedName{Namespace: ref.GetNamespace(), Name: ref.GetName()}, ref.DeepCopy())
	if !ObjectNotFound(err, ref.GetName()) {
		// It exists (the cache lags; its events will come) or the server
		// cannot tell: nothing is deleted.
		return Result{}, ctrlruntimeclient.IgnoreNotFound(err)
	}
	if claim {
		_, res, err := s.dropClaimOf(ctx, local, p)
		return res, err
	}
	log.FromContext(ctx).Info("A kcp object vanished without its deletion being processed; cleaning up its local copy and state")
	return s.cleanup(ctx, ws, ref, p)
}

// newCopy is the local copy a create writes: desired with the sync
// metadata, under key.
func (s *Syncer) newCopy(key types.NamespacedName, desired *unstructured.Unstructured, p state.Primary) *unstructured.Unstructured {
	local := s.withSyncMetadata(desired.Object, p)
	local.SetGroupVersionKind(s.LocalGVK)
	local.SetName(key.Name)
	local.SetNamespace(key.Namespace)
	return local
}

// NewCopy returns the local copy the sync would create for obj in ws (the
// same computation as a create: the name from the mutated object, the spec
// mutations, the desired state, the sync metadata) and obj after its spec
// mutations, without reading or writing anything.
func (s *Syncer) NewCopy(ws Workspace, obj *unstructured.Unstructured) (local, mutated *unstructured.Unstructured, err error) {
	key, mutated, err := s.wouldBeCopy(ws, obj)
	if err != nil {
		return nil, nil, err
	}
	p := primaryOf(ws, obj)
	return s.newCopy(key, objmeta.Desired(mutated, s.StatusSubresource), p), mutated, nil
}

// StatusForKcp returns the status the sync writes into kcp from the local
// copy: the copy's status after the status mutations, which see the
// spec-mutated kcp object; nil if it has none.
func (s *Syncer) StatusForKcp(mutated, local *unstructured.Unstructured) (any, error) {
	local, err := applyMutator(s.StatusMutator, local, mutated)
	if err != nil {
		return nil, fmt.Errorf("status mutation: %w", err)
	}
	return local.Object["status"], nil
}
