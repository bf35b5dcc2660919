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
	"context" //nolint:gosec // the contract fixes SHA-1 for the remote-object hash labels.
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// checkResource checks one PublishedResource's primaries and copies, and
// returns the state keys (cluster|name hash|namespace hash) of its live
// primaries.
func (c *Checker) checkResource(ctx context.Context, r Resource) ([]Violation, map[string]bool, error) {
	var out []Violation
	known := map[string]bool{}
	primaries := map[Key]*unstructured.Unstructured{}
	for _, ws := range c.Workspaces {
		known[ws.Cluster] = true
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(r.Kcp.GroupVersion().WithKind(r.Kcp.Kind + "List"))
		if err := ws.Client.List(ctx, list); err != nil {
			return nil, nil, fmt.Errorf("failed to list %s in workspace %s: %w", r.Kcp.Kind, ws.Cluster, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			primaries[Key{ws.Cluster, o.GetNamespace(), o.GetName()}] = o
		}
	}
	copies := &unstructured.UnstructuredList{}
	copies.SetGroupVersionKind(r.Local.GroupVersion().WithKind(r.Local.Kind + "List"))
	if err := c.Service.List(ctx, copies, ctrlruntimeclient.HasLabels{labelCluster}); err != nil {
		return nil, nil, fmt.Errorf("failed to list the local %s: %w", r.Local.Kind, err)
	}
	byPrimary := map[Key][]*unstructured.Unstructured{}
	for i := range copies.Items {
		cp := &copies.Items[i]
		if owner := cp.GetLabels()[labelAgent]; owner != "" && owner != c.AgentName {
			continue // another agent's
		}
		k := Key{cp.GetLabels()[labelCluster], cp.GetAnnotations()[annotationNS], cp.GetAnnotations()[annotationName]}
		byPrimary[k] = append(byPrimary[k], cp)
	}

	live := map[string]bool{}
	for _, k := range sortedKeys(primaries) {
		obj := primaries[k]
		hasFinalizer := slices.Contains(obj.GetFinalizers(), c.finalizer())
		if obj.GetDeletionTimestamp() != nil {
			// The legacy finalizer counts as this agent's: no other agent of a
			// checked setup writes it (each has a finalizer of its own).
			if c.heldByAgent(obj) {
				out = append(out, Violation{RuleStuckDeletion, k.String(), "deleted and released", "deleting with " + c.finalizer()})
			}
			continue
		}
		if r.Released {
			if c.heldByAgent(obj) {
				out = append(out, Violation{RuleNoController, k.String(), "no finalizer of this agent: no running controller selects " + r.Name, fmt.Sprint(obj.GetFinalizers())})
			}
			markState(r, live, k)
			continue
		}
		cps := byPrimary[k]
		if r.Selected != nil && !r.Selected(obj) {
			if hasFinalizer { // synced before: the copy and its state stay, unsynced
				c.markLive(r, live, k)
				if len(cps) > 1 {
					out = append(out, Violation{RuleOneCopy, k.String(), "at most one " + r.Local.Kind + " (filtered out)", fmt.Sprintf("%d: %s", len(cps), names(cps))})
				}
			}
			continue
		}
		c.markLive(r, live, k)
		if !hasFinalizer {
			out = append(out, Violation{RuleFinalizer, k.String(), c.finalizer(), fmt.Sprint(obj.GetFinalizers())})
		}
		if len(cps) != 1 {
			out = append(out, Violation{RuleOneCopy, k.String(), "one " + r.Local.Kind, fmt.Sprintf("%d: %s", len(cps), names(cps))})
			continue
		}
		out = append(out, c.checkCopy(r, k, obj, cps[0])...)
		vs, err := c.checkRelated(ctx, r, k, c.workspace(k.Cluster), cps[0])
		if err != nil {
			return nil, nil, err
		}
		out = append(out, vs...)
	}
	vs, err := c.checkStaleRelated(ctx, r, byPrimary, primaries)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, vs...)
	gone := map[string]bool{}
	for _, ws := range c.Gone {
		gone[ws.Cluster] = true
	}
	for k := range r.Kept {
		if (known[k.Cluster] || gone[k.Cluster]) && !r.copyAllowed(primaries[k], c.finalizer()) {
			markState(r, live, k) // released with its PublishedResource: its state stays, with or without a copy
		}
	}
	for _, k := range sortedKeys(byPrimary) {
		if r.copyAllowed(primaries[k], c.finalizer()) {
			continue
		}
		rule, why := RuleOrphanCopy, "no live kcp object"
		switch {
		case gone[k.Cluster] && r.Kept[k]:
			continue
		case !known[k.Cluster]:
			rule, why = RuleUnknownWorkspace, "no bound workspace "+k.Cluster
		case r.Kept[k]:
			continue
		}
		for _, cp := range byPrimary[k] {
			out = append(out, Violation{rule, objectName(cp), "no copy of " + k.String(), "a copy (" + why + ")"})
		}
	}
	return out, live, nil
}

// markLive records what a primary that may have a copy may have: its
// state and our finalizer on its kcp-origin related sources.
func (c *Checker) markLive(r Resource, live map[string]bool, k Key) {
	markState(r, live, k)
	for _, rel := range r.Related {
		if rel.Origin != OriginService {
			c.sources[Key{k.Cluster, k.Namespace, k.Name + rel.Suffix}] = true
		}
	}
}

// markState records that k's state may exist: its labels (related state
// Secrets) and its own state Secret's name, which includes the kind.
func markState(r Resource, live map[string]bool, k Key) {
	live[stateKey(k)] = true
	live[stateName(r.Kcp, k)] = true
}

// stateName is the name of a primary's own state Secret (contract §4.4).
func stateName(gvk schema.GroupVersionKind, k Key) string {
	var b strings.Builder
	// encoding/json of a map: sorted keys, HTML escaping, a newline.
	enc := json.NewEncoder(&b)
	_ = enc.Encode(map[string]string{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "name": k.Name, "namespace": k.Namespace})
	return "obj-state-" + k.Cluster + "-" + hash(b.String())[:20]
}

// copyAllowed tells whether a kcp object (nil: none) may have a local copy:
// it lives and is selected, or was synced before the filter left it out.
func (r Resource) copyAllowed(obj *unstructured.Unstructured, finalizer string) bool {
	if obj == nil || obj.GetDeletionTimestamp() != nil {
		return false
	}
	return r.Released || r.Selected == nil || r.Selected(obj) || slices.Contains(obj.GetFinalizers(), finalizer)
}

// finalizer is the agent's own finalizer on kcp objects.
func (c *Checker) finalizer() string { return keys.CleanupFinalizerOf(c.AgentName) }

// heldByAgent reports whether o carries the agent's finalizer or the
// legacy one (only this agent syncs where the checker looks).
func (c *Checker) heldByAgent(o *unstructured.Unstructured) bool {
	return slices.Contains(o.GetFinalizers(), c.finalizer()) || slices.Contains(o.GetFinalizers(), keys.CleanupFinalizer)
}

// workspaceSecrets lists every Secret of a workspace.
func workspaceSecrets(ctx context.Context, ws Workspace) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "SecretList"})
	if err := ws.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("failed to list the Secrets of workspace %s: %w", ws.Cluster, err)
	}
	return list.Items, nil
}

// checkCopy compares a live primary with its only local copy.
func (c *Checker) checkCopy(r Resource, k Key, obj, cp *unstructured.Unstructured) []Violation {
	var out []Violation
	labels := cp.GetLabels()
	want := map[string]string{labelCluster: k.Cluster, labelNameHash: hash(k.Name), labelAgent: c.AgentName}
	if r.KcpNamespaced {
		want[labelNamespaceHash] = hash(k.Namespace)
	}
	for _, key := range r.CopiedLabels {
		want[key] = obj.GetLabels()[key]
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if labels[key] != want[key] {
			out = append(out, Violation{RuleSyncLabels, objectName(cp), key + "=" + want[key], key + "=" + labels[key]})
		}
	}
	if r.Service != nil {
		setLabels, setSpec := r.Service(cp)
		for _, key := range slices.Sorted(maps.Keys(setLabels)) {
			if labels[key] != setLabels[key] {
				out = append(out, Violation{RuleServiceKept, objectName(cp), "label " + key + "=" + setLabels[key], "label " + key + "=" + labels[key]})
			}
		}
		spec, _, _ := unstructured.NestedMap(cp.Object, "spec")
		for _, key := range slices.Sorted(maps.Keys(setSpec)) {
			if !equality.Semantic.DeepEqual(spec[key], setSpec[key]) {
				out = append(out, Violation{RuleServiceKept, objectName(cp), "spec." + key + "=" + toJSON(setSpec[key]), "spec." + key + "=" + toJSON(spec[key])})
			}
		}
	}

	kcpSpec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	wantSpec := kcpSpec
	if r.Spec != nil {
		wantSpec = r.Spec(kcpSpec)
	}
	gotSpec, _, _ := unstructured.NestedMap(cp.Object, "spec")
	gotSpec = without(gotSpec, r.ServiceOnly)
	if !equality.Semantic.DeepEqual(emptyNil(wantSpec), emptyNil(gotSpec)) {
		out = append(out, Violation{RuleSpec, objectName(cp) + " (of " + k.String() + ")", toJSON(wantSpec), toJSON(gotSpec)})
	}
	if r.Status {
		kcpStatus, _, _ := unstructured.NestedMap(obj.Object, "status")
		localStatus, _, _ := unstructured.NestedMap(cp.Object, "status")
		if !equality.Semantic.DeepEqual(emptyNil(kcpStatus), emptyNil(localStatus)) {
			out = append(out, Violation{RuleStatus, k.String(), toJSON(localStatus), toJSON(kcpStatus)})
		}
	}
	return out
}

func (c *Checker) workspace(cluster string) ctrlruntimeclient.Reader {
	for _, ws := range c.Workspaces {
		if ws.Cluster == cluster {
			return ws.Client
		}
	}
	return nil
}
