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

package export

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// KeepRaw returns the stored form of a merged list: every entry of merged
// that equals (decoded into T) an entry of raw, the list as the server
// stored it, is that raw entry unchanged, and only new entries are encoded
// from T. T is the kcp 0.28 type the agent computes with; a newer kcp's
// fields on an existing entry (a virtual resource's storage.virtual, a
// claim's defaultSelector) are not in T and would be lost if the merged
// list were written from T. changed reports whether the result holds
// other entries than raw: a list that differs only in order is unchanged
// (the merge sorts, but an administrator's or a GitOps tool's order is not
// rewritten for that alone).
func KeepRaw[T any](raw []any, merged []T) (out []any, changed bool, err error) {
	decoded := make([]T, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("list entry %d is a %T, not an object", i, r)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &decoded[i]); err != nil {
			return nil, false, fmt.Errorf("failed to decode list entry %d: %w", i, err)
		}
	}
	used := make([]bool, len(raw))
	out = make([]any, 0, len(merged))
	for _, e := range merged {
		j := -1
		for i := range decoded {
			if !used[i] && equality.Semantic.DeepEqual(decoded[i], e) {
				j = i
				break
			}
		}
		if j >= 0 {
			used[j] = true
			out = append(out, raw[j])
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
		if err != nil {
			return nil, false, fmt.Errorf("failed to encode list entry: %w", err)
		}
		out = append(out, m)
		changed = true
	}
	// Every merged entry is a raw one: unchanged unless a raw one is left.
	return out, changed || len(out) != len(raw), nil
}
