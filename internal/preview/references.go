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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/references"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// referenceNotes says, for each spec.references field the sample fills,
// what the agent would put there: the local name of a sample of the
// published type itself (set in local, the copy shown), else what decides
// it (the preview sees one PublishedResource and no workspace). A status
// field naming the local copy of such a sample is set in statusToKcp.
func (in Input) referenceNotes(s *syncer.Syncer, refs []references.Reference, own schema.GroupKind, samples []*unstructured.Unstructured, obj, local *unstructured.Unstructured, statusToKcp any) []string {
	var out []string
	for _, ref := range refs {
		// As the agent: a spec field after the spec mutations (obj), a
		// status field after the status mutations (statusToKcp; none
		// without a status subresource).
		source := obj.Object
		if ref.Status {
			source = map[string]any{"status": statusToKcp}
		}
		name, ok := ref.Get(source)
		if !ok {
			continue
		}
		target := fmt.Sprintf("%s %s", ref.Target.Kind, objmeta.QualifiedName(obj.GetNamespace(), name))
		if ref.Target.Group != "" {
			target = fmt.Sprintf("%s.%s %s", ref.Target.Kind, ref.Target.Group, objmeta.QualifiedName(obj.GetNamespace(), name))
		}
		if ref.Status {
			if kcpName, found := in.ownKcpName(s, samples, obj.GetNamespace(), local.GetNamespace(), name); ref.Target == own && found {
				if status, ok := statusToKcp.(map[string]any); ok && ref.Set(map[string]any{"status": status}, kcpName) == nil {
					out = append(out, fmt.Sprintf("%s %q: written into kcp as %q, the kcp name of the %s whose local copy has this name", ref.Path, name, kcpName, ref.Target.Kind))
					continue
				}
			}
			out = append(out, fmt.Sprintf("%s %q: written into kcp as the kcp name of the %s whose local copy has this name, if that copy belongs to an object of the same workspace; otherwise the field keeps its value in kcp (ReferenceUnresolved)", ref.Path, name, ref.Target.Kind))
			continue
		}
		if ref.Target == own {
			if key, found := in.ownLocalKey(s, samples, obj.GetNamespace(), name); found && key.Namespace == local.GetNamespace() && ref.Set(local.Object, key.Name) == nil {
				out = append(out, fmt.Sprintf("%s %q: the local copy carries %q, the name of the copy of %s", ref.Path, name, key.Name, target))
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s %q: the local copy carries the name of the local copy of %s, as the PublishedResource of that kind names it (as written if the workspace has no such object: ReferenceUnresolved); the local copy shown keeps %q", ref.Path, name, target, name))
	}
	return out
}

// ownLocalKey returns the local namespace and name of the sample
// namespace/name among samples (of the published type).
func (in Input) ownLocalKey(s *syncer.Syncer, samples []*unstructured.Unstructured, namespace, name string) (types.NamespacedName, bool) {
	for _, sample := range samples {
		if sample.GetName() == name && sample.GetNamespace() == namespace {
			return in.localKeyOf(s, sample)
		}
	}
	return types.NamespacedName{}, false
}

// ownKcpName returns the name of the sample (of the published type, in
// namespace) whose local copy is copyNamespace/localName.
func (in Input) ownKcpName(s *syncer.Syncer, samples []*unstructured.Unstructured, namespace, copyNamespace, localName string) (string, bool) {
	for _, sample := range samples {
		if sample.GetNamespace() != namespace {
			continue
		}
		if key, found := in.localKeyOf(s, sample); found && key.Name == localName && (!s.LocalNamespaced || key.Namespace == copyNamespace) {
			return sample.GetName(), true
		}
	}
	return "", false
}

// localKeyOf returns the local namespace and name the sample's copy gets;
// false when its naming fails.
func (in Input) localKeyOf(s *syncer.Syncer, sample *unstructured.Unstructured) (types.NamespacedName, bool) {
	local, _, err := s.NewCopy(in.workspace(), sample)
	if err != nil {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}, true
}
