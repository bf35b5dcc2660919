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

package once

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPerGeneration(t *testing.T) {
	p := NewPerGeneration()
	obj := &metav1.ObjectMeta{UID: "a", Generation: 1}
	steps := []struct {
		name  string
		do    func()
		first bool
	}{
		{"new object", func() {}, true},
		{"same generation", func() {}, false},
		{"next generation", func() { obj.Generation = 2 }, true},
		{"forgotten", func() { p.Forget(obj) }, true},
		{"other object", func() { obj = &metav1.ObjectMeta{UID: "b", Generation: 2} }, true},
	}
	for _, s := range steps {
		s.do()
		if got := p.First(obj); got != s.first {
			t.Errorf("%s: First = %v, want %v", s.name, got, s.first)
		}
	}
}

func TestPerValue(t *testing.T) {
	p := NewPerValue()
	obj := &metav1.ObjectMeta{UID: "a"}
	for _, s := range []struct {
		name  string
		value string
		do    func()
		first bool
	}{
		{"new value", "Orphan", func() {}, true},
		{"same value", "Orphan", func() {}, false},
		{"other value", "delete", func() {}, true},
		{"back to the first", "Orphan", func() {}, true},
		{"forgotten", "Orphan", func() { p.Forget(obj) }, true},
		{"other object", "Orphan", func() { obj = &metav1.ObjectMeta{UID: "b"} }, true},
	} {
		s.do()
		if got := p.First(obj, s.value); got != s.first {
			t.Errorf("%s: First = %v, want %v", s.name, got, s.first)
		}
	}
}
