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

package export

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func res(group, resource, schemaName string) kcpapisv1alpha2.ResourceSchema {
	return kcpapisv1alpha2.ResourceSchema{Group: group, Name: resource, Schema: schemaName,
		Storage: kcpapisv1alpha2.ResourceSchemaStorage{CRD: &kcpapisv1alpha2.ResourceSchemaStorageCRD{}}}
}

func TestMergeResources(t *testing.T) {
	testcases := []struct {
		name        string
		existing    []kcpapisv1alpha2.ResourceSchema
		ready       []string
		want        []kcpapisv1alpha2.ResourceSchema
		wantAdded   []string
		wantRemoved []string
	}{
		{
			name:      "empty export gets the ready schemas, sorted by resource.group",
			ready:     []string{"v2.things.b.io", "v1.apples.b.io", "v3.things.a.io"},
			want:      []kcpapisv1alpha2.ResourceSchema{res("b.io", "apples", "v1.apples.b.io"), res("a.io", "things", "v3.things.a.io"), res("b.io", "things", "v2.things.b.io")},
			wantAdded: []string{"v1.apples.b.io", "v2.things.b.io", "v3.things.a.io"},
		},
		{
			name:        "a new schema replaces the old one of the same group/resource; foreign entries stay",
			existing:    []kcpapisv1alpha2.ResourceSchema{res("admin.io", "foreign", "vx.foreign.admin.io"), res("a.io", "things", "vold.things.a.io"), res("a.io", "deleted", "vd.deleted.a.io")},
			ready:       []string{"vnew.things.a.io"},
			want:        []kcpapisv1alpha2.ResourceSchema{res("a.io", "deleted", "vd.deleted.a.io"), res("admin.io", "foreign", "vx.foreign.admin.io"), res("a.io", "things", "vnew.things.a.io")},
			wantAdded:   []string{"vnew.things.a.io"},
			wantRemoved: []string{"vold.things.a.io"},
		},
		{
			name:     "nothing changes when the schema is already there",
			existing: []kcpapisv1alpha2.ResourceSchema{res("a.io", "things", "v1.things.a.io")},
			ready:    []string{"v1.things.a.io"},
			want:     []kcpapisv1alpha2.ResourceSchema{res("a.io", "things", "v1.things.a.io")},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got, added, removed := MergeResources(tc.existing, tc.ready)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAdded, added); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemoved, removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequiredClaims(t *testing.T) {
	related := func(rel ...syncagentv1alpha1.RelatedResourceSpec) syncagentv1alpha1.PublishedResource {
		return syncagentv1alpha1.PublishedResource{Spec: syncagentv1alpha1.PublishedResourceSpec{Related: rel}}
	}
	testcases := []struct {
		name      string
		prs       []syncagentv1alpha1.PublishedResource
		exportGRs []schema.GroupResource
		want      []Claim
	}{
		{name: "events always", want: []Claim{{Resource: "events"}}},
		{
			name: "namespace filter and workspace paths",
			prs: []syncagentv1alpha1.PublishedResource{{Spec: syncagentv1alpha1.PublishedResourceSpec{
				Filter: &syncagentv1alpha1.ResourceFilter{Namespace: &metav1.LabelSelector{}}, EnableWorkspacePaths: true,
			}}},
			want: []Claim{{Resource: "events"}, {Resource: "namespaces"}, {Group: "core.kcp.io", Resource: "logicalclusters"}},
		},
		{
			name: "related resources: legacy kind, kcp origin GVR with identity, service origin projected, own type left out",
			prs: []syncagentv1alpha1.PublishedResource{
				related(syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Kind: "Secret"}),
				related(
					syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Group: "other.io", Version: "v1", Resource: "certs", IdentityHash: "abc"},
					syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Version: "v1", Resource: "configmaps", Projection: &syncagentv1alpha1.RelatedResourceProjection{Resource: "secrets"}},
					syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Group: "mine.io", Version: "v1", Resource: "things"},
				),
			},
			exportGRs: []schema.GroupResource{{Group: "mine.io", Resource: "things"}},
			want:      []Claim{{Resource: "events"}, {Resource: "namespaces"}, {Resource: "secrets"}, {Group: "other.io", Resource: "certs", IdentityHash: "abc"}},
		},
		{
			name: "a non-built-in type without identity is this export's own, even before it is exported; built-in groups are claimed",
			prs: []syncagentv1alpha1.PublishedResource{related(
				syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Group: "example.com", Version: "v1", Resource: "gadgets", Projection: &syncagentv1alpha1.RelatedResourceProjection{Group: "kcp.example.com"}},
				syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Group: "apps", Version: "v1", Resource: "deployments"},
				syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
			)},
			want: []Claim{{Resource: "events"}, {Resource: "namespaces"}, {Group: "apps", Resource: "deployments"}, {Group: "rbac.authorization.k8s.io", Resource: "roles"}},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got := RequiredClaims(tc.prs, sets.New(tc.exportGRs...))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeClaims(t *testing.T) {
	claim := func(group, resource string, verbs ...string) kcpapisv1alpha2.PermissionClaim {
		return kcpapisv1alpha2.PermissionClaim{GroupResource: kcpapisv1alpha2.GroupResource{Group: group, Resource: resource}, Verbs: verbs}
	}
	existing := []kcpapisv1alpha2.PermissionClaim{
		claim("z.io", "admins", "get"),         // admin claim: kept as it is
		claim("", "namespaces", "get", "list"), // restricted admin claim for a required GR: counts as present
	}
	required := []Claim{{Resource: "events"}, {Resource: "namespaces"}, {Group: "a.io", Resource: "things", IdentityHash: "h"}}

	got, added := MergeClaims(existing, required)
	want := []kcpapisv1alpha2.PermissionClaim{
		claim("", "events", "*"),
		claim("", "namespaces", "get", "list"),
		{GroupResource: kcpapisv1alpha2.GroupResource{Group: "a.io", Resource: "things"}, IdentityHash: "h", Verbs: []string{"*"}},
		claim("z.io", "admins", "get"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Claim{{Resource: "events"}, {Group: "a.io", Resource: "things", IdentityHash: "h"}}, added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	if len(existing) != 2 || existing[0].Resource != "admins" {
		t.Error("MergeClaims modified its input")
	}
	if again, added := MergeClaims(got, required); len(added) != 0 || !cmp.Equal(again, got) {
		t.Errorf("a second merge must be a no-op, added %v", added)
	}
}

func TestV1alpha1Claims(t *testing.T) {
	claim := func(group, resource, identity string, verbs ...string) kcpapisv1alpha2.PermissionClaim {
		return kcpapisv1alpha2.PermissionClaim{GroupResource: kcpapisv1alpha2.GroupResource{Group: group, Resource: resource}, IdentityHash: identity, Verbs: verbs}
	}
	claims := []kcpapisv1alpha2.PermissionClaim{
		claim("", "configmaps", "", "*"),   // an admin's v1alpha1 selector entry may describe it
		claim("", "events", "", "*"),       // ours, not described yet
		claim("", "namespaces", "", "get"), // restricted admin claim: a v1alpha1 reader sees it in the overhang
		claim("a.io", "things", "h", "*"),  // ours, with an identity
		claim("b.io", "others", "x", "*"),  // an admin's, same group/resource as a required claim, other identity
		claim("z.io", "admins", "", "*"),   // not required: an admin's, never described by us
		claim("core.kcp.io", "logicalclusters", "", "*"),
	}
	required := []Claim{{Resource: "configmaps"}, {Resource: "events"}, {Resource: "namespaces"}, {Group: "a.io", Resource: "things", IdentityHash: "h"},
		{Group: "b.io", Resource: "others", IdentityHash: "y"}, {Group: "core.kcp.io", Resource: "logicalclusters"}}
	const (
		configmaps = `{"resource":"configmaps","all":true}`
		events     = `{"resource":"events","all":true}`
		things     = `{"group":"a.io","resource":"things","all":true,"identityHash":"h"}`
		lcs        = `{"group":"core.kcp.io","resource":"logicalclusters","all":true}`
	)

	testcases := []struct {
		name, current, want string
		wantChanged         bool
		wantErr             bool
	}{
		{
			name:        "no annotation yet: every required all-verbs claim is described as all objects",
			want:        "[" + configmaps + "," + events + "," + things + "," + lcs + "]",
			wantChanged: true,
		},
		{
			name:        "an empty list or null holds nothing to keep",
			current:     " null ",
			want:        "[" + configmaps + "," + events + "," + things + "," + lcs + "]",
			wantChanged: true,
		},
		{
			name:        "an admin's entries keep their text, missing ones are appended",
			current:     `[ {"resource": "configmaps", "resourceSelector": [{"namespace": "team"}]},` + "\n" + ` {"group":"core.kcp.io","resource":"logicalclusters","all":true} ]`,
			want:        `[ {"resource": "configmaps", "resourceSelector": [{"namespace": "team"}]},` + "\n" + ` {"group":"core.kcp.io","resource":"logicalclusters","all":true},` + events + "," + things + "]",
			wantChanged: true,
		},
		{
			name:    "everything described: unchanged",
			current: "[" + configmaps + "," + events + "," + things + "," + lcs + "]",
			want:    "[" + configmaps + "," + events + "," + things + "," + lcs + "]",
		},
		{
			name:        "an entry that says neither all nor selector does not describe the claim: a valid one is appended (kcp applies the last)",
			current:     `[{"resource":"events"},` + configmaps + "," + things + "," + lcs + "]",
			want:        `[{"resource":"events"},` + configmaps + "," + things + "," + lcs + "," + events + "]",
			wantChanged: true,
		},
		{
			name:        "the last entry for a claim decides: a valid one followed by one that says neither is repaired",
			current:     "[" + configmaps + "," + events + `,{"resource":"events"},` + things + "," + lcs + "]",
			want:        "[" + configmaps + "," + events + `,{"resource":"events"},` + things + "," + lcs + "," + events + "]",
			wantChanged: true,
		},
		{
			name:        "an entry for another identity does not describe the claim",
			current:     "[" + configmaps + "," + events + `,{"group":"a.io","resource":"things","all":true,"identityHash":"other"},` + lcs + "]",
			want:        "[" + configmaps + "," + events + `,{"group":"a.io","resource":"things","all":true,"identityHash":"other"},` + lcs + "," + things + "]",
			wantChanged: true,
		},
		{name: "not a list", current: `{"resource":"events"}`, wantErr: true},
		{name: "not claims", current: `["events"]`, wantErr: true},
		{name: "a field of the wrong type", current: `[{"resource":"events","all":"true"}]`, wantErr: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := V1alpha1Claims(tc.current, claims, required)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || changed != tc.wantChanged {
				t.Errorf("got  %s (changed %v)\nwant %s (changed %v)", got, changed, tc.want, tc.wantChanged)
			}
			var parsed []kcpapisv1alpha1.PermissionClaim
			if err := json.Unmarshal([]byte(got), &parsed); err != nil {
				t.Errorf("the result is no list of claims: %v", err)
			}
		})
	}
}
