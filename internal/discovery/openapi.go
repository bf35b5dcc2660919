package discovery

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// openAPIDocument is the part of an OpenAPI v3 document (one group version,
// as served under /openapi/v3/apis/<group>/<version>) that the conversion reads.
type openAPIDocument struct {
	Components struct {
		Schemas map[string]*openAPISchema `json:"schemas"`
	} `json:"components"`
}

// openAPISchema is an OpenAPI v3 schema object with the Kubernetes
// extensions; only fields that can be expressed in a CRD schema are read.
type openAPISchema struct {
	Ref                  string                    `json:"$ref,omitempty"`
	AllOf                []*openAPISchema          `json:"allOf,omitempty"`
	OneOf                []*openAPISchema          `json:"oneOf,omitempty"`
	AnyOf                []*openAPISchema          `json:"anyOf,omitempty"`
	Type                 string                    `json:"type,omitempty"`
	Format               string                    `json:"format,omitempty"`
	Description          string                    `json:"description,omitempty"`
	Properties           map[string]*openAPISchema `json:"properties,omitempty"`
	AdditionalProperties json.RawMessage           `json:"additionalProperties,omitempty"`
	Items                *openAPISchema            `json:"items,omitempty"`
	Required             []string                  `json:"required,omitempty"`
	Enum                 []json.RawMessage         `json:"enum,omitempty"`
	Nullable             bool                      `json:"nullable,omitempty"`

	GVKs                  []schema.GroupVersionKind `json:"x-kubernetes-group-version-kind,omitempty"`
	IntOrString           bool                      `json:"x-kubernetes-int-or-string,omitempty"`
	PreserveUnknownFields *bool                     `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
	EmbeddedResource      bool                      `json:"x-kubernetes-embedded-resource,omitempty"`
	ListType              *string                   `json:"x-kubernetes-list-type,omitempty"`
	ListMapKeys           []string                  `json:"x-kubernetes-list-map-keys,omitempty"`
	MapType               *string                   `json:"x-kubernetes-map-type,omitempty"`
}

// Well-known definitions whose OpenAPI form is not a structural CRD schema.
const (
	objectMetaRef  = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	quantityRef    = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	intOrStringRef = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	refPrefix      = "#/components/schemas/"
	maxSchemaDepth = 64
)

// schemaForKind converts the definition of gvk in an OpenAPI v3 document
// into a structural CRD schema: references are inlined, metadata becomes a
// plain object (the API server owns its schema), int-or-string types and
// quantities become x-kubernetes-int-or-string, and recursive or free-form
// parts preserve unknown fields.
func schemaForKind(docJSON []byte, gvk schema.GroupVersionKind) (*apiextensionsv1.JSONSchemaProps, error) {
	doc := &openAPIDocument{}
	if err := json.Unmarshal(docJSON, doc); err != nil {
		return nil, fmt.Errorf("failed to parse OpenAPI v3 document: %w", err)
	}

	names := make([]string, 0, len(doc.Components.Schemas))
	for name := range doc.Components.Schemas {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic choice if a kind were listed twice
	for _, name := range names {
		s := doc.Components.Schemas[name]
		for _, g := range s.GVKs {
			if g == gvk {
				c := &converter{defs: doc.Components.Schemas}
				props, err := c.convert(s, map[string]bool{name: true}, 0)
				if err != nil {
					return nil, fmt.Errorf("failed to convert the schema of %s: %w", gvk, err)
				}
				if _, ok := props.Properties["metadata"]; ok {
					// The top-level metadata of a CRD schema may only be a
					// plain object: no description, no default.
					props.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object"}
				}
				return props, nil
			}
		}
	}
	return nil, fmt.Errorf("the OpenAPI document has no schema for %s", gvk)
}

type converter struct {
	defs map[string]*openAPISchema
}

func (c *converter) resolve(ref string) (string, *openAPISchema, error) {
	name := strings.TrimPrefix(ref, refPrefix)
	def, ok := c.defs[name]
	if !ok {
		return "", nil, fmt.Errorf("unresolvable reference %q", ref)
	}
	return name, def, nil
}

// convert turns s into JSONSchemaProps. seen holds the definitions on the
// current path to detect recursion.
func (c *converter) convert(s *openAPISchema, seen map[string]bool, depth int) (*apiextensionsv1.JSONSchemaProps, error) {
	if depth > maxSchemaDepth {
		return preserveUnknown(s.Description), nil
	}

	// A single allOf entry is how OpenAPI v3 attaches a description or
	// default to a reference: merge it into the referenced schema.
	if s.Ref == "" && len(s.AllOf) == 1 && s.Type == "" && len(s.Properties) == 0 {
		merged := *s.AllOf[0]
		if s.Description != "" {
			merged.Description = s.Description
		}
		return c.convert(&merged, seen, depth)
	}
	if s.Ref != "" {
		return c.convertRef(s, seen, depth)
	}

	if s.IntOrString {
		return intOrString(s.Description), nil
	}

	out := &apiextensionsv1.JSONSchemaProps{
		Type:         s.Type,
		Format:       s.Format,
		Description:  s.Description,
		Required:     s.Required,
		Nullable:     s.Nullable,
		XListType:    s.ListType,
		XListMapKeys: s.ListMapKeys,
		XMapType:     s.MapType,
	}
	if s.EmbeddedResource {
		out.XEmbeddedResource = true
	}
	if s.PreserveUnknownFields != nil && *s.PreserveUnknownFields {
		out.XPreserveUnknownFields = s.PreserveUnknownFields
	}
	for _, e := range s.Enum {
		out.Enum = append(out.Enum, apiextensionsv1.JSON{Raw: e})
	}
	// Defaults are left out on purpose: the OpenAPI documents of built-in
	// types carry zero-value defaults ({} for structs with required fields,
	// "" for strings) that are invalid as CRD defaults. The service
	// cluster's API server applies the real defaults to the local copies.

	// oneOf/anyOf with types (e.g. a number or a string) cannot be expressed
	// structurally; accept any value of those types.
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		if out.Type == "" {
			return preserveUnknown(s.Description), nil
		}
	}

	if len(s.Properties) > 0 {
		if out.Type == "" {
			out.Type = "object"
		}
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		for name, p := range s.Properties {
			converted, err := c.convert(p, seen, depth+1)
			if err != nil {
				return nil, fmt.Errorf("property %q: %w", name, err)
			}
			out.Properties[name] = *converted
		}
	}

	if len(s.AdditionalProperties) > 0 {
		var allowed bool
		if err := json.Unmarshal(s.AdditionalProperties, &allowed); err == nil {
			if allowed && len(out.Properties) == 0 {
				out.XPreserveUnknownFields = ptrTrue()
			}
		} else {
			ap := &openAPISchema{}
			if err := json.Unmarshal(s.AdditionalProperties, ap); err != nil {
				return nil, fmt.Errorf("invalid additionalProperties: %w", err)
			}
			converted, err := c.convert(ap, seen, depth+1)
			if err != nil {
				return nil, fmt.Errorf("additionalProperties: %w", err)
			}
			if out.Type == "" {
				out.Type = "object"
			}
			out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: converted}
		}
	}

	if s.Items != nil {
		converted, err := c.convert(s.Items, seen, depth+1)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: converted}
		if out.Type == "" {
			out.Type = "array"
		}
	}

	// A free-form object (no properties, no additionalProperties schema)
	// must preserve unknown fields to be structural.
	if out.Type == "object" && len(out.Properties) == 0 && out.AdditionalProperties == nil && !out.XEmbeddedResource {
		out.XPreserveUnknownFields = ptrTrue()
	}
	if out.Type == "" && out.XPreserveUnknownFields == nil && !out.XIntOrString {
		out.XPreserveUnknownFields = ptrTrue()
	}
	return out, nil
}

func (c *converter) convertRef(s *openAPISchema, seen map[string]bool, depth int) (*apiextensionsv1.JSONSchemaProps, error) {
	name, def, err := c.resolve(s.Ref)
	if err != nil {
		return nil, err
	}
	var out *apiextensionsv1.JSONSchemaProps
	switch {
	case name == objectMetaRef:
		// The API server validates metadata itself; a CRD schema may only
		// say it is an object.
		out = &apiextensionsv1.JSONSchemaProps{Type: "object"}
	case name == quantityRef || name == intOrStringRef:
		out = intOrString(def.Description)
	case seen[name]:
		// Recursive types (e.g. JSONSchemaProps) cannot be inlined.
		out = preserveUnknown(def.Description)
	default:
		seen[name] = true
		out, err = c.convert(def, seen, depth+1)
		delete(seen, name)
		if err != nil {
			return nil, err
		}
	}
	if s.Description != "" {
		out.Description = s.Description
	}
	return out, nil
}

func intOrString(description string) *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		Description:  description,
		XIntOrString: true,
		AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
	}
}

func preserveUnknown(description string) *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{Description: description, XPreserveUnknownFields: ptrTrue()}
}

func ptrTrue() *bool { t := true; return &t }
