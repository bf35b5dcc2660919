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

package references

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		specs   []syncagentv1alpha1.ResourceReference
		problem string
	}{
		{"spec and status", []syncagentv1alpha1.ResourceReference{{Path: "spec.configRef.name", Kind: "Widget", Group: "example.com"}, {Path: "status.secretName", Kind: "Secret"}}, ""},
		{"no kind", []syncagentv1alpha1.ResourceReference{{Path: "spec.x"}}, "kind must be set"},
		{"metadata", []syncagentv1alpha1.ResourceReference{{Path: "metadata.name", Kind: "Widget"}}, `must begin with "spec." or "status."`},
		{"spec alone", []syncagentv1alpha1.ResourceReference{{Path: "spec", Kind: "Widget"}}, `must begin with "spec." or "status."`},
		{"empty field", []syncagentv1alpha1.ResourceReference{{Path: "spec..name", Kind: "Widget"}}, "empty field name"},
		{"list element", []syncagentv1alpha1.ResourceReference{{Path: "spec.refs.#.name", Kind: "Widget"}}, "only dot-separated field names"},
		{"twice", []syncagentv1alpha1.ResourceReference{{Path: "spec.a", Kind: "Widget"}, {Path: "spec.a", Kind: "Gadget"}}, "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refs, err := Compile(tc.specs)
			if tc.problem == "" {
				if err != nil || len(refs) != len(tc.specs) {
					t.Fatalf("got %v, %v", refs, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("error %v, want one with %q", err, tc.problem)
			}
		})
	}
}

func TestGetSetCopyFrom(t *testing.T) {
	refs, err := Compile([]syncagentv1alpha1.ResourceReference{{Path: "spec.configRef.name", Kind: "Widget", Group: "example.com"}, {Path: "status.secretName", Kind: "Secret"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, status := refs[0], refs[1]
	if spec.Status || !status.Status || spec.Target != (schema.GroupKind{Group: "example.com", Kind: "Widget"}) {
		t.Fatalf("compiled %+v", refs)
	}
	obj := map[string]any{"spec": map[string]any{"configRef": map[string]any{"name": "blue"}}, "status": map[string]any{"secretName": int64(3)}}
	if v, ok := spec.Get(obj); !ok || v != "blue" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	if _, ok := status.Get(obj); ok {
		t.Fatal("a number is not a name")
	}
	if err := spec.Set(obj, "local-blue"); err != nil {
		t.Fatal(err)
	}
	if v, _ := spec.Get(obj); v != "local-blue" {
		t.Fatalf("after Set: %q", v)
	}
	// A field on the way that is not an object is not overwritten.
	bad := map[string]any{"spec": map[string]any{"configRef": "blue"}}
	if err := spec.Set(bad, "x"); err == nil || bad["spec"].(map[string]any)["configRef"] != "blue" {
		t.Fatalf("Set through a string: %v, %v", err, bad)
	}
	kcp := map[string]any{"status": map[string]any{"secretName": "kept"}}
	if err := status.CopyFrom(obj, kcp); err != nil {
		t.Fatal(err)
	}
	if v, _ := status.Get(obj); v != "kept" {
		t.Fatalf("CopyFrom: %q", v)
	}
	if err := status.CopyFrom(obj, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if _, found := obj["status"].(map[string]any)["secretName"]; found {
		t.Fatal("CopyFrom an object without the field must remove it")
	}
}
