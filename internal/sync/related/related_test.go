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

package related

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestGVRs(t *testing.T) {
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	certs := schema.GroupVersionResource{Group: "cert.example.com", Version: "v1", Resource: "certificates"}

	testcases := []struct {
		name        string
		rel         syncagentv1alpha1.RelatedResourceSpec
		wantKcp     schema.GroupVersionResource
		wantService schema.GroupVersionResource
	}{
		{
			name:    "kind ConfigMap, origin kcp",
			rel:     syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Kind: "ConfigMap"},
			wantKcp: configMaps, wantService: configMaps,
		},
		{
			name:    "kind Secret, origin service",
			rel:     syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Kind: "Secret"},
			wantKcp: secrets, wantService: secrets,
		},
		{
			name: "kind Secret with a projected resource, origin service: kcp gets the projection",
			rel: syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Kind: "Secret",
				Projection: &syncagentv1alpha1.RelatedResourceProjection{Resource: "credentials"}},
			wantKcp:     schema.GroupVersionResource{Version: "v1", Resource: "credentials"},
			wantService: secrets,
		},
		{
			name:    "g/v/r form without projection, origin kcp",
			rel:     syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Group: "cert.example.com", Version: "v1", Resource: "certificates"},
			wantKcp: certs, wantService: certs,
		},
		{
			name:    "core g/v/r form, origin service",
			rel:     syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Version: "v1", Resource: "configmaps"},
			wantKcp: configMaps, wantService: configMaps,
		},
		{
			name: "projection of the group only, origin service: version and resource are kept",
			rel: syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Group: "cert.example.com", Version: "v1", Resource: "certificates",
				Projection: &syncagentv1alpha1.RelatedResourceProjection{Group: "kcp.example.com"}},
			wantKcp:     schema.GroupVersionResource{Group: "kcp.example.com", Version: "v1", Resource: "certificates"},
			wantService: certs,
		},
		{
			name: "projection of the version only, origin kcp: the service side gets it",
			rel: syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Group: "cert.example.com", Version: "v1", Resource: "certificates",
				Projection: &syncagentv1alpha1.RelatedResourceProjection{Version: "v2"}},
			wantKcp:     certs,
			wantService: schema.GroupVersionResource{Group: "cert.example.com", Version: "v2", Resource: "certificates"},
		},
		{
			name: "full projection, origin kcp",
			rel: syncagentv1alpha1.RelatedResourceSpec{Origin: "kcp", Group: "cert.example.com", Version: "v1", Resource: "certificates",
				Projection: &syncagentv1alpha1.RelatedResourceProjection{Group: "local.example.com", Version: "v1beta1", Resource: "certs"}},
			wantKcp:     certs,
			wantService: schema.GroupVersionResource{Group: "local.example.com", Version: "v1beta1", Resource: "certs"},
		},
		{
			name: "empty projection changes nothing",
			rel: syncagentv1alpha1.RelatedResourceSpec{Origin: "service", Group: "cert.example.com", Version: "v1", Resource: "certificates",
				Projection: &syncagentv1alpha1.RelatedResourceProjection{}},
			wantKcp: certs, wantService: certs,
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			kcp, service := GVRs(&tc.rel)
			if diff := cmp.Diff(tc.wantKcp, kcp); diff != "" {
				t.Errorf("kcp GVR (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantService, service); diff != "" {
				t.Errorf("service GVR (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEntry_sides(t *testing.T) {
	kcp := Type{GVR: schema.GroupVersionResource{Group: "kcp.example.com", Version: "v1", Resource: "things"}}
	service := Type{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}}
	for _, tc := range []struct {
		origin          syncagentv1alpha1.RelatedResourceOrigin
		wantOrigin      Side
		wantDestination Side
		wantOriginType  Type
		wantDestType    Type
	}{
		{origin: "kcp", wantOrigin: SideKcp, wantDestination: SideService, wantOriginType: kcp, wantDestType: service},
		{origin: "service", wantOrigin: SideService, wantDestination: SideKcp, wantOriginType: service, wantDestType: kcp},
	} {
		t.Run(string(tc.origin), func(t *testing.T) {
			e, err := Compile(&syncagentv1alpha1.RelatedResourceSpec{
				Identifier: "x", Origin: tc.origin,
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.x"},
				}},
			}, kcp, service)
			if err != nil {
				t.Fatal(err)
			}
			got := []any{e.Origin, e.Destination(), e.OriginType(), e.DestinationType()}
			want := []any{tc.wantOrigin, tc.wantDestination, tc.wantOriginType, tc.wantDestType}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("origin, destination, origin type, destination type (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompile_errors(t *testing.T) {
	regex := func(pattern string) *syncagentv1alpha1.RegularExpression {
		return &syncagentv1alpha1.RegularExpression{Pattern: pattern}
	}
	tmpl := func(text string) *syncagentv1alpha1.TemplateExpression {
		return &syncagentv1alpha1.TemplateExpression{Template: text}
	}
	ref := syncagentv1alpha1.RelatedResourceObjectSpec{Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.x"}}

	testcases := []struct {
		name    string
		object  syncagentv1alpha1.RelatedResourceObject
		mut     *syncagentv1alpha1.ResourceMutationSpec
		wantErr string
	}{
		{
			name:    "no mechanism",
			wantErr: `related "x": object: one of reference, selector or template is required`,
		},
		{
			name: "invalid reference regex",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.x", Regex: regex("(")}}},
			wantErr: `related "x": object: reference.regex:`,
		},
		{
			name:    "invalid template",
			object:  syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{Template: tmpl("{{ .x")}},
			wantErr: `related "x": object: template:`,
		},
		{
			name: "selector without rewrite",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{}}},
			wantErr: "selector.rewrite needs regex or template",
		},
		{
			name: "invalid templated selector key",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{
					LabelSelector: metaLabels(map[string]string{"{{ .x": "v"}),
					Rewrite:       syncagentv1alpha1.RelatedResourceSelectorRewrite{Regex: regex("")},
				}}},
			wantErr: "selector.matchLabels key",
		},
		{
			name: "invalid selector expression",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{
					LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}},
					Rewrite:       syncagentv1alpha1.RelatedResourceSelectorRewrite{Regex: regex("")},
				}}},
			wantErr: "selector.matchExpressions",
		},
		{
			name: "invalid selector rewrite template",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{
					Rewrite: syncagentv1alpha1.RelatedResourceSelectorRewrite{Template: tmpl("{{ end }}")},
				}}},
			wantErr: "selector.rewrite.template:",
		},
		{
			name:    "invalid namespace locator",
			object:  syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: ref, Namespace: &syncagentv1alpha1.RelatedResourceObjectSpec{}},
			wantErr: `related "x": object.namespace: one of reference, selector or template is required`,
		},
		{
			name:    "invalid spec mutation",
			object:  syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: ref},
			mut:     &syncagentv1alpha1.ResourceMutationSpec{Spec: []syncagentv1alpha1.ResourceMutation{{}}},
			wantErr: `related "x": spec mutation:`,
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(&syncagentv1alpha1.RelatedResourceSpec{Identifier: "x", Origin: "kcp", Object: tc.object, Mutation: tc.mut}, configMapType, configMapType)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
