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

package sync

import (
	"k8s.io/apimachinery/pkg/types"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// records holds a value per object, grouped by workspace, so that a
// workspace's records go at once when it disengages (O(1), whatever the
// other workspaces hold). Not safe for concurrent use: the reconciler
// guards its records with streakMu.
type records[V any] struct {
	byWorkspace map[string]map[types.NamespacedName]V
	n           int
}

func newRecords[V any]() *records[V] {
	return &records[V]{byWorkspace: map[string]map[types.NamespacedName]V{}}
}

func (r *records[V]) get(req mcreconcile.Request) (V, bool) {
	v, ok := r.byWorkspace[req.ClusterName][req.NamespacedName]
	return v, ok
}

func (r *records[V]) set(req mcreconcile.Request, v V) {
	ws := r.byWorkspace[req.ClusterName]
	if ws == nil {
		ws = map[types.NamespacedName]V{}
		r.byWorkspace[req.ClusterName] = ws
	}
	if _, ok := ws[req.NamespacedName]; !ok {
		r.n++
	}
	ws[req.NamespacedName] = v
}

func (r *records[V]) delete(req mcreconcile.Request) {
	ws := r.byWorkspace[req.ClusterName]
	if _, ok := ws[req.NamespacedName]; !ok {
		return
	}
	r.n--
	if len(ws) == 1 {
		delete(r.byWorkspace, req.ClusterName)
		return
	}
	delete(ws, req.NamespacedName)
}

// dropWorkspace removes every record of a workspace.
func (r *records[V]) dropWorkspace(name string) {
	r.n -= len(r.byWorkspace[name])
	delete(r.byWorkspace, name)
}

func (r *records[V]) len() int { return r.n }
