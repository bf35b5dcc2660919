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
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// TestRecords: values per object, a count over all workspaces, and a
// workspace's records dropped at once.
func TestRecords(t *testing.T) {
	req := func(ws, name string) mcreconcile.Request {
		return mcreconcile.Request{ClusterName: ws, Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}}
	}
	r := newRecords[int]()
	for i, step := range []struct {
		do      func()
		wantLen int
		wantWS  int
	}{
		{do: func() { r.set(req("a", "x"), 1); r.set(req("a", "y"), 2); r.set(req("b", "x"), 3) }, wantLen: 3, wantWS: 2},
		{do: func() { r.set(req("a", "x"), 4) }, wantLen: 3, wantWS: 2}, // an update counts once
		{do: func() { r.delete(req("a", "nothing")); r.delete(req("c", "x")) }, wantLen: 3, wantWS: 2},
		{do: func() { r.delete(req("b", "x")) }, wantLen: 2, wantWS: 1}, // a workspace's last record takes its map along
		{do: func() { r.dropWorkspace("a"); r.dropWorkspace("c") }, wantLen: 0, wantWS: 0},
	} {
		step.do()
		if r.len() != step.wantLen || len(r.byWorkspace) != step.wantWS {
			t.Errorf("step %d: len %d over %d workspaces, want %d over %d", i, r.len(), len(r.byWorkspace), step.wantLen, step.wantWS)
		}
	}
	r.set(req("a", "x"), 5)
	if v, ok := r.get(req("a", "x")); !ok || v != 5 {
		t.Errorf("get = %d, %v; want 5", v, ok)
	}
	if _, ok := r.get(req("b", "x")); ok {
		t.Error("a deleted record is still there")
	}
}
