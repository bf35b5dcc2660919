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

package merge

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// apply applies a merge patch as the API server does.
func apply(t *testing.T, obj map[string]any, patch []byte) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonpatch.MergePatch(data, patch)
	if err != nil {
		t.Fatal(err)
	}
	result := map[string]any{}
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatal(err)
	}
	return result
}

func parse(t *testing.T, s string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func TestThreeWay(t *testing.T) {
	testcases := []struct {
		name                 string
		last, desired, local string
		want                 string // local after the patch; "" = no patch expected
	}{
		{
			name:    "a field set only on the service side survives an unrelated kcp change",
			last:    `{"spec":{"color":"blue"}}`,
			desired: `{"spec":{"color":"red"}}`,
			local:   `{"spec":{"color":"blue","defaulted":"x"}}`,
			want:    `{"spec":{"color":"red","defaulted":"x"}}`,
		},
		{
			name:    "a kcp change of that field wins",
			last:    `{"spec":{"color":"blue"}}`,
			desired: `{"spec":{"color":"blue","defaulted":"mine"}}`,
			local:   `{"spec":{"color":"blue","defaulted":"x"}}`,
			want:    `{"spec":{"color":"blue","defaulted":"mine"}}`,
		},
		{
			name:    "a field removed in kcp is removed locally",
			last:    `{"spec":{"color":"blue","size":3}}`,
			desired: `{"spec":{"color":"blue"}}`,
			local:   `{"spec":{"color":"blue","size":3}}`,
			want:    `{"spec":{"color":"blue"}}`,
		},
		{
			name:    "a changed list replaces the local list",
			last:    `{"spec":{"items":[1,2]}}`,
			desired: `{"spec":{"items":[1,2,3]}}`,
			local:   `{"spec":{"items":[1,2,99]}}`,
			want:    `{"spec":{"items":[1,2,3]}}`,
		},
		{
			name:    "service-side labels survive, kcp labels are added",
			last:    `{"metadata":{"labels":{"a":"1"}},"spec":{}}`,
			desired: `{"metadata":{"labels":{"a":"1","b":"2"}},"spec":{}}`,
			local:   `{"metadata":{"labels":{"a":"1","svc":"x"}},"spec":{}}`,
			want:    `{"metadata":{"labels":{"a":"1","b":"2","svc":"x"}},"spec":{}}`,
		},
		{
			name:    "removing the last kcp label removes that label only (the patch never drops metadata)",
			last:    `{"metadata":{"labels":{"team":"a"}},"spec":{}}`,
			desired: `{"spec":{}}`,
			local:   `{"metadata":{"name":"x","labels":{"team":"a","operator":"yes"}},"spec":{}}`,
			want:    `{"metadata":{"name":"x","labels":{"operator":"yes"}},"spec":{}}`,
		},
		{
			name:    "removing every kcp label while annotations remain keeps the service's labels",
			last:    `{"metadata":{"labels":{"team":"a"},"annotations":{"note":"n"}},"spec":{}}`,
			desired: `{"metadata":{"annotations":{"note":"n"}},"spec":{}}`,
			local:   `{"metadata":{"name":"x","labels":{"team":"a","operator":"yes"},"annotations":{"note":"n"}},"spec":{}}`,
			want:    `{"metadata":{"name":"x","labels":{"operator":"yes"},"annotations":{"note":"n"}},"spec":{}}`,
		},
		{
			name:    "removing the last kcp annotation removes that annotation only",
			last:    `{"metadata":{"annotations":{"note":"n"}},"spec":{}}`,
			desired: `{"spec":{}}`,
			local:   `{"metadata":{"name":"x","annotations":{"note":"n","svc":"keep"}},"spec":{}}`,
			want:    `{"metadata":{"name":"x","annotations":{"svc":"keep"}},"spec":{}}`,
		},
		{
			name:    "no change, no patch",
			last:    `{"spec":{"color":"blue"}}`,
			desired: `{"spec":{"color":"blue"}}`,
			local:   `{"spec":{"color":"green"}}`,
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := ThreeWay(parse(t, tc.last), parse(t, tc.desired))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if patch != nil {
					t.Fatalf("unexpected patch %s", patch)
				}
				return
			}
			if patch == nil {
				t.Fatal("expected a patch")
			}
			var p map[string]any
			if err := json.Unmarshal(patch, &p); err != nil {
				t.Fatal(err)
			}
			if m, ok := p["metadata"]; ok && m == nil {
				t.Fatalf("the patch %s drops metadata (the API server refuses it)", patch)
			}
			if diff := cmp.Diff(parse(t, tc.want), apply(t, parse(t, tc.local), patch)); diff != "" {
				t.Errorf("local after patch %s (-want +got):\n%s", patch, diff)
			}
		})
	}
}

func TestOverwrite(t *testing.T) {
	desired := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "1"}},
		"spec":     map[string]any{"color": "red"},
	}
	local := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"svc": "y"}},
		"spec":     map[string]any{"color": "blue", "defaulted": "z"},
		"status":   map[string]any{"phase": "Ready"},
	}}
	if !Overwrite(local, desired) {
		t.Fatal("expected a change")
	}
	want := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"svc": "y", "a": "1"}},
		"spec":     map[string]any{"color": "red"},
		"status":   map[string]any{"phase": "Ready"},
	}
	if diff := cmp.Diff(want, local.Object); diff != "" {
		t.Errorf("local (-want +got):\n%s", diff)
	}
	// Applying the same desired state again changes nothing, so nothing is written.
	if Overwrite(local, desired) {
		t.Error("a second overwrite must report no change")
	}
}

func TestDrifted(t *testing.T) {
	desired := map[string]any{
		"apiVersion": "v1", "kind": "Thing",
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"team": "a"}},
		"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b"}, "items": []any{map[string]any{"name": "x"}}},
	}
	for _, tc := range []struct {
		name  string
		local map[string]any
		want  bool
	}{
		{"equal", map[string]any{
			"metadata": map[string]any{"name": "other", "labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b"}, "items": []any{map[string]any{"name": "x"}}},
		}, false},
		{"service-only fields and labels", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "a", "op": "x"}, "uid": "u"},
			"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b", "c": "d"}, "extra": true, "items": []any{map[string]any{"name": "x"}}},
			"status":   map[string]any{"phase": "Ready"},
		}, false},
		{"a scalar differs", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"color": "red", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b"}},
		}, true},
		{"a list differs", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1)}, "nested": map[string]any{"a": "b"}},
		}, true},
		{"a nested field is missing", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{}},
		}, true},
		{"a label is missing", map[string]any{
			"spec": map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b"}},
		}, true},
		{"the spec is missing", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}}}, true},
		{"a field defaulted inside list items", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b"}, "items": []any{map[string]any{"name": "x", "policy": "Always"}}},
		}, false},
		{"a list item differs", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b"}, "items": []any{map[string]any{"name": "y"}}},
		}, true},
		{"an item added to a list", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"color": "blue", "sizes": []any{int64(1), int64(2)}, "nested": map[string]any{"a": "b"}, "items": []any{map[string]any{"name": "x"}, map[string]any{"name": "z"}}},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Drifted(tc.local, desired); got != tc.want {
				t.Errorf("Drifted = %v, want %v", got, tc.want)
			}
		})
	}
}
