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

// Package export computes the APIExport's resource schemas and permission
// claims from the selected PublishedResources (contract §3.5, §3.6). It is
// pure; the apiexport controller reads and writes the objects.
//
// kcp 0.28 stores APIExports as apis.kcp.io/v1alpha2, so this package works
// on v1alpha2: spec.resources (one entry per group/resource, naming the
// schema) and spec.permissionClaims (keyed by group and resource).
package export

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// ResourceGR returns the group/resource of an export entry.
func ResourceGR(r kcpapisv1alpha2.ResourceSchema) schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Name}
}

// MergeResources returns the export's new resource list: one entry per
// ready schema (replacing any entry of the same group/resource), plus every
// existing entry of another group/resource (admin entries, schemas of
// deleted PublishedResources). The result is sorted by "resource.group",
// ties by schema name. added and removed name the schemas that enter or
// leave the list.
func MergeResources(existing []kcpapisv1alpha2.ResourceSchema, ready []string) (result []kcpapisv1alpha2.ResourceSchema, added, removed []string) {
	ours := map[schema.GroupResource]string{}
	for _, name := range ready {
		if gr, ok := projection.SchemaGroupResource(name); ok {
			ours[gr] = name
		}
	}
	have := sets.New[string]()
	for _, e := range existing {
		have.Insert(e.Schema)
		if replacement, ok := ours[ResourceGR(e)]; ok {
			if replacement != e.Schema {
				removed = append(removed, e.Schema)
			}
			continue
		}
		result = append(result, e)
	}
	for gr, name := range ours {
		result = append(result, kcpapisv1alpha2.ResourceSchema{
			Name: gr.Resource, Group: gr.Group, Schema: name,
			Storage: kcpapisv1alpha2.ResourceSchemaStorage{CRD: &kcpapisv1alpha2.ResourceSchemaStorageCRD{}},
		})
		if !have.Has(name) {
			added = append(added, name)
		}
	}
	slices.SortFunc(result, func(a, b kcpapisv1alpha2.ResourceSchema) int {
		return cmp.Or(cmp.Compare(ResourceGR(a).String(), ResourceGR(b).String()), cmp.Compare(a.Schema, b.Schema))
	})
	slices.Sort(added)
	slices.Sort(removed)
	return result, added, removed
}

// Claim identifies a permission claim.
type Claim struct {
	Group, Resource, IdentityHash string
}

// RequiredClaims returns the claims the PublishedResources need, sorted:
// events always; namespaces with a namespace filter or related resources;
// logicalclusters with workspace paths; the kcp-side type of each related
// resource unless the export itself provides it (exportGRs).
func RequiredClaims(prs []syncagentv1alpha1.PublishedResource, exportGRs sets.Set[schema.GroupResource]) []Claim {
	claims := sets.New(Claim{Resource: "events"})
	for _, pr := range prs {
		if (pr.Spec.Filter != nil && pr.Spec.Filter.Namespace != nil) || len(pr.Spec.Related) > 0 {
			claims.Insert(Claim{Resource: "namespaces"})
		}
		if pr.Spec.EnableWorkspacePaths {
			claims.Insert(Claim{Group: "core.kcp.io", Resource: "logicalclusters"})
		}
		for _, rel := range pr.Spec.Related {
			gr := KcpSideGR(rel)
			// A type that is neither built in nor claimed by identity can only
			// be one of this export's own (kcp rejects such claims), possibly
			// not exported yet.
			if !exportGRs.Has(gr) && (rel.IdentityHash != "" || builtInGroup(gr.Group)) {
				claims.Insert(Claim{Group: gr.Group, Resource: gr.Resource, IdentityHash: rel.IdentityHash})
			}
		}
	}
	result := claims.UnsortedList()
	slices.SortFunc(result, func(a, b Claim) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.IdentityHash, b.IdentityHash))
	})
	return result
}

// KcpSideGR is the group/resource of a related resource in kcp: the origin
// type for kcp-origin entries, the projected type for service-origin ones.
func KcpSideGR(rel syncagentv1alpha1.RelatedResourceSpec) schema.GroupResource {
	kcp, _ := related.GVRs(&rel)
	return kcp.GroupResource()
}

// builtInGroup reports whether group holds Kubernetes built-in types: the
// core group, groups without a dot (apps, batch, ...) and *.k8s.io.
func builtInGroup(group string) bool {
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// MergeClaims appends the required claims that are missing as claims for all
// verbs and never removes or changes existing ones (an admin's claim for the
// same group/resource counts as present: claims are keyed by group and
// resource). The result is sorted by group, then resource (stable).
func MergeClaims(existing []kcpapisv1alpha2.PermissionClaim, required []Claim) (result []kcpapisv1alpha2.PermissionClaim, added []Claim) {
	present := sets.New[schema.GroupResource]()
	for _, c := range existing {
		present.Insert(schema.GroupResource{Group: c.Group, Resource: c.Resource})
	}
	result = slices.Clone(existing)
	for _, c := range required {
		if present.Has(schema.GroupResource{Group: c.Group, Resource: c.Resource}) {
			continue
		}
		result = append(result, kcpapisv1alpha2.PermissionClaim{
			GroupResource: kcpapisv1alpha2.GroupResource{Group: c.Group, Resource: c.Resource},
			IdentityHash:  c.IdentityHash,
			Verbs:         []string{"*"},
		})
		added = append(added, c)
	}
	slices.SortStableFunc(result, func(a, b kcpapisv1alpha2.PermissionClaim) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	return result, added
}

// MissingClaims returns the required claims that claims does not contain.
func MissingClaims(claims []kcpapisv1alpha2.PermissionClaim, required []Claim) []Claim {
	_, missing := MergeClaims(claims, required)
	return missing
}

// V1alpha1ClaimsAnnotation is where kcp keeps, on a v1alpha2 APIExport, the
// "all" and "resourceSelector" fields that v1alpha1 readers see on each
// claim (v1alpha2 has neither). A claim written through v1alpha2 that has no
// entry there reads in v1alpha1 as neither "all" nor selector-based, which
// v1alpha1 APIBindings that copy it cannot accept.
const V1alpha1ClaimsAnnotation = kcpapisv1alpha2.PermissionClaimsV1Alpha1Annotation

// V1alpha1Claims returns the new value of the V1alpha1ClaimsAnnotation
// (current is its value): every claim of the export that is required (same
// group, resource and identity) and grants all verbs, but has no entry that
// makes it a valid v1alpha1 claim ("all" or a selector), gets an entry that
// says "all objects", so that it reads back as {group, resource, all: true,
// identityHash} through v1alpha1, as the reference's claims do. The text of
// the existing entries is kept as it is and new ones are appended (kcp
// applies the entries in order, so the last one for a claim decides, and an
// appended entry also repairs earlier ones that say neither). Entries that make a claim valid, selectors
// included, are never overridden. changed is false when nothing was added;
// an error means the current value is no list of claims.
func V1alpha1Claims(current string, claims []kcpapisv1alpha2.PermissionClaim, required []Claim) (value string, changed bool, err error) {
	var described []kcpapisv1alpha1.PermissionClaim
	if strings.TrimSpace(current) != "" {
		if err := json.Unmarshal([]byte(current), &described); err != nil {
			return "", false, fmt.Errorf("annotation %s is not a list of permission claims: %w", V1alpha1ClaimsAnnotation, err)
		}
	}
	empty := len(described) == 0 // also "null" and "[]": nothing to keep
	valid := func(e kcpapisv1alpha1.PermissionClaim) bool { return e.All || len(e.ResourceSelector) > 0 }
	var added []string
	for _, c := range claims {
		if !slices.Contains(required, Claim{Group: c.Group, Resource: c.Resource, IdentityHash: c.IdentityHash}) || !slices.Equal(c.Verbs, []string{"*"}) {
			continue
		}
		entry := kcpapisv1alpha1.PermissionClaim{
			GroupResource: kcpapisv1alpha1.GroupResource{Group: c.Group, Resource: c.Resource},
			All:           true,
			IdentityHash:  c.IdentityHash,
		}
		// kcp applies every matching entry in order, so the last one counts.
		if i := lastIndexFunc(described, entry.EqualGRI); i >= 0 && valid(described[i]) {
			continue
		}
		raw, err := json.Marshal(entry)
		if err != nil {
			return "", false, err
		}
		added = append(added, string(raw))
		described = append(described, entry)
	}
	if len(added) == 0 {
		return current, false, nil
	}
	// Append to the list's text: strip the closing bracket (the list was
	// parsed above, so it ends with one) and add the entries.
	head := strings.TrimSpace(current)
	if empty {
		head = "["
	} else {
		head = strings.TrimSpace(strings.TrimSuffix(head, "]"))
		if head != "[" {
			head += ","
		}
	}
	return head + strings.Join(added, ",") + "]", true, nil
}

// lastIndexFunc is the index of the last element of s that satisfies f, or -1.
func lastIndexFunc[T any](s []T, f func(T) bool) int {
	for i := len(s) - 1; i >= 0; i-- {
		if f(s[i]) {
			return i
		}
	}
	return -1
}
