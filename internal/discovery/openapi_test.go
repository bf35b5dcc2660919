package discovery

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const testDoc = `{
  "components": {"schemas": {
    "io.example.v1.Widget": {
      "type": "object",
      "description": "A widget.",
      "x-kubernetes-group-version-kind": [{"group": "example.io", "version": "v1", "kind": "Widget"}],
      "required": ["spec"],
      "properties": {
        "apiVersion": {"type": "string"},
        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}, "description": "Standard metadata."},
        "spec": {"$ref": "#/components/schemas/io.example.v1.WidgetSpec"}
      }
    },
    "io.example.v1.WidgetSpec": {
      "type": "object",
      "properties": {
        "port": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
        "memory": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "raw": {"type": "object"},
        "mode": {"type": "string", "enum": ["A", "B"]},
        "rules": {
          "type": "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["name"],
          "items": {"allOf": [{"$ref": "#/components/schemas/io.example.v1.Rule"}], "default": {}}
        },
        "tree": {"$ref": "#/components/schemas/io.example.v1.Node"},
        "either": {"oneOf": [{"type": "string"}, {"type": "number"}]}
      }
    },
    "io.example.v1.Rule": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
    "io.example.v1.Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/io.example.v1.Node"}}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]}
  }}
}`

func TestSchemaForKind(t *testing.T) {
	got, err := schemaForKind([]byte(testDoc), schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"})
	if err != nil {
		t.Fatal(err)
	}
	tru := true
	listMap := "map"
	intOrString := func(desc string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Description: desc, XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
	}
	want := &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "A widget.",
		Required:    []string{"spec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"metadata":   {Type: "object"},
			"spec": {
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"port":   intOrString(""),
					"memory": intOrString(""),
					"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
					"raw":    {Type: "object", XPreserveUnknownFields: &tru},
					"mode":   {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"A"`)}, {Raw: []byte(`"B"`)}}},
					"rules": {
						Type: "array", XListType: &listMap, XListMapKeys: []string{"name"},
						Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
							Type: "object", Required: []string{"name"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}},
						}},
					},
					"tree": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"children": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: &tru}}},
					}},
					"either": {XPreserveUnknownFields: &tru},
				},
			},
		},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b apiextensionsv1.JSON) bool { return jsonEqual(a.Raw, b.Raw) })); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
}

func TestSchemaForKind_missingKind(t *testing.T) {
	if _, err := schemaForKind([]byte(testDoc), schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Gadget"}); err == nil {
		t.Error("expected an error for a kind the document does not define")
	}
	if _, err := schemaForKind([]byte(`{`), schema.GroupVersionKind{}); err == nil {
		t.Error("expected an error for invalid JSON")
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}
