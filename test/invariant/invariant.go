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
	"context"
	"crypto/sha1" //nolint:gosec // the contract fixes SHA-1 for the remote-object hash labels.
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
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
