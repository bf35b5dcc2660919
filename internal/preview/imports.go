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

package preview

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/imports"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// Import is what the agent would do with a service-side sample that asks
// to be imported (labelled syncagent.kcp.io/import-into; the agent does it
// only with --enable-imports).
type Import struct {
	// Service names the sample (namespace/name).
	Service string `json:"service"`
	// Workspace is the workspace it asks for.
	Workspace string `json:"workspace,omitempty"`
	// Refused says why the agent would refuse it.
	Refused string `json:"refused,omitempty"`
	// Kcp is the kcp object the agent would create; the sample then
	// becomes its local copy where it is.
	Kcp   *unstructured.Unstructured `json:"kcp,omitempty"`
	Notes []string                   `json:"notes,omitempty"`
}

// asksForImport reports whether a service-side sample of type local asks
// to be imported.
func asksForImport(obj *unstructured.Unstructured, local schema.GroupVersionKind) bool {
	_, ok := obj.GetLabels()[keys.ImportInto]
	return ok && obj.GroupVersionKind() == local
}

// importOf previews the import request of the service-side sample obj:
// the kcp objects of type remote are namespaced or not; primaries are the
// kcp samples (of the preview's workspace), kcpNamespaces and
// serviceNamespaces the labels of the Namespace samples on each side.
func (in Input) importOf(rules syncer.Rules, remote schema.GroupVersionKind, kcpNamespaced bool, primaries []*unstructured.Unstructured, kcpNamespaces, serviceNamespaces map[string]map[string]string, obj *unstructured.Unstructured) Import {
	im := Import{Service: qualified(obj), Notes: []string{"the agent imports objects only with --enable-imports"}}
	req, _, err := imports.Of(obj, kcpNamespaced)
	im.Workspace = req.Cluster
	if err != nil {
		im.Refused = err.Error()
		return im
	}
	nsLabels, known := serviceNamespaces[obj.GetNamespace()]
	if !known && obj.GetNamespace() != "" {
		im.Notes = append(im.Notes, fmt.Sprintf("namespace %s on the service cluster has no sample (a Namespace among the service objects): it is assumed not to be one an agent created for another workspace", obj.GetNamespace()))
	}
	if why := imports.Refusal(obj, req, nsLabels, nil); why != "" {
		im.Refused = why
		return im
	}
	kcp := imports.KcpObject(obj, remote, req, finalizer.For(in.AgentName).Own)
	if req.Cluster == in.Workspace {
		for _, p := range primaries {
			if p.GetNamespace() == kcp.GetNamespace() && p.GetName() == kcp.GetName() {
				im.Refused = fmt.Sprintf("%s %s exists already", remote.Kind, req)
				return im
			}
		}
	}
	if f := rules.ResourceFilter; f != nil && !f.Matches(labels.Set(kcp.GetLabels())) {
		im.Refused = fmt.Sprintf("the PublishedResource's filter would not select the kcp object (spec.filter.resource: %s)", f)
		return im
	}
	if ns := kcp.GetNamespace(); ns != "" {
		im.Notes = append(im.Notes, fmt.Sprintf("namespace %s must exist in workspace %s, and no %s of this name", ns, req.Cluster, remote.Kind))
		if f := rules.NamespaceFilter; f != nil {
			nsLabels, ok := kcpNamespaces[ns]
			switch {
			case req.Cluster != in.Workspace || !ok:
				im.Notes = append(im.Notes, fmt.Sprintf("spec.filter.namespace (%s) is matched against the labels of namespace %s in kcp; it has no sample, so it is assumed to match", f, ns))
			case !f.Matches(labels.Set(nsLabels)):
				im.Refused = fmt.Sprintf("the PublishedResource's filter would not select the kcp object (the labels of namespace %s do not match spec.filter.namespace: %s)", ns, f)
				return im
			}
		}
	}
	im.Kcp = kcp
	im.Notes = append(im.Notes, fmt.Sprintf("%s stays where it is and becomes the copy of the kcp object; its spec is kept", objmeta.QualifiedName(obj.GetNamespace(), obj.GetName())))
	return im
}
