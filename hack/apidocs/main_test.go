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

package main

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestRender: every field is a row with its path, type (required marked),
// description and constraints; arrays and maps show their items' fields;
// a pipe in a description does not break the table.
func TestRender(t *testing.T) {
	minLen := int64(1)
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets", ShortNames: []string{"wd"}},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Schema: &apiextensionsv1.CustomResourceValidation{
			OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Description: "A widget.", Required: []string{"spec"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Description: "The spec.", Required: []string{"items"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"items": {Type: "array", Description: "Items a|b.", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"name": {Type: "string", Description: "The\nname.", MinLength: &minLen},
						}}}},
					"mode": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"Fast"`)}, {Raw: []byte(`"Slow"`)}}},
				}},
			}}}}},
	}}
	out, err := Render(crd, "widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`Widget` is cluster-scoped (resource `widgets`, short names: `wd`), group `example.com`.",
		"## example.com/v1",
		"| `spec` | object, required | The spec. |",
		"| `spec.items` | []object, required | Items a\\|b. |",
		"| `spec.items[].name` | string, required | The name. At least 1 characters. |",
		"| `spec.mode` | string | One of `Fast`, `Slow`. |",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
