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

package discovery

import (
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/google/go-cmp/cmp"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util/proto"
)

// syntheticDoc exercises the conversion rules that the golden kinds
// (testdata/reference) do not reach.
const syntheticDoc = `{
  "swagger": "2.0", "info": {"title": "test", "version": "v1"}, "paths": {},
  "definitions": {
    "io.example.v1.Widget": {
      "type": "object", "description": "A widget.",
      "x-kubernetes-group-version-kind": [{"group": "example.io", "version": "v1", "kind": "Widget"}],
      "properties": {
        "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "description": "Standard metadata."},
        "spec": {"$ref": "#/definitions/io.example.v1.WidgetSpec", "description": "The spec."}
      }
    },
    "io.example.v1.WidgetSpec": {
      "type": "object", "description": "What a widget should be.",
      "required": ["rules"],
      "properties": {
        "port": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
        "free": {"description": "Anything.", "x-kubernetes-preserve-unknown-fields": true},
        "validation": {"$ref": "#/definitions/io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "rules": {"type": "array", "items": {"$ref": "#/definitions/io.example.v1.Rule"},
                  "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "retainKeys,merge"},
        "odd": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": 5, "x-kubernetes-list-map-keys": [1, "b"]}
      }
    },
    "io.example.v1.Rule": {
      "type": "object", "description": "A rule.", "required": ["port"],
      "properties": {"name": {"type": "string"}, "port": {"type": "integer", "format": "int32"}}
    },
    "io.example.v1.Tree": {
      "type": "object",
      "x-kubernetes-group-version-kind": [{"group": "example.io", "version": "v1", "kind": "Tree"}],
      "properties": {"root": {"$ref": "#/definitions/io.example.v1.Node"}}
    },
    "io.example.v1.Node": {
      "type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/io.example.v1.Node"}}}
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps": {"type": "object", "properties": {"type": {"type": "string"}}}
  }
}`

func syntheticModels(t *testing.T) map[schema.GroupVersionKind]proto.Schema {
	t.Helper()
	doc, err := openapi_v2.ParseDocument([]byte(syntheticDoc))
	if err != nil {
		t.Fatal(err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	return modelsByGVK(models)
}

func TestConvertModel_rules(t *testing.T) {
	models := syntheticModels(t)
	got, err := convertModel(models[schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}])
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != "A widget." || got.Type != "object" {
		t.Errorf("root: description %q, type %q", got.Description, got.Type)
	}
	if diff := cmp.Diff(apiextensionsv1.JSONSchemaProps{Type: "object"}, got.Properties["metadata"]); diff != "" {
		t.Errorf("the object's own metadata must be a plain object (-want +got):\n%s", diff)
	}
	spec := got.Properties["spec"]
	if spec.Description != "The spec." {
		t.Errorf("a field's description must win over its type's, got %q", spec.Description)
	}
	props := spec.Properties
	if p := props["port"]; !p.XIntOrString || len(p.AnyOf) != 2 {
		t.Errorf("IntOrString must be the fixed int-or-string schema, got %+v", p)
	}
	if p := props["free"]; !p.XEmbeddedResource || p.XPreserveUnknownFields == nil || !*p.XPreserveUnknownFields || p.Description != "Anything." {
		t.Errorf("a free-form value: %+v", p)
	}
	if diff := cmp.Diff(apiextensionsv1.JSONSchemaProps{}, props["validation"]); diff != "" {
		t.Errorf("a JSONSchemaProps field must stay without schema (-want +got):\n%s", diff)
	}
	if p := props["labels"]; p.Type != "object" || p.AdditionalProperties == nil || !p.AdditionalProperties.Allows || p.AdditionalProperties.Schema.Type != "string" {
		t.Errorf("a map: %+v", p)
	}
	rules := props["rules"]
	if rules.XListType == nil || *rules.XListType != "map" || !cmp.Equal(rules.XListMapKeys, []string{"name"}) {
		t.Errorf("a merge list of objects with a merge key must be a map list keyed by it: type %v, keys %v", rules.XListType, rules.XListMapKeys)
	}
	if !cmp.Equal(rules.Items.Schema.Required, []string{"name", "port"}) {
		t.Errorf("the keys of a map list must be required, got %v", rules.Items.Schema.Required)
	}
	if rules.Items.Schema.Description != "A rule." {
		t.Errorf("items description %q", rules.Items.Schema.Description)
	}
	if tags := props["tags"]; tags.XListType == nil || *tags.XListType != "set" {
		t.Errorf("a merge list of scalars must be a set, got %v", tags.XListType)
	}
	// Extension values of the wrong type do not crash the conversion.
	if odd := props["odd"]; odd.XListType != nil || !cmp.Equal(odd.XListMapKeys, []string{"", "b"}) {
		t.Errorf("odd extensions: type %v, keys %v", odd.XListType, odd.XListMapKeys)
	}
}

func TestConvertModel_recursionIsAnError(t *testing.T) {
	models := syntheticModels(t)
	_, err := convertModel(models[schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Tree"}])
	if err == nil || !strings.Contains(err.Error(), "recursive schema are not supported: io.example.v1.Node") {
		t.Errorf("err = %v, want the recursion error", err)
	}
}
