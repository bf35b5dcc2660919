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

package invariant

import (
	"cmp"
	"context" //nolint:gosec // the contract fixes SHA-1 for the remote-object hash labels.
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// checkRelated checks the related Secrets of a live primary with its copy:
// a live source has our finalizer and a copy with its data; no source, no
// copy.
func (c *Checker) checkRelated(ctx context.Context, r Resource, k Key, ws ctrlruntimeclient.Reader, cp *unstructured.Unstructured) ([]Violation, error) {
	var out []Violation
	for _, rel := range r.Related {
		inKcp, err := c.secret(ctx, k.Cluster, ws, k.Namespace, k.Name+rel.Suffix)
		if err != nil {
			return nil, err
		}
		local, err := c.secret(ctx, "", c.Service, cp.GetNamespace(), cp.GetName()+rel.Suffix)
		if err != nil {
			return nil, err
		}
		if local != nil && rel.Origin != OriginService {
			if _, copied := local.GetLabels()[rel.Label]; !copied {
				local = nil // the service side's own Secret, not a copy
			}
		}
		name := k.String() + " " + rel.Suffix
		src, dst, dstName := inKcp, local, cp.GetNamespace()+"/"+cp.GetName()+rel.Suffix
		if rel.Origin == OriginService {
			src, dst, dstName = local, inKcp, k.String()+rel.Suffix
		}
		switch {
		case src == nil || src.GetDeletionTimestamp() != nil:
			if dst != nil && rel.Origin != OriginService {
				out = append(out, Violation{RuleRelatedStale, objectName(dst) + " (of " + name + ")", "no copy: the source is gone", "a copy"})
			}
		case dst == nil:
			out = append(out, Violation{RuleRelatedCopy, name, "a copy " + dstName, "none"})
		default:
			if rel.Origin != OriginService && !slices.Contains(src.GetFinalizers(), c.finalizer()) {
				out = append(out, Violation{RuleFinalizer, name, c.finalizer(), fmt.Sprint(src.GetFinalizers())})
			}
			srcData, _, _ := unstructured.NestedMap(src.Object, "data")
			dstData, _, _ := unstructured.NestedMap(dst.Object, "data")
			if !equality.Semantic.DeepEqual(emptyNil(srcData), emptyNil(dstData)) {
				out = append(out, Violation{RuleRelatedCopy, name, toJSON(srcData), toJSON(dstData)})
			}
		}
	}
	return out, nil
}

// secret returns a Secret of a side (nil: none), listing its namespace
// once per Check.
func (c *Checker) secret(ctx context.Context, side string, r ctrlruntimeclient.Reader, namespace, name string) (*unstructured.Unstructured, error) {
	key := [2]string{side, namespace}
	if _, ok := c.secrets[key]; !ok {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "SecretList"})
		if err := r.List(ctx, list, ctrlruntimeclient.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("failed to list the Secrets of namespace %q (%s): %w", namespace, cmp.Or(side, "service cluster"), err)
		}
		byName := map[string]*unstructured.Unstructured{}
		for i := range list.Items {
			byName[list.Items[i].GetName()] = &list.Items[i]
		}
		c.secrets[key] = byName
	}
	return c.secrets[key][name], nil
}

// checkStaleRelated reports kcp-origin related copies, found anywhere on
// the service cluster by their source's label, that are not the copy of a
// live primary's local copy.
func (c *Checker) checkStaleRelated(ctx context.Context, r Resource, byPrimary map[Key][]*unstructured.Unstructured, primaries map[Key]*unstructured.Unstructured) ([]Violation, error) {
	live := map[string]bool{} // namespace/name of the local copies of live primaries
	for k, cps := range byPrimary {
		for _, cp := range cps {
			if r.copyAllowed(primaries[k], c.finalizer()) || r.Kept[k] {
				live[objectName(cp)] = true
			}
		}
	}
	var out []Violation
	for _, rel := range r.Related {
		if rel.Origin == OriginService {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "SecretList"})
		if err := c.Service.List(ctx, list, ctrlruntimeclient.HasLabels{rel.Label}); err != nil {
			return nil, fmt.Errorf("failed to list the related copies labelled %s: %w", rel.Label, err)
		}
		for i := range list.Items {
			s := &list.Items[i]
			if r.CopyNamespace != nil && !r.CopyNamespace(s.GetNamespace()) {
				continue // another agent's copy
			}
			owner, ok := strings.CutSuffix(s.GetName(), rel.Suffix)
			if !ok || !live[s.GetNamespace()+"/"+owner] {
				out = append(out, Violation{RuleRelatedStale, objectName(s), "no related copy without a live primary", "a copy"})
			}
		}
	}
	return out, nil
}

// checkSourceFinalizers reports Secrets in the workspaces that carry our
// finalizer without being the kcp-origin related source of a primary that
// may have a copy (a finalizer leaked when the primary went), and Secrets
// whose deletion waits for it.
func (c *Checker) checkSourceFinalizers(ctx context.Context) ([]Violation, error) {
	var out []Violation
	for _, ws := range c.Workspaces {
		secrets, err := workspaceSecrets(ctx, ws)
		if err != nil {
			return nil, err
		}
		for i := range secrets {
			s := &secrets[i]
			if !c.heldByAgent(s) {
				continue
			}
			own := slices.Contains(s.GetFinalizers(), c.finalizer())
			k := Key{ws.Cluster, s.GetNamespace(), s.GetName()}
			switch {
			case !own:
				out = append(out, Violation{RuleFinalizer, k.String(), "no " + c.finalizer() + " (the agent replaces " + keys.CleanupFinalizer + " with its own)", fmt.Sprint(s.GetFinalizers())})
			case s.GetDeletionTimestamp() != nil:
				out = append(out, Violation{RuleStuckDeletion, k.String(), "deleted and released", "deleting with " + c.finalizer()})
			case !c.sources[k]:
				out = append(out, Violation{RuleFinalizer, k.String(), "no " + c.finalizer() + " (no primary that may have a copy names it)", fmt.Sprint(s.GetFinalizers())})
			}
		}
	}
	return out, nil
}
