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
// become the copy in copyNamespace) with each spec reference naming the
// referenced object's local copy. mutated itself is not changed.
func (s *Syncer) withLocalReferences(ctx context.Context, ws Workspace, obj, mutated *unstructured.Unstructured, copyNamespace string) (*unstructured.Unstructured, []unresolved, error) {
	out := mutated
	var problems []unresolved
	for _, ref := range s.References {
		if ref.Status {
			continue
		}
		name, ok := ref.Get(mutated.Object)
		if !ok {
			continue
		}
		local, problem, err := s.localNameOf(ctx, ws, ref.Target, obj.GetNamespace(), name, copyNamespace)
		if err != nil {
			return nil, nil, fmt.Errorf("reference %s: %w", ref.Path, err)
		}
		if problem != "" {
			problems = append(problems, unresolved{ref, problem})
			continue
		}
		if local == name {
			continue
		}
		if out == mutated {
			out = mutated.DeepCopy()
		}
		if err := ref.Set(out.Object, local); err != nil {
			return nil, nil, err
		}
	}
	return out, problems, nil
}

// localNameOf returns the name of the local copy of the kcp object name
// (of kind gk, in kcpNamespace if that kind is namespaced in kcp) of
// workspace ws: its copy's name, or the name its copy will get. problem
// says why there is none.
func (s *Syncer) localNameOf(ctx context.Context, ws Workspace, gk schema.GroupKind, kcpNamespace, name, copyNamespace string) (local, problem string, err error) {
	t := s.Targets.lookup(gk)
	if t == nil {
		return "", "the service synchronizes no such kind", nil
	}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
		return "", "the value is not a valid object name", nil
	}
	key := types.NamespacedName{Name: name}
	if t.RemoteNamespaced {
		if kcpNamespace == "" {
			return "", "that kind is namespaced, and this object is not", nil
		}
		key.Namespace = kcpNamespace
	}
	referenced := &unstructured.Unstructured{}
	referenced.SetGroupVersionKind(t.RemoteGVK)
	// From the workspace's cache (the target's controller has it), or
	// from its server: an object created a moment ago is found.
	err = ws.Client.Get(ctx, key, referenced)
	if apierrors.IsNotFound(err) && ws.Live != nil {
		err = ws.Live.Get(ctx, key, referenced)
	}
	if err != nil {
		if ObjectNotFound(err, name) {
			return "", fmt.Sprintf("no %s %s exists in this workspace", gk.Kind, objmeta.QualifiedName(key.Namespace, key.Name)), nil
		}
		return "", "", fmt.Errorf("failed to read %s %s: %w", gk.Kind, name, err)
	}
	copyKey, err := t.localKey(ctx, ws, referenced)
	if err != nil {
		return "", "", err
	}
	if copyKey.Name == "" {
		return "", "its name on the service cluster cannot be computed", nil
	}
	if t.Syncer.LocalNamespaced && copyKey.Namespace != copyNamespace {
		return "", "its copy on the service cluster is not in the namespace of this object's copy, so a name cannot reach it", nil
	}
	return copyKey.Name, "", nil
}

// localKey returns the key of the local copy of referenced, a kcp object of
// t's type: the copy's, or the one it will get (empty when its naming
// fails).
func (t *Target) localKey(ctx context.Context, ws Workspace, referenced *unstructured.Unstructured) (types.NamespacedName, error) {
	found, err := t.Syncer.findLocal(ctx, primaryOf(ws, referenced))
	if err != nil {
		return types.NamespacedName{}, err
	}
	if found != nil {
		return types.NamespacedName{Namespace: found.GetNamespace(), Name: found.GetName()}, nil
	}
	key, _, err := t.Syncer.wouldBeCopy(ws, referenced)
	if err != nil {
		return types.NamespacedName{}, nil
	}
	return key, nil
}

// withKcpReferences returns status (the status for obj in kcp, from its
// copy local) with each status reference naming the kcp object whose copy
// it names; a name that is not the copy of an object of obj's workspace
// keeps the value the field has in kcp. status itself is not changed.
func (s *Syncer) withKcpReferences(ctx context.Context, ws Workspace, obj, local *unstructured.Unstructured, status any) (any, []unresolved, error) {
	statusMap, isMap := status.(map[string]any)
	if !isMap {
		return status, nil, nil
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
		kcpName, problem, err := s.kcpNameOf(ctx, ws, ref.Target, obj.GetNamespace(), name, local.GetNamespace())
		if err != nil {
			return nil, nil, fmt.Errorf("reference %s: %w", ref.Path, err)
		}
		if kcpName == name {
			continue
		}
		if !copied {
			wrapped = map[string]any{"status": deepCopyMap(statusMap)}
			copied = true
		}
		if problem != "" {
			problems = append(problems, unresolved{ref, problem + "; the field keeps its value here"})
			err = ref.CopyFrom(wrapped, obj.Object)
		} else {
			err = ref.Set(wrapped, kcpName)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return wrapped["status"], problems, nil
}

func deepCopyMap(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// kcpNameOf returns the kcp name of the object whose local copy (of kind gk
// in kcp) is named name, in copyNamespace if its type is namespaced on the
// service cluster. Only a copy of an object of ws, in kcpNamespace if its
// kind is namespaced in kcp, answers; problem says why there is none.
func (s *Syncer) kcpNameOf(ctx context.Context, ws Workspace, gk schema.GroupKind, kcpNamespace, name, copyNamespace string) (kcpName, problem string, err error) {
	t := s.Targets.lookup(gk)
	if t == nil {
		return "", "the service synchronizes no such kind", nil
	}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
		return "", "the service reported a value that is not an object name", nil
	}
	key := types.NamespacedName{Name: name}
	if t.Syncer.LocalNamespaced {
		if copyNamespace == "" {
			return "", "the service reported a name of a namespaced kind for an object without a namespace", nil
		}
		key.Namespace = copyNamespace
	}
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(t.Syncer.LocalGVK)
	// From the copies' cache, or live: a copy created a moment ago is found.
	err = t.Syncer.copies().Get(ctx, key, cp)
	if apierrors.IsNotFound(err) {
		err = t.Syncer.Service.Get(ctx, key, cp)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", "the service reported an object that is not a copy of an object of this workspace", nil
		}
		return "", "", fmt.Errorf("failed to read the local %s %s: %w", t.Syncer.LocalGVK.Kind, name, err)
	}
	remote, ok := objmeta.FromLocal(cp)
	if !ok || remote.Cluster != ws.Cluster || !consistent(cp, remote) ||
		objmeta.OwnedByOtherAgent(cp, s.AgentName) || objmeta.IsState(cp) || objmeta.OfOtherKind(cp, gk) ||
		(t.RemoteNamespaced && remote.Namespace != kcpNamespace) || (!t.RemoteNamespaced && remote.Namespace != "") {
		return "", "the service reported an object that is not a copy of an object of this workspace", nil
	}
	return remote.Name, "", nil
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
