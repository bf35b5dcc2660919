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
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/references"
)

// ReasonReferenceUnresolved (ours): a field of spec.references names an
// object the agent cannot map between kcp and the service cluster; the
// field is left as it was.
const ReasonReferenceUnresolved = "ReferenceUnresolved"

// Target is what a reference to a published type needs of the
// PublishedResource that synchronizes it.
type Target struct {
	// Syncer is the PublishedResource's syncer (its naming, its copies).
	Syncer *Syncer
	// RemoteGVK and RemoteNamespaced describe the type in kcp.
	RemoteGVK        schema.GroupVersionKind
	RemoteNamespaced bool
	// WorkspacePaths is set when its naming may use the workspace path
	// (spec.enableWorkspacePaths).
	WorkspacePaths bool
}

// Targets are the types the running sync controllers synchronize, by their
// group and kind in kcp. It is safe for concurrent use.
type Targets struct {
	mu sync.RWMutex
	m  map[schema.GroupKind]*Target
}

// Register makes t the target of its kcp group and kind until the
// returned function is called (which leaves a later registration alone).
func (ts *Targets) Register(t *Target) (unregister func()) {
	gk := t.RemoteGVK.GroupKind()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[schema.GroupKind]*Target{}
	}
	ts.m[gk] = t
	return func() {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if ts.m[gk] == t {
			delete(ts.m, gk)
		}
	}
}

func (ts *Targets) lookup(gk schema.GroupKind) *Target {
	if ts == nil {
		return nil
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.m[gk]
}

// unresolved is a reference that could not be mapped: said to the
// consumer, and the object is checked again later.
type unresolved struct {
	ref     references.Reference
	problem string
}

// report gives the consumer an Event per unresolved reference and tells
// the caller to check again.
func (s *Syncer) report(obj *unstructured.Unstructured, problems []unresolved, res *Result) {
	for _, u := range problems {
		s.Event(obj, corev1.EventTypeWarning, ReasonReferenceUnresolved, fmt.Sprintf("%s names %s: %s.", u.ref.Path, u.ref.Target.Kind, u.problem))
	}
	if len(problems) > 0 {
		res.Unresolved = true
	}
}

// withLocalReferences returns mutated (obj after its spec mutations, to
// become the copy in copyNamespace; local is the existing copy or nil) with
// each spec reference naming the referenced object's local copy. mutated
// itself is not changed. A reference that cannot be mapped is reported and
// keeps, in order of preference: the copy's current value while the answer
// may be passing (the referenced kind's controller is not running, a read
// failed); the consumer's name, unless that names a local object that is
// not a copy of this workspace's; nothing (the field is left out).
func (s *Syncer) withLocalReferences(ctx context.Context, ws Workspace, obj, mutated, local *unstructured.Unstructured, copyNamespace string) (*unstructured.Unstructured, []unresolved, error) {
	out := mutated
	edit := func() *unstructured.Unstructured {
		if out == mutated {
			out = mutated.DeepCopy()
		}
		return out
	}
	var problems []unresolved
	for _, ref := range s.References {
		if ref.Status {
			continue
		}
		name, ok := ref.Get(mutated.Object)
		if !ok {
			continue
		}
		r := s.localNameOf(ctx, ws, ref.Target, obj.GetNamespace(), name, copyNamespace)
		switch {
		case r.problem == "":
			if r.name != name {
				if err := ref.Set(edit().Object, r.name); err != nil {
					return nil, nil, err
				}
			}
			continue
		case r.passing && local != nil:
			if err := ref.CopyFrom(edit().Object, local.Object); err != nil {
				return nil, nil, err
			}
		case r.err != nil:
			// No copy yet: it is created once the read works.
			return nil, nil, fmt.Errorf("reference %s: %w", ref.Path, r.err)
		default:
			foreign, err := s.namesForeignObject(ctx, ws, r.target, obj.GetNamespace(), name, copyNamespace)
			if err != nil {
				return nil, nil, fmt.Errorf("reference %s: %w", ref.Path, err)
			}
			if foreign {
				ref.Remove(edit().Object)
				r.problem += "; the field is left out on the service cluster"
			}
		}
		problems = append(problems, unresolved{ref, r.problem})
	}
	return out, problems, nil
}

// resolved is the answer for one reference.
type resolved struct {
	// name is the answer; problem, if set, why there is none.
	name, problem string
	// passing is set when the answer may change by itself (the referenced
	// kind's controller is not running, err is set).
	passing bool
	err     error
	// target is the referenced kind's (nil when none runs).
	target *Target
}

// localNameOf returns the name of the local copy of the kcp object name
// (of kind gk, in kcpNamespace if that kind is namespaced in kcp) of
// workspace ws: its copy's name, or the name its copy will get.
func (s *Syncer) localNameOf(ctx context.Context, ws Workspace, gk schema.GroupKind, kcpNamespace, name, copyNamespace string) resolved {
	t := s.Targets.lookup(gk)
	if t == nil {
		return resolved{problem: "the service does not synchronize this kind (now)", passing: true}
	}
	r := resolved{target: t}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
		r.problem = "the value is not a valid object name"
		return r
	}
	key := types.NamespacedName{Name: name}
	if t.RemoteNamespaced {
		if kcpNamespace == "" {
			r.problem = "that kind is namespaced, and this object is not"
			return r
		}
		key.Namespace = kcpNamespace
	}
	referenced := &unstructured.Unstructured{}
	referenced.SetGroupVersionKind(t.RemoteGVK)
	// From the workspace's cache (the target's controller has it), or
	// from its server: an object created a moment ago is found.
	err := ws.Client.Get(ctx, key, referenced)
	if apierrors.IsNotFound(err) && ws.Live != nil {
		err = ws.Live.Get(ctx, key, referenced)
	}
	switch {
	case ObjectNotFound(err, name):
		r.problem = fmt.Sprintf("no %s %s exists in this workspace", gk.Kind, objmeta.QualifiedName(key.Namespace, key.Name))
		return r
	case err != nil:
		r.problem, r.passing, r.err = "it cannot be read now", true, fmt.Errorf("failed to read %s %s: %w", gk.Kind, name, err)
		return r
	}
	copyKey, problem, err := t.localKey(ctx, ws, referenced)
	switch {
	case err != nil:
		r.problem, r.passing, r.err = "its copy cannot be looked up now", true, err
		return r
	case problem != "":
		r.problem = problem
		return r
	case t.Syncer.LocalNamespaced && copyKey.Namespace != copyNamespace:
		r.problem = "its copy on the service cluster is not in the namespace of this object's copy, so a name cannot reach it"
		return r
	}
	r.name = copyKey.Name
	return r
}

// localKey returns the key of the local copy of referenced, a kcp object of
// t's type: the copy's, or the one it will get if that is free; problem
// says why there is none.
func (t *Target) localKey(ctx context.Context, ws Workspace, referenced *unstructured.Unstructured) (types.NamespacedName, string, error) {
	p := primaryOf(ws, referenced)
	found, err := t.Syncer.findLocal(ctx, p)
	if err != nil {
		return types.NamespacedName{}, "", err
	}
	if found != nil {
		return types.NamespacedName{Namespace: found.GetNamespace(), Name: found.GetName()}, "", nil
	}
	if t.WorkspacePaths && ws.Path == "" {
		return types.NamespacedName{}, "it has no copy on the service cluster yet", nil
	}
	key, _, err := t.Syncer.wouldBeCopy(ws, referenced)
	if err != nil {
		return types.NamespacedName{}, "it has no copy on the service cluster yet, and its name there cannot be computed", nil
	}
	// The name is the copy's only if nobody else holds it: the copy of
	// another workspace's object would be named otherwise.
	existing, err := t.readLocal(ctx, key, false)
	switch {
	case err != nil:
		return types.NamespacedName{}, "", err
	case existing != nil && (!objmeta.Adoptable(existing, p.Remote, t.Syncer.AgentName) || objmeta.OfOtherKind(existing, p.GroupKind())):
		return types.NamespacedName{}, "it has no copy on the service cluster, and the name its copy would get is taken", nil
	}
	return key, "", nil
}

// readLocal reads the object of t's local type at key from the service
// cluster (cached: from the copies' cache first, which holds copies only);
// nil when there is none.
func (t *Target) readLocal(ctx context.Context, key types.NamespacedName, cached bool) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(t.Syncer.LocalGVK)
	var err error
	if cached {
		err = t.Syncer.copies().Get(ctx, key, obj)
	}
	if !cached || apierrors.IsNotFound(err) {
		err = t.Syncer.Service.Get(ctx, key, obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read the local %s %s: %w", t.Syncer.LocalGVK.Kind, key.Name, err)
	}
	return obj, nil
}

// namesForeignObject reports whether name, a consumer's value of a
// reference to t's kind that could not be mapped, names a local object of
// that kind that is not the copy of an object of ws (a name that must
// never be passed on). Without a running target the kind's local type is
// unknown: every name counts as foreign.
func (s *Syncer) namesForeignObject(ctx context.Context, ws Workspace, t *Target, kcpNamespace, name, copyNamespace string) (bool, error) {
	if t == nil {
		return true, nil
	}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
		return false, nil // it names nothing
	}
	key := types.NamespacedName{Name: name}
	if t.Syncer.LocalNamespaced {
		key.Namespace = copyNamespace
	}
	cp, err := t.readLocal(ctx, key, false)
	if err != nil || cp == nil {
		return false, err
	}
	_, ours := s.copyOfWorkspace(cp, ws, t, kcpNamespace)
	return !ours, nil
}

// withKcpReferences returns status (the status for obj in kcp, from its
// copy local) with each status reference naming the kcp object whose copy
// it names; a name that is not the copy of an object of obj's workspace
// keeps the value the field has in kcp. status itself is not changed.
func (s *Syncer) withKcpReferences(ctx context.Context, ws Workspace, obj, local *unstructured.Unstructured, status any) (any, []unresolved) {
	statusMap, isMap := status.(map[string]any)
	if !isMap {
		return status, nil
	}
	wrapped := map[string]any{"status": statusMap}
	copied := false
	var problems []unresolved
	for _, ref := range s.References {
		if !ref.Status {
			continue
		}
		name, ok := ref.Get(wrapped)
		if !ok {
			continue
		}
		kcpName, problem := s.kcpNameOf(ctx, ws, ref.Target, obj.GetNamespace(), name, local.GetNamespace())
		if kcpName == name {
			continue
		}
		if !copied {
			wrapped = map[string]any{"status": deepCopyMap(statusMap)}
			copied = true
		}
		if problem != "" {
			problems = append(problems, unresolved{ref, problem + "; the field keeps its value here"})
			if err := ref.CopyFrom(wrapped, obj.Object); err != nil {
				// Kept from kcp, where the path held a value: cannot fail.
				ref.Remove(wrapped)
			}
			continue
		}
		if err := ref.Set(wrapped, kcpName); err != nil {
			problems = append(problems, unresolved{ref, "the field cannot be written here"})
		}
	}
	return wrapped["status"], problems
}

func deepCopyMap(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// kcpNameOf returns the kcp name of the object whose local copy (of kind gk
// in kcp) is named name, in copyNamespace if its type is namespaced on the
// service cluster. Only a copy of an object of ws, in kcpNamespace if its
// kind is namespaced in kcp, answers; problem says why there is none.
func (s *Syncer) kcpNameOf(ctx context.Context, ws Workspace, gk schema.GroupKind, kcpNamespace, name, copyNamespace string) (kcpName, problem string) {
	const notACopy = "the service reported an object that is not a copy of an object of this workspace"
	t := s.Targets.lookup(gk)
	if t == nil {
		return "", "the service does not synchronize this kind (now)"
	}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
		return "", "the service reported a value that is not an object name"
	}
	key := types.NamespacedName{Name: name}
	if t.Syncer.LocalNamespaced {
		if copyNamespace == "" {
			return "", "the service reported a name of a namespaced kind for an object without a namespace"
		}
		key.Namespace = copyNamespace
	}
	// From the copies' cache, or live: a copy created a moment ago is found.
	cp, err := t.readLocal(ctx, key, true)
	switch {
	case err != nil:
		log.FromContext(ctx).V(1).Info("Cannot read a local object a status reference names", "error", err.Error())
		return "", "it cannot be read now"
	case cp == nil:
		return "", notACopy
	}
	remote, ok := s.copyOfWorkspace(cp, ws, t, kcpNamespace)
	if !ok {
		return "", notACopy
	}
	return remote.Name, ""
}

// copyOfWorkspace returns the kcp object whose copy cp (of t's local type)
// is, if it is the copy of an object of t's kind in ws (in kcpNamespace if
// the kind is namespaced in kcp) of this agent.
func (s *Syncer) copyOfWorkspace(cp *unstructured.Unstructured, ws Workspace, t *Target, kcpNamespace string) (objmeta.Remote, bool) {
	remote, ok := objmeta.FromLocal(cp)
	if !ok || remote.Cluster != ws.Cluster || !consistent(cp, remote) ||
		objmeta.OwnedByOtherAgent(cp, s.AgentName) || objmeta.IsState(cp) || objmeta.OfOtherKind(cp, t.RemoteGVK.GroupKind()) {
		return objmeta.Remote{}, false
	}
	if t.RemoteNamespaced && remote.Namespace != kcpNamespace || !t.RemoteNamespaced && remote.Namespace != "" {
		return objmeta.Remote{}, false
	}
	return remote, true
}

// consistent reports whether the names in a copy's annotations are the ones
// its labels hash (the labels are what finds a copy; annotations alone are
// never trusted to name a kcp object).
func consistent(cp *unstructured.Unstructured, r objmeta.Remote) bool {
	l := cp.GetLabels()
	if l[keys.RemoteObjectNameHash] != objmeta.Hash(r.Name) {
		return false
	}
	if r.Namespace == "" {
		_, has := l[keys.RemoteObjectNamespaceHash]
		return !has
	}
	return l[keys.RemoteObjectNamespaceHash] == objmeta.Hash(r.Namespace)
}
