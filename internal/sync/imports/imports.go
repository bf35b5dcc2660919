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

// Package imports decides on requests to import a service-cluster object
// into a consumer workspace (the label syncagent.kcp.io/import-into on an
// object of a PublishedResource's local type): which kcp object a request
// asks for, whether the object may be imported, and the kcp object created
// from it. It writes nothing (the sync controller does), reads the service
// cluster only to tell whether a namespace holds another workspace's
// copies, and must never let an object that is, or was, another
// workspace's be imported.
package imports

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

// Request is what an import request asks for: the kcp object Key in the
// workspace Cluster.
type Request struct {
	Cluster string
	Key     types.NamespacedName
}

// Of returns the import request of local, the kcp type being namespaced or
// not; ok is false if local asks for none. An error says why the request
// is not valid.
func Of(local *unstructured.Unstructured, kcpNamespaced bool) (req Request, ok bool, err error) {
	cluster, ok := local.GetLabels()[keys.ImportInto]
	if !ok {
		return Request{}, false, nil
	}
	if cluster == "" {
		return Request{}, true, fmt.Errorf("the label %s names no workspace", keys.ImportInto)
	}
	req.Cluster = cluster
	a := local.GetAnnotations()
	req.Key.Name = local.GetName()
	if name, set := a[keys.ImportName]; set {
		req.Key.Name = name
	}
	if msgs := validation.IsDNS1123Subdomain(req.Key.Name); len(msgs) > 0 {
		return req, true, fmt.Errorf("%q is no valid name for the kcp object: %s", req.Key.Name, strings.Join(msgs, "; "))
	}
	namespace, set := a[keys.ImportNamespace]
	switch {
	case !kcpNamespaced && set:
		return req, true, fmt.Errorf("the annotation %s is set, but the kcp objects of this type are cluster-scoped", keys.ImportNamespace)
	case !kcpNamespaced:
		return req, true, nil
	case !set:
		namespace = local.GetNamespace()
	}
	if namespace == "" {
		return req, true, fmt.Errorf("the kcp objects of this type are namespaced: name the namespace with the annotation %s", keys.ImportNamespace)
	}
	if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
		return req, true, fmt.Errorf("%q is no valid namespace for the kcp object: %s", namespace, strings.Join(msgs, "; "))
	}
	req.Key.Namespace = namespace
	return req, true, nil
}

// String names the request's kcp object as Events do.
func (r Request) String() string {
	return fmt.Sprintf("%s in workspace %s", objmeta.QualifiedName(r.Key.Namespace, r.Key.Name), r.Cluster)
}

// Refusal returns why local may not be imported by the request req (empty
// if it may): namespaceLabels are the labels of local's namespace (nil for
// a cluster-scoped object); claim are the sync labels the import gives it,
// which it may carry already (an import that stopped after its first
// step). An object that is the copy of a kcp object (or a state Secret),
// that a kcp object's deletion left behind, or that lives in a namespace
// an agent created for another workspace holds another workspace's data
// and is never imported.
func Refusal(local *unstructured.Unstructured, req Request, namespaceLabels, claim map[string]string) string {
	l := local.GetLabels()
	if !claimed(l, claim) {
		for _, k := range []string{keys.RemoteObjectCluster, keys.RemoteObjectNameHash, keys.RemoteObjectNamespaceHash, keys.AgentName, keys.ObjectState} {
			if _, ok := l[k]; ok {
				return fmt.Sprintf("it is the copy of a kcp object (label %s); only objects that no agent synchronizes can be imported", k)
			}
		}
	}
	if from, ok := local.GetAnnotations()[keys.OrphanedFrom]; ok {
		return fmt.Sprintf("it was left behind by the deletion of the kcp object %s (annotation %s); remove that annotation to import it", from, keys.OrphanedFrom)
	}
	if owner, ok := namespaceLabels[keys.CreatedForCluster]; ok && owner != req.Cluster {
		return fmt.Sprintf("its namespace was created for the objects of another workspace (label %s)", keys.CreatedForCluster)
	}
	return ""
}

// claimed reports whether labels are exactly those of claim where it comes
// to the sync labels.
func claimed(labels, claim map[string]string) bool {
	for _, k := range []string{keys.RemoteObjectCluster, keys.RemoteObjectNameHash, keys.RemoteObjectNamespaceHash, keys.AgentName} {
		if labels[k] != claim[k] {
			return false
		}
	}
	_, state := labels[keys.ObjectState]
	return len(claim) > 0 && !state
}

// namespaceListLimit bounds the copies listed to tell whose a namespace is.
const namespaceListLimit = 100

// NamespaceOfOther returns the workspace other than cluster that the
// namespace is named after and holds copies (of type gvk) of, empty if
// none: the namespaces the reference creates for a workspace carry its
// logical cluster name and no label that says so. A namespace shared by
// several workspaces' copies is no workspace's. reader reads the API
// server.
func NamespaceOfOther(ctx context.Context, reader ctrlruntimeclient.Reader, gvk schema.GroupVersionKind, namespace, cluster string) (string, error) {
	if namespace == "" {
		return "", nil
	}
	other, err := labels.NewRequirement(keys.RemoteObjectCluster, selection.NotIn, []string{cluster})
	if err != nil {
		return "", err
	}
	synced, err := labels.NewRequirement(keys.RemoteObjectCluster, selection.Exists, nil)
	if err != nil {
		return "", err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := reader.List(ctx, list, ctrlruntimeclient.InNamespace(namespace), &ctrlruntimeclient.ListOptions{
		LabelSelector: labels.NewSelector().Add(*synced, *other), Limit: namespaceListLimit,
	}); err != nil {
		return "", fmt.Errorf("failed to list the copies in namespace %s: %w", namespace, err)
	}
	for _, item := range list.Items {
		if c := item.Labels[keys.RemoteObjectCluster]; c != "" && strings.Contains(namespace, c) {
			return c, nil
		}
	}
	return "", nil
}

// KcpObject returns the kcp object that the import req of local creates:
// of type gvk, named by req, with local's labels and annotations that may
// be copied and every top-level field but metadata and status (the status
// follows from the service side as for any synced object), the annotation
// that names its origin, and the finalizer fin.
func KcpObject(local *unstructured.Unstructured, gvk schema.GroupVersionKind, req Request, fin string) *unstructured.Unstructured {
	obj := objmeta.Desired(local, true)
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(req.Key.Namespace)
	obj.SetName(req.Key.Name)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[keys.ImportedFrom] = string(local.GetUID())
	obj.SetAnnotations(annotations)
	obj.SetFinalizers([]string{fin})
	return obj
}

// CreatedBy reports whether kcpObj was created by the import of local.
func CreatedBy(kcpObj, local *unstructured.Unstructured) bool {
	return local.GetUID() != "" && kcpObj.GetAnnotations()[keys.ImportedFrom] == string(local.GetUID())
}

// Done returns the JSON merge patch that removes the request from local
// once the import is done (or abandoned).
func Done() []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null},"annotations":{%q:null,%q:null}}}`,
		keys.ImportInto, keys.ImportName, keys.ImportNamespace))
}
