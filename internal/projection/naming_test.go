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
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// The golden names pin the contract's algorithm (§3.3): SHA-1 over the
// encoding/json Encoder output of the projected spec with conversion
// cleared, newline included. A change here means every installation would
// create new schemas after an upgrade: never update them to make a test pass.
func TestSchemaName_golden(t *testing.T) {
	withSchema := func(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties = map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"color": {Type: "string", Pattern: "^<a&b>$"}}},
			}
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		return crd
	}

	testcases := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		pr   *syncagentv1alpha1.PublishedResource
		want string
	}{
		{
			name: "single version",
			crd:  withSchema(testCRD(ver{"v1", true, true})),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{}, nil),
			want: "v7bf3b2d8.things.example.com",
		},
		{
			name: "multiple versions",
			crd:  withSchema(testCRD(ver{"v1alpha1", true, false}, ver{"v1beta1", true, false}, ver{"v1", true, true})),
			pr:   pr(syncagentv1alpha1.SourceResourceDescriptor{}, nil),
			want: "v63f39936.things.example.com",
		},
		{
			name: "projected",
			crd:  withSchema(testCRD(ver{"v1beta1", true, false}, ver{"v1", true, true})),
			pr: pr(syncagentv1alpha1.SourceResourceDescriptor{Versions: []string{"v1"}}, &syncagentv1alpha1.ResourceProjection{
				Group: "kcp.example.com", Kind: "Widget", Scope: syncagentv1alpha1.ClusterScoped, ShortNames: []string{},
			}),
			want: "v558aa7c1.widgets.kcp.example.com",
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			projected, err := Project(tc.crd, tc.pr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := SchemaName(projected)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("SchemaName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSchemaName_stable(t *testing.T) {
	// Maps are encoded with sorted keys, so insertion order must not matter.
	build := func(keys ...string) *apiextensionsv1.CustomResourceDefinition {
		crd := testCRD(ver{"v1", true, true})
		props := map[string]apiextensionsv1.JSONSchemaProps{}
		for _, k := range keys {
			props[k] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: k}
		}
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties = props
		return crd
	}
	a, err := SchemaName(build("a", "b", "c", "d", "e", "f"))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		b, err := SchemaName(build("f", "e", "d", "c", "b", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("name depends on map order: %q vs %q", a, b)
		}
	}

	// Conversion does not take part; any other change does.
	withConversion := build("a")
	withConversion.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	plain, _ := SchemaName(build("a"))
	converted, _ := SchemaName(withConversion)
	if plain != converted {
		t.Errorf("conversion changed the name: %q vs %q", plain, converted)
	}
	other, _ := SchemaName(build("b"))
	if plain == other {
		t.Errorf("different schemas got the same name %q", plain)
	}
}

func TestSchemaGroupResource(t *testing.T) {
	testcases := map[string]struct {
		want schema.GroupResource
		ok   bool
	}{
		"v1a2b3c4d.things.example.com": {schema.GroupResource{Group: "example.com", Resource: "things"}, true},
		"v1.things.a.b.c":              {schema.GroupResource{Group: "a.b.c", Resource: "things"}, true},
		"today.things":                 {schema.GroupResource{}, false},
	}
	for name, tc := range testcases {
		got, ok := SchemaGroupResource(name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("SchemaGroupResource(%q) = %v, %v; want %v, %v", name, got, ok, tc.want, tc.ok)
		}
	}
}
