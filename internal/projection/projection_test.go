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

package projection

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

type ver struct {
	name            string
	served, storage bool
}

func testCRD(versions ...ver) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "Thing", ListKind: "ThingList", Singular: "thing", Plural: "things",
				ShortNames: []string{"th"}, Categories: []string{"all"},
			},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for _, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v.name, Served: v.served, Storage: v.storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Description: v.name}},
		})
	}
	return crd
}

func pr(res syncagentv1alpha1.SourceResourceDescriptor, p *syncagentv1alpha1.ResourceProjection) *syncagentv1alpha1.PublishedResource {
	res.APIGroup, res.Kind = "example.com", "Thing"
	return &syncagentv1alpha1.PublishedResource{Spec: syncagentv1alpha1.PublishedResourceSpec{Resource: res, Projection: p}}
}

// summary is what the tests compare: versions in order with their flags,
// plus the names.
type summary struct {
	Name     string
	Group    string
	Scope    apiextensionsv1.ResourceScope
	Names    apiextensionsv1.CustomResourceDefinitionNames
	Versions []ver
}

func summarize(crd *apiextensionsv1.CustomResourceDefinition) summary {
	s := summary{Name: crd.Name, Group: crd.Spec.Group, Scope: crd.Spec.Scope, Names: crd.Spec.Names}
	for _, v := range crd.Spec.Versions {
		s.Versions = append(s.Versions, ver{v.Name, v.Served, v.Storage})
	}
	return s
}

var thingNames = apiextensionsv1.CustomResourceDefinitionNames{
	Kind: "Thing", ListKind: "ThingList", Singular: "thing", Plural: "things",
	ShortNames: []string{"th"}, Categories: []string{"all"},
}

func TestProject(t *testing.T) {
	v1 := ver{"v1", true, true}
	v2 := ver{"v2", true, false}
	v1beta1 := ver{"v1beta1", true, false}

	testcases := []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		pr         *syncagentv1alpha1.PublishedResource
		want       summary
		wantReason string
	}{
		{
			name: "no projection keeps everything",
			crd:  testCRD(v1beta1, v1),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{}, nil),
			want: summary{Name: "things.example.com", Group: "example.com", Scope: "Namespaced", Names: thingNames, Versions: []ver{v1beta1, v1}},
		},
		{
			name: "versions selects a subset, keeping CRD order and ignoring unknown versions",
			crd:  testCRD(v1beta1, v1, v2),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{Versions: []string{"v2", "v1beta1", "v9"}}, nil),
			// storage (v1) is not selected: the last served version (v2) becomes storage
			want: summary{Name: "things.example.com", Group: "example.com", Scope: "Namespaced", Names: thingNames, Versions: []ver{v1beta1, {"v2", true, true}}},
		},
		{
			name: "deprecated version selects one",
			crd:  testCRD(v1beta1, v1),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{Version: "v1beta1"}, nil),
			want: summary{Name: "things.example.com", Group: "example.com", Scope: "Namespaced", Names: thingNames, Versions: []ver{{"v1beta1", true, true}}},
		},
		{
			name: "storage goes to the last served version, not the last one",
			crd:  testCRD(ver{"v1alpha1", true, true}, v1beta1, ver{"v1", false, false}),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{Versions: []string{"v1beta1", "v1"}}, nil),
			want: summary{Name: "things.example.com", Group: "example.com", Scope: "Namespaced", Names: thingNames, Versions: []ver{{"v1beta1", true, true}, {"v1", false, false}}},
		},
		{
			name:       "none of the listed versions exists",
			crd:        testCRD(v1),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{Versions: []string{"v2"}}, nil),
			wantReason: syncagentv1alpha1.ReasonVersionSelectionFailed,
		},
		{
			name:       "deprecated version does not exist",
			crd:        testCRD(v1),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{Version: "v2"}, nil),
			wantReason: syncagentv1alpha1.ReasonVersionSelectionFailed,
		},
		{
			name:       "version and versions together",
			crd:        testCRD(v1),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{Version: "v1", Versions: []string{"v1"}}, nil),
			wantReason: syncagentv1alpha1.ReasonVersionSelectionFailed,
		},
		{
			name:       "no selected version is served",
			crd:        testCRD(ver{"v1", false, true}, v2),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{Versions: []string{"v1"}}, nil),
			wantReason: syncagentv1alpha1.ReasonVersionSelectionFailed,
		},
		{
			name: "deprecated single rename does not re-sort",
			crd:  testCRD(v1),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{}, &syncagentv1alpha1.ResourceProjection{Version: "v1alpha1"}),
			want: summary{Name: "things.example.com", Group: "example.com", Scope: "Namespaced", Names: thingNames, Versions: []ver{{"v1alpha1", true, true}}},
		},
		{
			name:       "deprecated single rename with two versions",
			crd:        testCRD(v1beta1, v1),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{}, &syncagentv1alpha1.ResourceProjection{Version: "v3"}),
			wantReason: syncagentv1alpha1.ReasonInvalidProjection,
		},
		{
			name: "version map renames and sorts in Kubernetes version order",
			crd:  testCRD(ver{"v2", true, false}, ver{"v1", true, true}, ver{"v3", true, false}),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{}, &syncagentv1alpha1.ResourceProjection{Versions: map[string]string{"v2": "v1beta1", "v3": "v1alpha1"}}),
			want: summary{Name: "things.example.com", Group: "example.com", Scope: "Namespaced", Names: thingNames, Versions: []ver{{"v1alpha1", true, false}, {"v1beta1", true, false}, {"v1", true, true}}},
		},
		{
			name:       "version map with duplicates",
			crd:        testCRD(v1beta1, v1),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{}, &syncagentv1alpha1.ResourceProjection{Versions: map[string]string{"v1beta1": "v1"}}),
			wantReason: syncagentv1alpha1.ReasonInvalidProjection,
		},
		{
			name: "full projection of names and scope",
			crd:  testCRD(v1),
			pr: pr(syncagentv1alpha1.SourceResourceDescriptor{}, &syncagentv1alpha1.ResourceProjection{
				Group: "kcp.example.com", Kind: "Widget", Scope: syncagentv1alpha1.ClusterScoped,
				ShortNames: []string{"wd", "wdg"}, Categories: []string{"gadgets"},
			}),
			want: summary{Name: "widgets.kcp.example.com", Group: "kcp.example.com", Scope: "Cluster", Versions: []ver{v1},
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Singular: "widget", Plural: "widgets", ShortNames: []string{"wd", "wdg"}, Categories: []string{"gadgets"}}},
		},
		{
			name: "explicit plural after kind; empty lists remove short names and categories",
			crd:  testCRD(v1),
			pr: pr(syncagentv1alpha1.SourceResourceDescriptor{}, &syncagentv1alpha1.ResourceProjection{
				Kind: "Mouse", Plural: "mice", ShortNames: []string{}, Categories: []string{},
			}),
			want: summary{Name: "mice.example.com", Group: "example.com", Scope: "Namespaced", Versions: []ver{v1},
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Mouse", ListKind: "MouseList", Singular: "mouse", Plural: "mice", ShortNames: []string{}, Categories: []string{}}},
		},
		{
			name: "protected group without projection",
			crd: func() *apiextensionsv1.CustomResourceDefinition {
				c := testCRD(v1)
				c.Spec.Group = "rbac.authorization.k8s.io"
				return c
			}(),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{}, nil),
			wantReason: syncagentv1alpha1.ReasonProtectedGroup,
		},
		{
			name:       "projection into a protected group",
			crd:        testCRD(v1),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{}, &syncagentv1alpha1.ResourceProjection{Group: "apps.kubernetes.io"}),
			wantReason: syncagentv1alpha1.ReasonProtectedGroup,
		},
		{
			name:       "core group",
			crd:        func() *apiextensionsv1.CustomResourceDefinition { c := testCRD(v1); c.Spec.Group = ""; return c }(),
			pr:         pr(syncagentv1alpha1.SourceResourceDescriptor{}, nil),
			wantReason: syncagentv1alpha1.ReasonProtectedGroup,
		},
	}

	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.crd.DeepCopy()
			got, err := Project(tc.crd, tc.pr)
			if diff := cmp.Diff(before, tc.crd); diff != "" {
				t.Errorf("Project modified its input:\n%s", diff)
			}

			if tc.wantReason != "" {
				var perr *Error
				if !errors.As(err, &perr) || perr.Reason != tc.wantReason {
					t.Fatalf("err = %v, want a projection error with reason %s", err, tc.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, summarize(got), cmp.AllowUnexported(ver{})); diff != "" {
				t.Errorf("projected CRD (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGVK(t *testing.T) {
	crd := testCRD(ver{"v1beta1", true, false}, ver{"v1", true, true})
	if got := GVK(crd).String(); got != "example.com/v1, Kind=Thing" {
		t.Errorf("GVK = %s", got)
	}
}
