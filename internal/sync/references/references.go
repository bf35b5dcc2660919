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

// Package references compiles spec.references of a PublishedResource: the
// fields of an object that hold another synchronized object's name. It
// reads and writes those fields in plain object maps; it does not look
// anything up (the syncer decides what a name becomes).
package references

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Reference is one compiled reference field.
type Reference struct {
	// Path is the field as configured ("spec.configRef.name").
	Path string
	// Status is set for a field under status (local name → kcp name); a
	// spec field goes the other way.
	Status bool
	// Target is the referenced type as published in kcp.
	Target schema.GroupKind
	fields []string
}

// notInPath are characters a path must not contain: they would suggest
// the gjson syntax of other paths (wildcards, list elements, modifiers),
// which a reference does not have.
const notInPath = `*?#|@\`

// Compile checks and compiles specs; the error names every bad entry.
func Compile(specs []syncagentv1alpha1.ResourceReference) ([]Reference, error) {
	var out []Reference
	var problems []string
	seen := map[string]bool{}
	for i, spec := range specs {
		ref, err := compile(spec)
		if err == nil && seen[spec.Path] {
			err = fmt.Errorf("path %q is listed twice", spec.Path)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("spec.references[%d]: %v", i, err))
			continue
		}
		seen[spec.Path] = true
		out = append(out, ref)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}

func compile(spec syncagentv1alpha1.ResourceReference) (Reference, error) {
	if spec.Kind == "" {
		return Reference{}, fmt.Errorf("kind must be set")
	}
	if strings.ContainsAny(spec.Path, notInPath) {
		return Reference{}, fmt.Errorf("path %q: only dot-separated field names are allowed (none of %s)", spec.Path, notInPath)
	}
	fields := strings.Split(spec.Path, ".")
	if len(fields) < 2 || (fields[0] != "spec" && fields[0] != "status") {
		return Reference{}, fmt.Errorf("path %q must begin with \"spec.\" or \"status.\" and name a field below it", spec.Path)
	}
	for _, f := range fields {
		if f == "" {
			return Reference{}, fmt.Errorf("path %q has an empty field name", spec.Path)
		}
	}
	return Reference{
		Path:   spec.Path,
		Status: fields[0] == "status",
		Target: schema.GroupKind{Group: spec.Group, Kind: spec.Kind},
		fields: fields,
	}, nil
}

// Get returns the name held at the reference's path in obj (a whole
// object); ok is false when the field is missing, empty or not a string.
func (r Reference) Get(obj map[string]any) (name string, ok bool) {
	v, found, err := unstructured.NestedString(obj, r.fields...)
	if err != nil || !found || v == "" {
		return "", false
	}
	return v, true
}

// Set writes name at the reference's path in obj (a whole object),
// creating the objects on the way; it fails where a field on the way is
// not an object.
func (r Reference) Set(obj map[string]any, name string) error {
	if err := unstructured.SetNestedField(obj, name, r.fields...); err != nil {
		return fmt.Errorf("reference %s: %w", r.Path, err)
	}
	return nil
}

// Remove deletes the reference's field from obj (a whole object).
func (r Reference) Remove(obj map[string]any) {
	unstructured.RemoveNestedField(obj, r.fields...)
}

// CopyFrom makes the reference's field in obj what it is in from: the same
// value, or absent (used to keep a status field as it is in kcp).
func (r Reference) CopyFrom(obj, from map[string]any) error {
	v, found, err := unstructured.NestedFieldNoCopy(from, r.fields...)
	if err != nil || !found {
		unstructured.RemoveNestedField(obj, r.fields...)
		return nil
	}
	if err := unstructured.SetNestedField(obj, v, r.fields...); err != nil {
		return fmt.Errorf("reference %s: %w", r.Path, err)
	}
	return nil
}
