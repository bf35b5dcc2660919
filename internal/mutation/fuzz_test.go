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

package mutation

import (
	"encoding/json"
	"reflect"
	"testing"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// FuzzApply: a service owner's rules (one of each kind) applied to any
// object a consumer can write, and to any path and pattern, either fail
// with an error or give the same result twice; they never panic.
func FuzzApply(f *testing.F) {
	f.Add([]byte(`{"spec":{"color":"blue","n":1}}`), "spec.color", "^(.*)$")
	f.Add([]byte(`{"spec":{"items":[1,2,{"a":null}]},"metadata":{"name":"x"}}`), "spec.items.#", "[")
	f.Add([]byte(`{"spec":"not an object"}`), "spec..x", "")
	f.Add([]byte(`[]`), "a\\.b", "(?i)x")
	f.Fuzz(func(t *testing.T, object []byte, path, pattern string) {
		var self map[string]any
		if json.Unmarshal(object, &self) != nil || self == nil {
			return
		}
		rules := []syncagentv1alpha1.ResourceMutation{
			{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: path, Pattern: pattern, Replacement: "x-$1"}},
			{Template: &syncagentv1alpha1.ResourceTemplateMutation{Path: "spec.copy", Template: "{{ .Value }}-{{ .Self.metadata.name }}"}},
			{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "spec.size", Expression: "has(self.spec) ? string(self.spec) : 'none'"}},
			{Delete: &syncagentv1alpha1.ResourceDeleteMutation{Path: path}},
		}
		m, err := Compile(rules)
		if err != nil {
			return
		}
		first, err1 := m.Apply(self, map[string]any{"metadata": map[string]any{"name": "other"}})
		second, err2 := m.Apply(self, map[string]any{"metadata": map[string]any{"name": "other"}})
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(first, second) {
			t.Errorf("non-deterministic: %v, %v / %v, %v", first, err1, second, err2)
		}
	})
}
