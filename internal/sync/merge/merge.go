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

// Package merge computes spec updates of local copies (contract §6.5). With
// a stored last-known state it is a three-way merge: an RFC 7386 JSON merge
// patch from the last state to the desired state, so fields that only the
// service side set (defaults, webhooks, operators) survive until the same
// field changes in kcp. Without a state it overwrites every top-level field
// of the desired state and merges labels and annotations, and reports
// whether that changed anything, so an unchanged object is not written.
package merge

import (
	"encoding/json"
	"fmt"
	"maps"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ThreeWay returns the merge patch that turns last into desired, or nil when
// they do not differ. Lists that changed are replaced as a whole; fields
// removed in desired are removed (null in the patch). Labels and
// annotations are patched key by key: a key that left desired is removed,
// the others (set on the service side) stay, and metadata itself is never
// dropped (the API server refuses an object without it).
func ThreeWay(last, desired map[string]any) ([]byte, error) {
	desired = keepMetadataMaps(last, desired)
	lastJSON, err := json.Marshal(last)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the last state: %w", err)
	}
	desiredJSON, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the desired state: %w", err)
	}
	patch, err := jsonpatch.CreateMergePatch(lastJSON, desiredJSON)
	if err != nil {
		return nil, fmt.Errorf("failed to compute the merge patch: %w", err)
	}
	if string(patch) == "{}" {
		return nil, nil
	}
	return patch, nil
}

// keepMetadataMaps returns desired with an empty labels or annotations map
// (and metadata) wherever last has one and desired has none, so that the
// merge patch removes last's keys one by one instead of the whole map. The
// caller's map is not modified.
func keepMetadataMaps(last, desired map[string]any) map[string]any {
	lastMeta, _ := last["metadata"].(map[string]any)
	if len(lastMeta) == 0 {
		return desired
	}
	meta, _ := desired["metadata"].(map[string]any)
	var added map[string]any
	for _, k := range []string{"labels", "annotations"} {
		if _, had := lastMeta[k].(map[string]any); !had {
			continue
		}
		if _, has := meta[k].(map[string]any); has {
			continue
		}
		if added == nil {
			added = maps.Clone(meta)
			if added == nil {
				added = map[string]any{}
			}
		}
		added[k] = map[string]any{}
	}
	if added == nil {
		return desired
	}
	out := maps.Clone(desired)
	out["metadata"] = added
	return out
}

// Overwrite applies desired to local when no last state is known: every
// top-level field except apiVersion, kind and metadata replaces the local
// one, and desired's labels and annotations are merged into local's. It
// reports whether local changed.
func Overwrite(local *unstructured.Unstructured, desired map[string]any) bool {
	before := local.DeepCopy()
	for k, v := range desired {
		switch k {
		case "apiVersion", "kind", "metadata":
			continue
		}
		local.Object[k] = runtime.DeepCopyJSONValue(v)
	}
	d := &unstructured.Unstructured{Object: desired}
	if l := d.GetLabels(); len(l) > 0 {
		local.SetLabels(WithEntries(local.GetLabels(), l))
	}
	if a := d.GetAnnotations(); len(a) > 0 {
		local.SetAnnotations(WithEntries(local.GetAnnotations(), a))
	}
	return !equality.Semantic.DeepEqual(before.Object, local.Object)
}

// WithEntries copies add into m (allocating m if nil) and returns it.
func WithEntries(m, add map[string]string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, add)
	return m
}

// Drifted reports whether a field the desired state owns differs on
// local: desired, written onto local as a JSON merge patch (maps merged
// key by key; of the metadata only labels and annotations), would change
// it. Fields only local has (set on the service side) are no drift, and
// lists are compared item by item in the same way, so that a field the
// API server defaults inside a list item is no drift either (a list of
// another length is).
func Drifted(local, desired map[string]any) bool {
	for k, v := range desired {
		switch k {
		case "apiVersion", "kind":
			continue
		case "metadata":
			meta, _ := v.(map[string]any)
			have, _ := local["metadata"].(map[string]any)
			for _, key := range []string{"labels", "annotations"} {
				if want, ok := meta[key].(map[string]any); ok && len(want) > 0 {
					got, _ := have[key].(map[string]any)
					if Drifted(got, want) {
						return true
					}
				}
			}
			continue
		}
		if differs(local[k], v) {
			return true
		}
	}
	return false
}

func differs(have, want any) bool {
	if wantList, ok := want.([]any); ok {
		// Item by item, so that fields the service side defaults inside
		// list items (a container's imagePullPolicy) are no drift; a list
		// of another length is.
		haveList, ok := have.([]any)
		if !ok || len(haveList) != len(wantList) {
			return true
		}
		for i := range wantList {
			if differs(haveList[i], wantList[i]) {
				return true
			}
		}
		return false
	}
	wantMap, ok := want.(map[string]any)
	if !ok {
		return !equality.Semantic.DeepEqual(have, want)
	}
	haveMap, ok := have.(map[string]any)
	if !ok {
		return true
	}
	for k, v := range wantMap {
		if v == nil {
			// A null in a merge patch removes the key.
			if _, present := haveMap[k]; present {
				return true
			}
			continue
		}
		if differs(haveMap[k], v) {
			return true
		}
	}
	return false
}
