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
	"strings"
	"testing"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func mustCompile(t *testing.T, rules []syncagentv1alpha1.ResourceMutation) *Mutator {
	t.Helper()
	m, err := Compile(rules)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return m
}

func TestCompile_errors(t *testing.T) {
	valid := del("spec.host")
	testcases := []struct {
		name    string
		rules   []syncagentv1alpha1.ResourceMutation
		wantErr string
	}{
		{
			name:    "bad regex",
			rules:   []syncagentv1alpha1.ResourceMutation{regex("spec.host", "(unclosed", "")},
			wantErr: "rule 0 (regex): invalid pattern: error parsing regexp: missing closing )",
		},
		{
			name:    "bad template syntax",
			rules:   []syncagentv1alpha1.ResourceMutation{valid, tmpl("spec.host", "{{ .Value")},
			wantErr: "rule 1 (template): invalid template",
		},
		{
			name:    "unknown template function",
			rules:   []syncagentv1alpha1.ResourceMutation{tmpl("spec.host", "{{ .Value | nosuchfunc }}")},
			wantErr: `rule 0 (template): invalid template: template: rule-0:1: function "nosuchfunc" not defined`,
		},
		{
			name:    "bad CEL syntax",
			rules:   []syncagentv1alpha1.ResourceMutation{valid, valid, celRule("spec.host", "1 +")},
			wantErr: "rule 2 (cel): invalid expression: ERROR: <input>:1:4: Syntax error",
		},
		{
			name:    "undeclared CEL variable",
			rules:   []syncagentv1alpha1.ResourceMutation{celRule("spec.host", "object.metadata.name")},
			wantErr: "rule 0 (cel): invalid expression: ERROR: <input>:1:1: undeclared reference to 'object'",
		},
		{
			name:    "empty CEL expression",
			rules:   []syncagentv1alpha1.ResourceMutation{celRule("spec.host", "")},
			wantErr: "rule 0 (cel): invalid expression",
		},
		{
			name:    "rule without a member",
			rules:   []syncagentv1alpha1.ResourceMutation{valid, {}},
			wantErr: "rule 1: must set one of delete, regex, template or cel",
		},
		{
			name:    "empty path",
			rules:   []syncagentv1alpha1.ResourceMutation{tmpl("", "x")},
			wantErr: "rule 0 (template): path must not be empty",
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(tc.rules)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			if m != nil {
				t.Errorf("Compile returned a mutator with an error")
			}
		})
	}

	t.Run("ignored members are not compiled", func(t *testing.T) {
		rules := []syncagentv1alpha1.ResourceMutation{{Delete: del("spec.host").Delete, CEL: celRule("spec.host", "1 +").CEL}}
		if _, err := Compile(rules); err != nil {
			t.Fatalf("Compile: %v", err)
		}
	})
}

func TestCompileCEL(t *testing.T) {
	for expression, wantErr := range map[string]string{
		`value == null ? self.metadata.name : other.spec`: "",
		`self.spec.items.exists(i, i == "x")`:             "",
		`1 +`:                                             "Syntax error",
		`unknown`:                                         "undeclared reference to 'unknown'",
	} {
		err := CompileCEL(expression)
		if wantErr == "" && err != nil {
			t.Errorf("CompileCEL(%q) = %v, want no error", expression, err)
		}
		if wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("CompileCEL(%q) = %v, want an error containing %q", expression, err, wantErr)
		}
	}
}
