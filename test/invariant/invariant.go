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

// Package invariant checks that kcp and the service cluster agree, as the
// contract says they must once the agent has converged. It reads both sides
// with the clients it is given (admin rights, never the agent's), knows the
// contract's metadata by value (not from the agent's code, which it checks),
// and reports every violation with the object, the expected and the seen
// state. The soak (issue 14) runs it after quiescence; any e2e test can.
package invariant

import (
	"cmp"
	"context"
	"crypto/sha1" //nolint:gosec // the contract fixes SHA-1 for the remote-object hash labels.
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// The contract's metadata (§4.1, §4.3, §5).
const (
	labelCluster       = "syncagent.kcp.io/remote-object-cluster"
	labelNameHash      = "syncagent.kcp.io/remote-object-name-hash"
	labelNamespaceHash = "syncagent.kcp.io/remote-object-namespace-hash"
	labelAgent         = "syncagent.kcp.io/agent-name"
	labelState         = "syncagent.kcp.io/object-state"
	labelRelated       = "syncagent.kcp.io/related-identifier"
	annotationName     = "syncagent.kcp.io/remote-object-name"
	annotationNS       = "syncagent.kcp.io/remote-object-namespace"
)

// Workspace is a consumer workspace: its logical cluster name and a client
// into it.
type Workspace struct {
	Cluster string
	Client  ctrlruntimeclient.Reader
}

// Resource is what one PublishedResource promises.
type Resource struct {
	// Name of the PublishedResource, for reports.
	Name string
	// Kcp and Local are the types on each side; KcpNamespaced tells
	// whether kcp objects live in namespaces.
	Kcp, Local    schema.GroupVersionKind
	KcpNamespaced bool
	// Status: the type has a status subresource, so kcp's status must
	// equal the local copy's.
	Status bool
	// Spec maps a kcp object's spec to the spec its local copy must carry
	// (the PublishedResource's spec mutations); nil: the same spec.
	Spec func(kcp map[string]any) map[string]any
	// ServiceOnly are the spec fields that the service side sets on local
	// copies and kcp never has; they are left out of the comparison.
	ServiceOnly []string
	// Selected tells whether the PublishedResource syncs a kcp object (its
	// filters); nil: every object. An object left out that still carries
	// our finalizer was synced before: it keeps its copy (which is no
	// longer compared) and the finalizer (contract §6.9).
	Selected func(kcp *unstructured.Unstructured) bool
	// Related are related Secrets named by a template
	// `{{ .Object.metadata.name }}<Suffix>` on each side.
	Related []RelatedSecret
	// CopiedLabels are kcp label keys that the local copy must carry with
	// kcp's value, or not at all when the kcp object has none.
	CopiedLabels []string
	// Service tells what the service side set on a local copy that the
	// sync must leave alone: labels, and values of ServiceOnly spec fields.
	// nil: nothing.
	Service func(cp *unstructured.Unstructured) (labels map[string]string, spec map[string]any)
	// Kept are kcp objects whose local copy, state and related copies may
	// outlive them: they were deleted while their PublishedResource was
	// deleted, which releases objects and keeps copies (contract §6.7).
	Kept map[Key]bool
	// Conditions: the PublishedResource Name must say that it syncs
	// (Ready=True, SyncReady=True/Running).
	Conditions bool
	// CopyNamespace tells whether a service-cluster namespace may hold
	// this resource's kcp-origin related copies; nil: any. It scopes only
	// the search for stale related copies: another agent that reads the
	// same sources writes copies with the same labels into its own
	// namespaces.
	CopyNamespace func(namespace string) bool
	// Released: no running controller of the agent selects the
	// PublishedResource (it was deleted, or the agent's selector leaves it
	// out), so none of its kcp objects, nor their kcp-origin related
	// sources, may carry a finalizer of the agent; their copies and state
	// stay (a release leaves them, contract §7 #14) and are not compared.
	Released bool
}

// Key names a kcp object; Namespace is empty for cluster-scoped ones.
type Key struct {
	Cluster, Namespace, Name string
}

// RelatedSecret is a related Secret entry of a namespaced primary. Origin
// kcp (the default): the source in kcp is "<primary name><Suffix>" in the
// primary's namespace and its copy is "<local copy name><Suffix>" next to
// the local copy. Origin service: the other way round; a service-origin
// copy in kcp stays when its source goes (contract §6.13), so only sources
// are checked.
type RelatedSecret struct {
	// Suffix is not empty.
	Suffix string
	Origin string
	// Label (required for origin kcp) is a label key that the test puts on
	// every source. Copies carry their source's labels (contract §4.3) and
	// nothing else tells them apart, so stale copies are found by it, in
	// every namespace of the service cluster.
	Label string
}

// OriginService is RelatedSecret.Origin for service-origin entries.
const OriginService = "service"

// Checker compares the workspaces with the service cluster.
type Checker struct {
	// Service reads the service cluster.
	Service ctrlruntimeclient.Reader
	// AgentName and AgentNamespace are the agent's name and the namespace
	// of its state Secrets.
	AgentName, AgentNamespace string
	// Partitions are the agent's partitions: each reports its own
	// SyncReady.<partition> condition, and none the unpartitioned one.
	Partitions []string
	// Workspaces are every workspace that binds the export: objects of any
	// other logical cluster are orphans.
	Workspaces []Workspace
	Resources  []Resource
	// CreatedNamespaces: the agent deletes the namespaces it created for
	// workspaces that are gone once they are empty (RuleGoneNamespace).
	CreatedNamespaces bool
	// Gone are workspaces that bound the export and no longer do: the
	// copies and state of their Kept objects stay (nothing removes them
	// without --sweep-unbound-workspaces), nothing else of theirs may, and
	// none of their Secrets may carry the agent's finalizer.
	Gone []Workspace

	// secrets holds the Secrets listed during one Check, by side ("" for
	// the service cluster, else the workspace) and namespace: one list per
	// namespace instead of a read per related object.
	secrets map[[2]string]map[string]*unstructured.Unstructured
	// sources are the kcp-origin related sources that may carry our
	// finalizer: those named by a primary that may have a copy.
	sources map[Key]bool
}

// Violation is one broken invariant.
type Violation struct {
	// Rule names the invariant, Object the object ("cluster|namespace/name"
	// for kcp objects, "namespace/name" on the service cluster).
	Rule, Object   string
	Expected, Seen string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s: expected %s, seen %s", v.Rule, v.Object, v.Expected, v.Seen)
}

// The rules.
const (
	RuleOneCopy          = "one-local-copy"
	RuleSpec             = "spec-down"
	RuleSyncLabels       = "sync-labels"
	RuleStatus           = "status-up"
	RuleFinalizer        = "finalizer"
	RuleStuckDeletion    = "no-stuck-deletion"
	RuleOrphanCopy       = "no-orphan-copy"
	RuleOrphanState      = "no-orphan-state"
	RuleUnknownWorkspace = "no-unknown-workspace"
	RuleRelatedCopy      = "related-copy"
	RuleRelatedStale     = "no-stale-related-copy"
	RuleServiceKept      = "service-fields-kept"
	RuleConditions       = "conditions-true"
	RuleNoController     = "no-finalizer-without-controller"
)

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Cluster + "|" + k.Name
	}
	return k.Cluster + "|" + k.Namespace + "/" + k.Name
}

// Check reads both sides and returns every violation, sorted by rule and
// object. An error means a side could not be read (nothing was decided).
func (c *Checker) Check(ctx context.Context) ([]Violation, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.secrets = map[[2]string]map[string]*unstructured.Unstructured{}
	c.sources = map[Key]bool{}
	var out []Violation
	// State Secrets name their primary by labels (hashes) and, for a
	// primary's own state, by a name that includes its kind.
	statePrimaries := map[string]bool{}
	for _, r := range c.Resources {
		vs, hashes, err := c.checkResource(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
		for h := range hashes {
			statePrimaries[h] = true
		}
	}
	vs, err := c.checkConditions(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, vs...)
	vs, err = c.checkSourceFinalizers(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, vs...)
	vs, err = c.checkState(ctx, statePrimaries)
	if err != nil {
		return nil, err
	}
	out = append(out, vs...)
	vs, err = c.checkGoneWorkspaces(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, vs...)
	if c.CreatedNamespaces {
		vs, err = c.checkCreatedNamespaces(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		return out[i].Object < out[j].Object
	})
	return out, nil
}

// validate refuses configurations the checker would judge wrongly.
func (c *Checker) validate() error {
	labels := map[string]bool{}
	for _, r := range c.Resources {
		if len(r.Related) > 0 && !r.KcpNamespaced {
			return fmt.Errorf("resource %s: related Secrets are checked in the primary's namespace; %s is cluster-scoped", r.Name, r.Kcp.Kind)
		}
		for _, rel := range r.Related {
			if rel.Suffix == "" {
				return fmt.Errorf("resource %s: a related entry without a suffix would match every Secret", r.Name)
			}
			if rel.Origin != OriginService && rel.Label == "" {
				return fmt.Errorf("resource %s: related entry %q of origin kcp needs the label its sources carry", r.Name, rel.Suffix)
			}
			if rel.Label != "" && labels[rel.Label] {
				return fmt.Errorf("resource %s: label %s names the copies of another related entry too", r.Name, rel.Label)
			}
			labels[rel.Label] = true
		}
	}
	return nil
}

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

// checkConditions reports PublishedResources that do not say they sync
// (Resource.Conditions).
func (c *Checker) checkConditions(ctx context.Context) ([]Violation, error) {
	var out []Violation
	for _, r := range c.Resources {
		if !r.Conditions {
			continue
		}
		pr := &unstructured.Unstructured{}
		pr.SetGroupVersionKind(schema.GroupVersionKind{Group: "syncagent.kcp.io", Version: "v1alpha1", Kind: "PublishedResource"})
		if err := c.Service.Get(ctx, ctrlruntimeclient.ObjectKey{Name: r.Name}, pr); err != nil {
			return nil, fmt.Errorf("failed to get PublishedResource %s: %w", r.Name, err)
		}
		conditions, _, _ := unstructured.NestedSlice(pr.Object, "status", "conditions")
		seen := map[string]string{}
		for _, item := range conditions {
			cond, _ := item.(map[string]any)
			t, _ := cond["type"].(string)
			status, _ := cond["status"].(string)
			reason, _ := cond["reason"].(string)
			seen[t] = status + "/" + reason
		}
		wants := [][2]string{{"Ready", "True"}, {"SyncReady", "True/Running"}}
		if len(c.Partitions) > 0 {
			wants = wants[:1]
			for _, p := range c.Partitions {
				wants = append(wants, [2]string{"SyncReady." + p, "True/Running"})
			}
			if got, found := seen["SyncReady"]; found {
				out = append(out, Violation{RuleConditions, "PublishedResource " + r.Name, "no SyncReady beside SyncReady.<partition>", "SyncReady=" + got})
			}
		}
		for _, want := range wants {
			if got := seen[want[0]]; got != want[1] && !strings.HasPrefix(got, want[1]+"/") {
				out = append(out, Violation{RuleConditions, "PublishedResource " + r.Name, want[0] + "=" + want[1], want[0] + "=" + got})
			}
		}
	}
	return out, nil
}

// checkState reports state Secrets of this agent whose primary is not a
// live kcp object of any checked resource.
func (c *Checker) checkState(ctx context.Context, live map[string]bool) ([]Violation, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "SecretList"})
	if err := c.Service.List(ctx, list, ctrlruntimeclient.InNamespace(c.AgentNamespace), ctrlruntimeclient.MatchingLabels{labelState: "true"}); err != nil {
		return nil, fmt.Errorf("failed to list the state Secrets: %w", err)
	}
	var out []Violation
	for i := range list.Items {
		s := &list.Items[i]
		l := s.GetLabels()
		if owner := l[labelAgent]; owner != "" && owner != c.AgentName {
			continue
		}
		key := l[labelCluster] + "|" + l[labelNameHash] + "|" + l[labelNamespaceHash]
		if _, related := l[labelRelated]; !related {
			key = s.GetName() // a primary's own state: its name says which kind
		}
		if !live[key] {
			out = append(out, Violation{RuleOrphanState, objectName(s), "no state without a live kcp object", "a state Secret of cluster " + l[labelCluster]})
		}
	}
	return out, nil
}

func stateKey(k Key) string {
	ns := ""
	if k.Namespace != "" {
		ns = hash(k.Namespace)
	}
	return k.Cluster + "|" + hash(k.Name) + "|" + ns
}

func hash(s string) string {
	sum := sha1.Sum([]byte(s)) //nolint:gosec // see import.
	return hex.EncodeToString(sum[:])
}

func objectName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func names(objs []*unstructured.Unstructured) string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, objectName(o))
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

func without(m map[string]any, keys []string) map[string]any {
	if len(keys) == 0 || m == nil {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}

// emptyNil treats a missing and an empty map alike.
func emptyNil(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func sortedKeys[K interface {
	comparable
	String() string
}, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
