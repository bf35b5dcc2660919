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
	"crypto/sha3"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/cel-go/interpreter"
	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/runtime"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// thing returns a fresh object with every JSON type in it.
func thing() map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Thing",
		"metadata":   map[string]any{"name": "foo", "namespace": "ns"},
		"spec": map[string]any{
			"replicas": int64(3),
			"ratio":    1.5,
			"enabled":  true,
			"host":     "db.example.com",
			"image":    "registry.example.com/app:v1.2.3",
			"labels":   map[string]any{"a": "b"},
			"items":    []any{"x", "y", "z"},
			"users": []any{
				map[string]any{"name": "alice", "role": "admin"},
				map[string]any{"name": "bob", "role": "dev"},
			},
		},
	}
}

// remote is a stand-in for the other object.
func remote() map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Thing",
		"metadata":   map[string]any{"name": "bar", "namespace": "remote-ns"},
	}
}

// thingWith returns thing() changed by edit, for expected results.
func thingWith(edit func(spec map[string]any)) map[string]any {
	obj := thing()
	edit(obj["spec"].(map[string]any))
	return obj
}

func del(path string) syncagentv1alpha1.ResourceMutation {
	return syncagentv1alpha1.ResourceMutation{Delete: &syncagentv1alpha1.ResourceDeleteMutation{Path: path}}
}

func regex(path, pattern, replacement string) syncagentv1alpha1.ResourceMutation {
	return syncagentv1alpha1.ResourceMutation{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: path, Pattern: pattern, Replacement: replacement}}
}

func tmpl(path, text string) syncagentv1alpha1.ResourceMutation {
	return syncagentv1alpha1.ResourceMutation{Template: &syncagentv1alpha1.ResourceTemplateMutation{Path: path, Template: text}}
}

func celRule(path, expression string) syncagentv1alpha1.ResourceMutation {
	return syncagentv1alpha1.ResourceMutation{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: path, Expression: expression}}
}

func sha3Hex(s string) string {
	sum := sha3.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// deepCopyJSON fails the test instead of panicking when v holds a non-JSON
// type (such as int instead of int64).
func deepCopyJSON(t *testing.T, v map[string]any) (out map[string]any) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("not valid unstructured content: %v", r)
		}
	}()
	return runtime.DeepCopyJSON(v)
}

func TestMutator_Apply(t *testing.T) {
	// Each contains() on a 100 kB string costs 10,000: the limit is hit
	// after about 100 of the 1,000 iterations.
	costly := map[string]any{"spec": map[string]any{
		"text":  strings.Repeat("a", 100_000),
		"items": make([]any, 1000),
	}}

	testcases := []struct {
		name  string
		rules []syncagentv1alpha1.ResourceMutation
		// self defaults to thing().
		self  map[string]any
		other map[string]any
		want  map[string]any
		// wantErr is a substring of the expected error.
		wantErr string
		// checkErr, if set, inspects the error further.
		checkErr func(t *testing.T, err error)
	}{
		// delete
		{
			name:  "delete a field",
			rules: []syncagentv1alpha1.ResourceMutation{del("spec.host")},
			want:  thingWith(func(s map[string]any) { delete(s, "host") }),
		},
		{
			name:  "delete an object",
			rules: []syncagentv1alpha1.ResourceMutation{del("spec.labels")},
			want:  thingWith(func(s map[string]any) { delete(s, "labels") }),
		},
		{
			name:  "delete an array item",
			rules: []syncagentv1alpha1.ResourceMutation{del("spec.items.1")},
			want:  thingWith(func(s map[string]any) { s["items"] = []any{"x", "z"} }),
		},
		{
			name:  "delete a field of an array item",
			rules: []syncagentv1alpha1.ResourceMutation{del("spec.users.0.role")},
			want: thingWith(func(s map[string]any) {
				s["users"].([]any)[0] = map[string]any{"name": "alice"}
			}),
		},
		{
			name:  "delete a missing path is a no-op",
			rules: []syncagentv1alpha1.ResourceMutation{del("spec.nothing"), del("spec.no.such.parent"), del("spec.items.7")},
			want:  thing(),
		},
		{
			name:    "delete with a query path is an error",
			rules:   []syncagentv1alpha1.ResourceMutation{del("spec.users.#.name")},
			wantErr: `rule 0 (delete): failed to delete "spec.users.#.name"`,
		},

		// regex
		{
			name:  "regex with an empty pattern sets a string and changes the type",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.replicas", "", "five")},
			want:  thingWith(func(s map[string]any) { s["replicas"] = "five" }),
		},
		{
			name:  "regex with an empty pattern creates missing parents",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.new.deep", "", "v")},
			want:  thingWith(func(s map[string]any) { s["new"] = map[string]any{"deep": "v"} }),
		},
		{
			name:  "regex expands $1",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.image", `^(.*):[^:]*$`, "$1:latest")},
			want:  thingWith(func(s map[string]any) { s["image"] = "registry.example.com/app:latest" }),
		},
		{
			name:  "regex expands ${name}",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.host", `^(?P<host>[^.]+)\.(?P<domain>.*)$`, "${domain}/${host}")},
			want:  thingWith(func(s map[string]any) { s["host"] = "example.com/db" }),
		},
		{
			name:  "regex replaces every match",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.host", `\.`, "-")},
			want:  thingWith(func(s map[string]any) { s["host"] = "db-example-com" }),
		},
		{
			name:  "regex turns a number into a string",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.replicas", `^(\d+)$`, "${1}0")},
			want:  thingWith(func(s map[string]any) { s["replicas"] = "30" }),
		},
		{
			name:  "regex turns a bool into a string",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.enabled", `^true$`, "yes")},
			want:  thingWith(func(s map[string]any) { s["enabled"] = "yes" }),
		},
		{
			name:  "regex sees an object as raw JSON",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.labels", `"`, "'")},
			want:  thingWith(func(s map[string]any) { s["labels"] = `{'a':'b'}` }),
		},
		{
			name:  "regex on a missing path does not create it, even if the pattern matches the empty string",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.missing", `^$`, "default"), regex("spec.no.parent", `.*`, "x")},
			want:  thing(),
		},
		{
			name:  "regex writes to an array index",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.items.2", `z`, "zz")},
			want:  thingWith(func(s map[string]any) { s["items"] = []any{"x", "y", "zz"} }),
		},
		{
			// gjson reads all names as one JSON array; sjson writes the
			// result to the name of every item (reference behaviour).
			name:  "regex reads and writes all array items with #",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.users.#.name", `[\["\]]`, "")},
			want: thingWith(func(s map[string]any) {
				s["users"] = []any{
					map[string]any{"name": "alice,bob", "role": "admin"},
					map[string]any{"name": "alice,bob", "role": "dev"},
				}
			}),
		},

		// template
		{
			name:  "template output is not HTML-escaped",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.host", `{{ .Value }} & 'quoted' <b>"x"</b>`)},
			want:  thingWith(func(s map[string]any) { s["host"] = `db.example.com & 'quoted' <b>"x"</b>` }),
		},
		{
			name:  "template output is trimmed",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.host", "\n  {{ .Value.String | upper }}  \n")},
			want:  thingWith(func(s map[string]any) { s["host"] = "DB.EXAMPLE.COM" }),
		},
		{
			name:  "template has the hash functions",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.hash", `{{ .LocalObject.metadata.name | sha3short 8 }}-{{ sha3sum "foo" | len }}`)},
			want:  thingWith(func(s map[string]any) { s["hash"] = sha3Hex("foo")[:8] + "-64" }),
		},
		{
			name:  "template prints a number value as a string",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.replicas", `{{ .Value }}`)},
			want:  thingWith(func(s map[string]any) { s["replicas"] = "3" }),
		},
		{
			name:  "template value methods",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.replicas", `{{ add .Value.Int 1 }} {{ .Value.String }} {{ .Value.Raw }} {{ .Value.Exists }} {{ .Value.Bool }}`)},
			want:  thingWith(func(s map[string]any) { s["replicas"] = "4 3 3 true true" }),
		},
		{
			name:  "template prints an object as raw JSON",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.labels", `{{ .Value }}|{{ .Value.Raw }}`)},
			want:  thingWith(func(s map[string]any) { s["labels"] = `{"a":"b"}|{"a":"b"}` }),
		},
		{
			name:  "template on a missing path creates it",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.new.value", `[{{ .Value }}] exists={{ .Value.Exists }} int={{ .Value.Int }}`)},
			want:  thingWith(func(s map[string]any) { s["new"] = map[string]any{"value": "[] exists=false int=0"} }),
		},
		{
			name:  "template reads all array items with #",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.users.#.role", `{{ range .Value.Array }}{{ . }};{{ end }}`)},
			want: thingWith(func(s map[string]any) {
				s["users"] = []any{
					map[string]any{"name": "alice", "role": "admin;dev;"},
					map[string]any{"name": "bob", "role": "admin;dev;"},
				}
			}),
		},
		{
			name:  "template writes to an array index",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.users.1.name", `{{ .Value }}-{{ .Self.metadata.namespace }}`)},
			want: thingWith(func(s map[string]any) {
				s["users"].([]any)[1] = map[string]any{"name": "bob-ns", "role": "dev"}
			}),
		},
		{
			name: "template objects without the other object",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.objects",
				`{{ .LocalObject.metadata.name }} {{ .Self.metadata.name }} {{ if .RemoteObject }}remote{{ else }}no-remote{{ end }} {{ if .Other }}other{{ else }}no-other{{ end }}`)},
			want: thingWith(func(s map[string]any) { s["objects"] = "foo foo no-remote no-other" }),
		},
		{
			name:  "template objects with the other object",
			rules: []syncagentv1alpha1.ResourceMutation{tmpl("spec.objects", `{{ .LocalObject.metadata.name }} {{ .RemoteObject.metadata.name }} {{ .Other.metadata.namespace }}`)},
			other: remote(),
			want:  thingWith(func(s map[string]any) { s["objects"] = "foo bar remote-ns" }),
		},
		{
			name:  "template sees the result of earlier rules",
			rules: []syncagentv1alpha1.ResourceMutation{regex("spec.host", "", "changed"), tmpl("spec.copy", `{{ .Self.spec.host }}`)},
			want: thingWith(func(s map[string]any) {
				s["host"] = "changed"
				s["copy"] = "changed"
			}),
		},
		{
			// sprig's set modifies the map it is given: neither the
			// caller's objects nor the result may see it.
			name: "template cannot modify the objects it is given",
			rules: []syncagentv1alpha1.ResourceMutation{
				tmpl("spec.t", `{{ $_ := set .Self "injected" 1 }}{{ $_ := set .Other "injected" 1 }}{{ $_ := set .Self.spec "injected" 1 }}ok`),
				tmpl("spec.u", `{{ hasKey .Other "injected" }}`),
			},
			other: remote(),
			want: thingWith(func(s map[string]any) {
				s["t"] = "ok"
				s["u"] = "false"
			}),
		},
		{
			name:    "template execution error",
			rules:   []syncagentv1alpha1.ResourceMutation{del("spec.host"), tmpl("spec.host", `{{ fail "boom" }}`)},
			wantErr: "rule 1 (template): failed to execute template",
		},

		// cel
		{
			name:  "cel returns a map",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.out", `{"name": self.metadata.name, "n": 1, "nested": {"l": [true]}}`)},
			want: thingWith(func(s map[string]any) {
				s["out"] = map[string]any{"name": "foo", "n": int64(1), "nested": map[string]any{"l": []any{true}}}
			}),
		},
		{
			name:  "cel returns a map from the input",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.copy", `self.spec.labels`)},
			want:  thingWith(func(s map[string]any) { s["copy"] = map[string]any{"a": "b"} }),
		},
		{
			name:  "cel returns a list",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.names", `self.spec.users.map(u, u.name)`)},
			want:  thingWith(func(s map[string]any) { s["names"] = []any{"alice", "bob"} }),
		},
		{
			name:  "cel returns a string",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.host", `value + ":5432"`)},
			want:  thingWith(func(s map[string]any) { s["host"] = "db.example.com:5432" }),
		},
		{
			name:  "cel sees integers as int",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.replicas", `value * 2`)},
			want:  thingWith(func(s map[string]any) { s["replicas"] = int64(6) }),
		},
		{
			name:  "cel returns a double",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.ratio", `value * 3.0`)},
			want:  thingWith(func(s map[string]any) { s["ratio"] = 4.5 }),
		},
		{
			name:  "cel returns a bool",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.enabled", `!value`)},
			want:  thingWith(func(s map[string]any) { s["enabled"] = false }),
		},
		{
			name:  "cel returns null",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.host", `null`)},
			want:  thingWith(func(s map[string]any) { s["host"] = nil }),
		},
		{
			name:  "cel turns an object into a string",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.labels", `"labels:" + string(size(value))`)},
			want:  thingWith(func(s map[string]any) { s["labels"] = "labels:1" }),
		},
		{
			name:  "cel value is null on a missing path, and the path is created",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.new.deep", `value == null ? "was missing" : "present"`)},
			want:  thingWith(func(s map[string]any) { s["new"] = map[string]any{"deep": "was missing"} }),
		},
		{
			name:  "cel other is null without another object",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.other", `other == null ? "none" : other.metadata.name`)},
			want:  thingWith(func(s map[string]any) { s["other"] = "none" }),
		},
		{
			name:  "cel other is the other object",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.other", `other == null ? "none" : other.metadata.name`)},
			other: remote(),
			want:  thingWith(func(s map[string]any) { s["other"] = "bar" }),
		},
		{
			name:  "cel reads all array items with #",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.users.#.role", `value[0] + "+" + value[1]`)},
			want: thingWith(func(s map[string]any) {
				s["users"] = []any{map[string]any{"name": "alice", "role": "admin+dev"}, map[string]any{"name": "bob", "role": "admin+dev"}}
			}),
		},
		{
			name:  "cel appends to an array",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.items.-1", `self.metadata.name`)},
			want:  thingWith(func(s map[string]any) { s["items"] = []any{"x", "y", "z", "foo"} }),
		},
		{
			name:  "cel sees the result of earlier rules",
			rules: []syncagentv1alpha1.ResourceMutation{del("spec.host"), celRule("spec.hadHost", `has(self.spec.host)`)},
			want: thingWith(func(s map[string]any) {
				delete(s, "host")
				s["hadHost"] = false
			}),
		},
		{
			name:  "cel timestamps become strings",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.when", `timestamp("2024-01-02T03:04:05Z")`)},
			want:  thingWith(func(s map[string]any) { s["when"] = "2024-01-02T03:04:05Z" }),
		},
		{
			name:    "cel evaluation error",
			rules:   []syncagentv1alpha1.ResourceMutation{celRule("spec.x", `self.spec.nothing + 1`)},
			wantErr: "rule 0 (cel): failed to evaluate expression: no such key: nothing",
		},
		{
			name:    "cel map with a non-string key cannot be written",
			rules:   []syncagentv1alpha1.ResourceMutation{celRule("spec.x", `{1: "a"}`)},
			wantErr: "rule 0 (cel): failed to convert the result: map key 1 is a int, not a string",
		},
		{
			name:    "cel NaN cannot be written",
			rules:   []syncagentv1alpha1.ResourceMutation{celRule("spec.x", `double("NaN")`)},
			wantErr: "cannot be represented in JSON",
		},
		{
			name:    "cel cost limit",
			rules:   []syncagentv1alpha1.ResourceMutation{celRule("spec.x", `self.spec.items.all(i, !self.spec.text.contains("b"))`)},
			self:    costly,
			wantErr: "rule 0 (cel): failed to evaluate expression: operation cancelled: actual cost limit exceeded",
			checkErr: func(t *testing.T, err error) {
				t.Helper()
				var cancelled interpreter.EvalCancelledError
				if !errors.As(err, &cancelled) || cancelled.Cause != interpreter.CostLimitExceeded {
					t.Errorf("error = %v, want it to wrap an EvalCancelledError with cause CostLimitExceeded", err)
				}
			},
		},
		{
			// The same expression on a tenth of the items stays in the limit.
			name:  "cel below the cost limit",
			rules: []syncagentv1alpha1.ResourceMutation{celRule("spec.x", `self.spec.items.all(i, !self.spec.text.contains("b"))`)},
			self:  map[string]any{"spec": map[string]any{"text": strings.Repeat("a", 100_000), "items": make([]any, 10)}},
			want:  map[string]any{"spec": map[string]any{"text": strings.Repeat("a", 100_000), "items": make([]any, 10), "x": true}},
		},

		// several kinds
		{
			name: "rules apply in order",
			rules: []syncagentv1alpha1.ResourceMutation{
				regex("spec.host", `^db\.`, "primary."),
				tmpl("spec.host", `{{ .Value }}.internal`),
				celRule("spec.host", `value + "!"`),
				del("spec.users"),
			},
			want: thingWith(func(s map[string]any) {
				s["host"] = "primary.example.com.internal!"
				delete(s, "users")
			}),
		},
		{
			name: "the first member by precedence wins",
			rules: []syncagentv1alpha1.ResourceMutation{
				{Regex: regex("spec.host", "", "by-regex").Regex, Template: tmpl("spec.host", "by-template").Template, CEL: celRule("spec.host", `"by-cel"`).CEL},
				{Template: tmpl("spec.image", "by-template").Template, CEL: celRule("spec.image", `"by-cel"`).CEL},
				{Delete: del("spec.labels").Delete, Regex: regex("spec.labels", "", "by-regex").Regex},
			},
			want: thingWith(func(s map[string]any) {
				s["host"] = "by-regex"
				s["image"] = "by-template"
				delete(s, "labels")
			}),
		},
	}

	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(tc.rules)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			self := tc.self
			if self == nil {
				self = thing()
			}
			selfBefore := deepCopyJSON(t, self)
			var otherBefore map[string]any
			if tc.other != nil {
				otherBefore = deepCopyJSON(t, tc.other)
			}

			got, err := m.Apply(self, tc.other)

			if diff := cmp.Diff(selfBefore, self); diff != "" {
				t.Errorf("Apply modified self (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(otherBefore, tc.other); diff != "" {
				t.Errorf("Apply modified other (-before +after):\n%s", diff)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				if got != nil {
					t.Errorf("result on error = %v, want nil", got)
				}
				if tc.checkErr != nil {
					tc.checkErr(t, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result differs (-want +got):\n%s", diff)
			}
			deepCopyJSON(t, got)
		})
	}
}

func TestMutator_Apply_withoutRules(t *testing.T) {
	for _, name := range []string{"nil list", "empty list", "nil mutator"} {
		t.Run(name, func(t *testing.T) {
			var m *Mutator
			switch name {
			case "nil list":
				m = mustCompile(t, nil)
			case "empty list":
				m = mustCompile(t, []syncagentv1alpha1.ResourceMutation{})
			}
			if !m.Empty() {
				t.Error("Empty() = false, want true")
			}

			self := thing()
			got, err := m.Apply(self, nil)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if diff := cmp.Diff(thing(), got); diff != "" {
				t.Errorf("result differs (-want +got):\n%s", diff)
			}
			// The result is a deep copy: changing it leaves self alone.
			got["spec"].(map[string]any)["host"] = "changed"
			got["spec"].(map[string]any)["items"].([]any)[0] = "changed"
			if diff := cmp.Diff(thing(), self); diff != "" {
				t.Errorf("changing the result changed self (-want +got):\n%s", diff)
			}

			if got, err := m.Apply(nil, nil); got != nil || err != nil {
				t.Errorf("Apply(nil) = %v, %v; want nil, nil", got, err)
			}
		})
	}

	if mustCompile(t, []syncagentv1alpha1.ResourceMutation{del("a")}).Empty() {
		t.Error("Empty() = true for a mutator with one rule")
	}
}

func TestMutator_Apply_normalisesNumbers(t *testing.T) {
	// Callers may pass ints; the result holds int64 as unstructured expects.
	m := mustCompile(t, []syncagentv1alpha1.ResourceMutation{del("gone")})
	got, err := m.Apply(map[string]any{"n": 3, "f": float32(0.5), "l": []string{"a"}, "gone": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": int64(3), "f": 0.5, "l": []any{"a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result differs (-want +got):\n%s", diff)
	}
	deepCopyJSON(t, got)
}
