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
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kube-openapi/pkg/util/proto"
)

// The schema of a built-in type is derived from the service cluster's
// OpenAPI v2 models by the rules of kcp's crdpuller, which the reference
// agent uses: the schema, and with it the APIResourceSchema's name, must be
// byte for byte the reference's, or a switch would publish a second schema
// under every consumer. The golden tests (testdata/reference, generated
// with kcp's own code by hack/refschema) hold the two together.

// jsonSchemaPropsRef is the CRD schema type itself; the reference leaves
// fields of this type without a schema (it cannot be expressed).
const jsonSchemaPropsRef = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"

// knownSchemas replace the OpenAPI definitions of these well-known types
// (the reference's fixed list, after controller-tools' known types).
var knownSchemas = map[string]apiextensionsv1.JSONSchemaProps{
	"io.k8s.api.core.v1.Protocol":                                    {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"TCP"`)}},
	"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":                {Type: "object", XPreserveUnknownFields: ptrTrue()},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":                      {Type: "string", Format: "date-time"},
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":                 {Type: "string", Format: "date-time"},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Duration":                  {Type: "string"},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Fields":                    {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}},
	"io.k8s.apimachinery.pkg.runtime.RawExtension":                   {Type: "object"},
	"io.k8s.apimachinery.pkg.apis.meta.v1.unstructured.Unstructured": {Type: "object"},
	"io.k8s.apimachinery.pkg.api.resource.Quantity": {
		XIntOrString: true,
		AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
		Pattern:      `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`,
	},
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
		XIntOrString: true,
		AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
	},
	"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1beta1.JSON": {XPreserveUnknownFields: ptrTrue()},
	"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON":      {XPreserveUnknownFields: ptrTrue()},
}

// knownDefaults are defaults of primitive fields, by model path.
var knownDefaults = map[string]string{
	"io.k8s.api.core.v1.ContainerPort.protocol": `"TCP"`,
	"io.k8s.api.core.v1.ServicePort.protocol":   `"TCP"`,
}

// modelsByGVK indexes the models by their x-kubernetes-group-version-kind
// ("core" is the core group); for a kind listed by several models the last
// one in name order wins.
func modelsByGVK(models proto.Models) map[schema.GroupVersionKind]proto.Schema {
	out := map[schema.GroupVersionKind]proto.Schema{}
	for _, name := range models.ListModels() {
		model := models.LookupModel(name)
		if model == nil {
			continue
		}
		list, _ := model.GetExtensions()["x-kubernetes-group-version-kind"].([]any)
		for _, item := range list {
			gvk, ok := extensionGVK(item)
			if !ok || gvk.Kind == "" {
				continue
			}
			if gvk.Group == "core" {
				gvk.Group = ""
			}
			out[gvk] = model
		}
	}
	return out
}

// extensionGVK reads one entry of x-kubernetes-group-version-kind; all
// three fields must be strings.
func extensionGVK(item any) (schema.GroupVersionKind, bool) {
	m := map[string]any{}
	switch t := item.(type) {
	case map[any]any:
		for k, v := range t {
			if ks, ok := k.(string); ok {
				m[ks] = v
			}
		}
	case map[string]any:
		m = t
	default:
		return schema.GroupVersionKind{}, false
	}
	group, ok1 := m["group"].(string)
	version, ok2 := m["version"].(string)
	kind, ok3 := m["kind"].(string)
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, ok1 && ok2 && ok3
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// convertModel converts the model of a kind into a CRD schema.
func convertModel(model proto.Schema) (*apiextensionsv1.JSONSchemaProps, error) {
	props := &apiextensionsv1.JSONSchemaProps{}
	c := &modelConverter{out: props, root: model.GetPath().String(), visiting: sets.New[string](), errs: &[]error{}}
	model.Accept(c)
	if len(*c.errs) > 0 {
		return nil, fmt.Errorf("cannot convert %s: %v", c.root, *c.errs)
	}
	return props, nil
}

// modelConverter writes the schema of the model it visits into out. It is a
// proto.SchemaVisitorArbitrary; sub-schemas get converters of their own.
type modelConverter struct {
	out *apiextensionsv1.JSONSchemaProps
	// root is the path of the kind being converted; its metadata field
	// becomes a plain object.
	root string
	// inherited is the description the parent gives this schema (a field's
	// or an item's own description wins over its type's).
	inherited string
	// visiting holds the references on the current path (recursion).
	visiting sets.Set[string]
	errs     *[]error
}

var _ proto.SchemaVisitorArbitrary = &modelConverter{}

func (c *modelConverter) child(out *apiextensionsv1.JSONSchemaProps, inherited string) *modelConverter {
	return &modelConverter{out: out, root: c.root, inherited: inherited, visiting: c.visiting, errs: c.errs}
}

// describe sets the description: the inherited one, else the element type's
// (arrays, maps, references), else the schema's own.
func (c *modelConverter) describe(s proto.Schema) {
	var element string
	switch t := s.(type) {
	case *proto.Array:
		element = t.SubType.GetDescription()
	case *proto.Map:
		element = t.SubType.GetDescription()
	case *proto.Ref:
		element = t.SubSchema().GetDescription()
	}
	switch {
	case c.inherited != "":
		c.out.Description = c.inherited
	case element != "":
		c.out.Description = element
	default:
		c.out.Description = s.GetDescription()
	}
}

func (c *modelConverter) VisitArbitrary(a *proto.Arbitrary) {
	c.describe(a)
	c.out.XEmbeddedResource = true
	if v, ok := a.Extensions["x-kubernetes-preserve-unknown-fields"].(bool); ok {
		c.out.XPreserveUnknownFields = &v
	}
}

func (c *modelConverter) VisitArray(a *proto.Array) {
	c.describe(a)
	c.out.Type = "array"
	if len(a.Extensions) > 0 {
		c.listExtensions(a)
	}
	items := apiextensionsv1.JSONSchemaProps{}
	a.SubType.Accept(c.child(&items, a.SubType.GetDescription()))
	if len(items.Properties) > 0 && len(c.out.XListMapKeys) > 0 {
		// The keys of a map list are required, unless they have a default.
		required := sets.New(items.Required...).Insert(c.out.XListMapKeys...)
		for name, field := range items.Properties {
			if field.Default != nil {
				required.Delete(name)
			}
		}
		items.Required = sets.List(required)
	}
	c.out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}
}

// listExtensions derives the list type and map keys of an array from its
// extensions, or from its strategic-merge-patch hints.
func (c *modelConverter) listExtensions(a *proto.Array) {
	itemsAreKind := false
	switch t := a.SubType.(type) {
	case *proto.Kind:
		itemsAreKind = true
	case *proto.Ref:
		_, itemsAreKind = t.SubSchema().(*proto.Kind)
	}
	strategy, hasStrategy := a.Extensions["x-kubernetes-patch-strategy"]
	if listType, ok := a.Extensions["x-kubernetes-list-type"].(string); ok {
		c.out.XListType = &listType
	} else if hasStrategy && strategy != nil && strategy != "" {
		listType := "atomic"
		if s, _ := strategy.(string); s == "merge" || strings.HasPrefix(s, "merge,") || strings.HasSuffix(s, ",merge") {
			listType = "set"
			if itemsAreKind {
				listType = "map"
			}
		}
		c.out.XListType = &listType
	}
	if keys, ok := a.Extensions["x-kubernetes-list-map-keys"].([]any); ok {
		for _, k := range keys {
			c.out.XListMapKeys = append(c.out.XListMapKeys, str(k))
		}
	} else if key, ok := a.Extensions["x-kubernetes-patch-merge-key"]; ok && key != nil {
		c.out.XListMapKeys = []string{str(key)}
		if !hasStrategy || strategy == nil {
			listType := "map"
			c.out.XListType = &listType
		}
	}
}

func (c *modelConverter) VisitMap(m *proto.Map) {
	c.describe(m)
	values := apiextensionsv1.JSONSchemaProps{}
	m.SubType.Accept(c.child(&values, m.SubType.GetDescription()))
	c.out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &values, Allows: true}
	c.out.Type = "object"
}

func (c *modelConverter) VisitPrimitive(p *proto.Primitive) {
	c.describe(p)
	c.out.Type = p.Type
	c.out.Format = p.Format
	if d, ok := knownDefaults[p.Path.String()]; ok {
		c.out.Default = &apiextensionsv1.JSON{Raw: []byte(d)}
	}
}

func (c *modelConverter) VisitKind(k *proto.Kind) {
	c.describe(k)
	c.out.Required = slices.Clone(k.RequiredFields) // the models are cached and shared
	c.out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	c.out.Type = "object"
	for name, field := range k.Fields {
		props := apiextensionsv1.JSONSchemaProps{}
		if field.GetPath().String() == c.root+".metadata" {
			// The API server owns the schema of the object's metadata.
			props.Type = "object"
		} else {
			field.Accept(c.child(&props, field.GetDescription()))
		}
		c.out.Properties[name] = props
	}
	// (In a fixed order, so that a kind with both key extensions converts
	// the same way every time: the list-map-keys win.)
	if ext, ok := k.Extensions["x-kubernetes-patch-merge-key"]; ok {
		c.out.XListMapKeys = []string{str(ext)}
	}
	if ext, ok := k.Extensions["x-kubernetes-list-map-keys"]; ok {
		c.out.XListMapKeys = nil
		switch keys := ext.(type) {
		case []string:
			c.out.XListMapKeys = slices.Clone(keys)
		case []any:
			for _, key := range keys {
				c.out.XListMapKeys = append(c.out.XListMapKeys, str(key))
			}
		}
	}
	if ext, ok := k.Extensions["x-kubernetes-list-type"]; ok {
		listType := str(ext)
		c.out.XListType = &listType
	}
}

func (c *modelConverter) VisitReference(r proto.Reference) {
	ref := r.Reference()
	if ref == jsonSchemaPropsRef {
		return
	}
	if c.visiting.Has(ref) {
		*c.errs = append(*c.errs, fmt.Errorf("recursive schema are not supported: %s", ref))
		return
	}
	if known, ok := knownSchemas[ref]; ok {
		known.DeepCopyInto(c.out)
		c.out.Description = c.inherited
		if c.inherited == "" {
			c.out.Description = r.GetDescription()
		}
		return
	}
	c.describe(r)
	c.visiting.Insert(ref)
	r.SubSchema().Accept(c)
	c.visiting.Delete(ref)
}
