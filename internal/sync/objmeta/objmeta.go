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

// Package objmeta holds the on-object bookkeeping of synced objects: the
// metadata filtered when copying (contract §4.5), the labels and
// annotations that tie a local copy to its kcp object (§4.1), the label
// selector that finds it again (§6.3) and the adoption rules (§6.4).
package objmeta

import (
	"crypto/sha1" //nolint:gosec // the contract fixes SHA-1 for the remote-object hash labels.
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// Remote identifies a kcp object.
type Remote struct {
	// Cluster is the logical cluster name of the consumer workspace.
	Cluster string
	// Namespace is empty for cluster-scoped kcp objects.
	Namespace string
	Name      string
	// Path is the workspace path, only with enableWorkspacePaths.
	Path string
}

// Hash returns the 40-character lowercase hex SHA-1 of s.
func Hash(s string) string {
	sum := sha1.Sum([]byte(s)) //nolint:gosec // see import.
	return hex.EncodeToString(sum[:])
}

// Labels returns the labels a local copy carries for r.
func (r Remote) Labels(agentName string) map[string]string {
	l := map[string]string{
		keys.RemoteObjectCluster:  r.Cluster,
		keys.RemoteObjectNameHash: Hash(r.Name),
		keys.AgentName:            agentName,
	}
	if r.Namespace != "" {
		l[keys.RemoteObjectNamespaceHash] = Hash(r.Namespace)
	}
	return l
}

// Annotations returns the annotations a local copy carries for r.
func (r Remote) Annotations() map[string]string {
	a := map[string]string{keys.RemoteObjectName: r.Name}
	if r.Namespace != "" {
		a[keys.RemoteObjectNamespace] = r.Namespace
	}
	if r.Path != "" {
		a[keys.RemoteObjectWorkspacePath] = r.Path
	}
	return a
}

// Selector finds the local copies of r: cluster and name hash, plus the
// namespace hash for namespaced kcp objects and its absence for
// cluster-scoped ones (the reference's selector also takes namespaced
// objects of the same workspace and name for a cluster-scoped one's).
func (r Remote) Selector() labels.Selector {
	l := labels.Set{
		keys.RemoteObjectCluster:  r.Cluster,
		keys.RemoteObjectNameHash: Hash(r.Name),
	}
	if r.Namespace != "" {
		l[keys.RemoteObjectNamespaceHash] = Hash(r.Namespace)
		return labels.SelectorFromSet(l)
	}
	return labels.SelectorFromSet(l).Add(clusterScoped)
}

// clusterScoped selects objects of cluster-scoped kcp objects: without it,
// the labels of a cluster-scoped object would also select every namespaced
// object of the same workspace and name.
var clusterScoped = func() labels.Requirement {
	req, err := labels.NewRequirement(keys.RemoteObjectNamespaceHash, selection.DoesNotExist, nil)
	if err != nil {
		panic(err)
	}
	return *req
}()

// RemoteIndex names the cache index of objects by the kcp object their
// remote-object labels name (local copies and state Secrets), so that
// finding them costs a map lookup instead of a walk over every cached
// object.
const RemoteIndex = "syncagent.kcp.io/remote-object"

// RemoteIndexValues returns the index value of obj: "<cluster>/<name hash>"
// and, with a namespace hash, "<cluster>/<name hash>/<namespace hash>" (one
// value, as Selector never selects an object with a namespace hash for a
// cluster-scoped kcp object), so that an IndexKey lookup matches exactly
// what Selector matches.
func RemoteIndexValues(obj ctrlruntimeclient.Object) []string {
	l := obj.GetLabels()
	cluster, name := l[keys.RemoteObjectCluster], l[keys.RemoteObjectNameHash]
	if cluster == "" || name == "" {
		return nil
	}
	if ns := l[keys.RemoteObjectNamespaceHash]; ns != "" {
		return []string{cluster + "/" + name + "/" + ns}
	}
	return []string{cluster + "/" + name}
}

// IndexKey returns the RemoteIndex value that finds the objects of r.
func (r Remote) IndexKey() string {
	key := r.Cluster + "/" + Hash(r.Name)
	if r.Namespace != "" {
		key += "/" + Hash(r.Namespace)
	}
	return key
}

// FromLocal reads the kcp identity recorded on a local copy. ok is false if
// the copy does not name its kcp object.
func FromLocal(obj *unstructured.Unstructured) (r Remote, ok bool) {
	l, a := obj.GetLabels(), obj.GetAnnotations()
	r = Remote{Cluster: l[keys.RemoteObjectCluster], Name: a[keys.RemoteObjectName], Namespace: a[keys.RemoteObjectNamespace], Path: a[keys.RemoteObjectWorkspacePath]}
	return r, r.Cluster != "" && r.Name != ""
}

// OwnedByOtherAgent reports whether obj carries another agent's label.
// Objects without the label count as ours (the reference added it late).
func OwnedByOtherAgent(obj metav1.Object, agentName string) bool {
	v, ok := obj.GetLabels()[keys.AgentName]
	return ok && v != agentName
}

// Adoptable reports whether an existing local object may be taken over as
// the copy of r: none of its identification labels or annotations names
// another kcp object, it carries no other agent's label, and no earlier kcp
// object's deletion orphaned it. An object with none of them is unowned
// and adoptable.
func Adoptable(obj *unstructured.Unstructured, r Remote, agentName string) bool {
	if OwnedByOtherAgent(obj, agentName) {
		return false
	}
	l, a := obj.GetLabels(), obj.GetAnnotations()
	if _, orphaned := a[keys.OrphanedFrom]; orphaned {
		return false // kept on purpose when its kcp object went
	}
	want := r.Labels(agentName)
	for _, k := range []string{keys.RemoteObjectCluster, keys.RemoteObjectNameHash, keys.RemoteObjectNamespaceHash} {
		if v, ok := l[k]; ok && v != want[k] {
			return false
		}
	}
	wantAnn := r.Annotations()
	for _, k := range []string{keys.RemoteObjectName, keys.RemoteObjectNamespace} {
		if v, ok := a[k]; ok && v != wantAnn[k] {
			return false
		}
	}
	return true
}

// OfOtherKind reports whether the local object records a kcp kind and it
// is not gk: the copy of another kind's object of the same workspace,
// namespace and name (a projection changed), which must be neither taken
// over nor deleted for this one.
func OfOtherKind(obj metav1.Object, gk schema.GroupKind) bool {
	v, ok := obj.GetAnnotations()[keys.RemoteObjectKind]
	return ok && v != gk.String()
}

// Labels never copied between the sides.
func copyableLabel(k string) bool {
	switch k {
	case keys.RemoteObjectCluster, keys.RemoteObjectNameHash, keys.RemoteObjectNamespaceHash,
		keys.AgentName, keys.ObjectState, keys.ImportInto:
		return false
	}
	return !strings.HasPrefix(k, "claimed.internal.apis.kcp.io/")
}

// Annotations never copied between the sides.
func copyableAnnotation(k string) bool {
	switch k {
	case "kcp.io/cluster", "kubectl.kubernetes.io/last-applied-configuration",
		keys.RemoteObjectName, keys.RemoteObjectNamespace, keys.RemoteObjectWorkspacePath, keys.RemoteObjectKind,
		keys.AgentName, keys.ObjectState, keys.DeletionPropagationPolicy, keys.OrphanedFrom,
		keys.ImportName, keys.ImportNamespace, keys.ImportedFrom, keys.Importing:
		return false
	}
	return !strings.HasPrefix(k, keys.RelatedResourcesPrefix)
}

// QualifiedName is "namespace/name", or "name" for a cluster-scoped
// object, as messages name objects.
func QualifiedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// IsState reports whether obj is one of the agents' state Secrets: they
// carry the remote-object labels of their kcp object too, and must never
// be taken for a local copy (when Secrets are the published type). Copies
// of other types never are, whatever their labels.
func IsState(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetLabels()[keys.ObjectState]
	return ok && obj.GetAPIVersion() == "v1" && obj.GetKind() == "Secret"
}

// FilterLabels returns the labels that may be copied.
func FilterLabels(in map[string]string) map[string]string { return filter(in, copyableLabel) }

// FilterAnnotations returns the annotations that may be copied.
func FilterAnnotations(in map[string]string) map[string]string {
	return filter(in, copyableAnnotation)
}

func filter(in map[string]string, keep func(string) bool) map[string]string {
	var out map[string]string
	for k, v := range in {
		if keep(k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// Desired returns the content of obj that is copied to the other side:
// every top-level field except apiVersion, kind and metadata, with status
// removed when it is a subresource, plus metadata reduced to the copyable
// labels and annotations (name and namespace are set by the caller).
func Desired(obj *unstructured.Unstructured, statusIsSubresource bool) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range obj.Object {
		switch k {
		case "apiVersion", "kind", "metadata":
			continue
		case "status":
			if statusIsSubresource {
				continue
			}
		}
		out.Object[k] = runtime.DeepCopyJSONValue(v)
	}
	if l := FilterLabels(obj.GetLabels()); len(l) > 0 {
		out.SetLabels(l)
	}
	if a := FilterAnnotations(obj.GetAnnotations()); len(a) > 0 {
		out.SetAnnotations(a)
	}
	return out
}
