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

package finalizer

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

func object(finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetFinalizers(finalizers)
	return u
}

// TestNameIsAQualifiedName: the API server accepts the finalizer of every
// agent name the agent accepts (a label value, up to 63 characters), and
// two agents never share one.
func TestNameIsAQualifiedName(t *testing.T) {
	seen := map[string]string{}
	for _, agent := range []string{"a", "my-agent", "Ref.Name_1-syncagent", strings.Repeat("x", 55), strings.Repeat("x", 56), strings.Repeat("y", 63)} {
		name := For(agent).Own
		if errs := validation.IsQualifiedName(name); len(errs) > 0 {
			t.Errorf("the finalizer of %q, %q: %v", agent, name, errs)
		}
		if other, ok := seen[name]; ok || name == Legacy {
			t.Errorf("%q and %q share the finalizer %q", agent, other, name)
		}
		seen[name] = agent
	}
}

// TestOf walks an object through the agent's finalizer transitions, with
// another agent's finalizers next to it.
func TestOf(t *testing.T) {
	me, other := For("me"), For("other")
	take := func(migrate bool) func(*unstructured.Unstructured) bool {
		return func(o *unstructured.Unstructured) bool { return me.Take(o, migrate) }
	}
	release := func(legacyOurs bool) func(*unstructured.Unstructured) bool {
		return func(o *unstructured.Unstructured) bool { return me.Release(o, legacyOurs) }
	}
	const foreign = "example.com/keep"
	for _, tc := range []struct {
		name     string
		before   []string
		op       func(*unstructured.Unstructured) bool
		want     []string
		changed  bool
		owns     bool // before the operation
		migrated bool
	}{
		{name: "take a new object", before: []string{foreign}, op: take(true),
			want: []string{foreign, me.Own}, changed: true},
		{name: "take an object already ours", before: []string{me.Own, Legacy}, op: take(true),
			want: []string{me.Own, Legacy}, owns: true},
		{name: "take over a legacy object: migrated", before: []string{Legacy, foreign}, op: take(true),
			want: []string{foreign, me.Own}, changed: true, migrated: true},
		{name: "take next to another's legacy finalizer: kept", before: []string{Legacy}, op: take(false),
			want: []string{Legacy, me.Own}, changed: true, migrated: true},
		{name: "release ours", before: []string{other.Own, me.Own, foreign}, op: release(false),
			want: []string{other.Own, foreign}, changed: true, owns: true},
		{name: "release ours next to a legacy one: the legacy one stays, whatever the caller knows", before: []string{Legacy, me.Own}, op: release(true),
			want: []string{Legacy}, changed: true, owns: true},
		{name: "release an unmigrated legacy object of ours", before: []string{Legacy, other.Own}, op: release(true),
			want: []string{other.Own}, changed: true, migrated: true},
		{name: "a legacy finalizer the caller knows nothing of stays", before: []string{Legacy}, op: release(false),
			want: []string{Legacy}, migrated: true},
		{name: "release what is not ours", before: []string{other.Own, foreign}, op: release(true),
			want: []string{other.Own, foreign}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := object(tc.before...)
			if got := me.Owns(o); got != tc.owns {
				t.Errorf("Owns = %v, want %v", got, tc.owns)
			}
			if got := me.Holds(o); got != (tc.owns || tc.migrated) {
				t.Errorf("Holds = %v, want %v", got, tc.owns || tc.migrated)
			}
			if got := me.Migrating(o); got != tc.migrated {
				t.Errorf("Migrating = %v, want %v", got, tc.migrated)
			}
			if got := tc.op(o); got != tc.changed {
				t.Errorf("changed = %v, want %v", got, tc.changed)
			}
			if got := o.GetFinalizers(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("finalizers %v, want %v", got, tc.want)
			}
		})
	}
}
