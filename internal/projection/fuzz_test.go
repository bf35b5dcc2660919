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

package projection

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// FuzzProject: any projection a service owner writes either fails with a
// reason or gives a CRD whose name is <plural>.<group>, with exactly one
// storage version and distinct version names; it
// never panics and never changes the source CRD.
func FuzzProject(f *testing.F) {
	f.Add("v1", "", "kcp.example.com", "Widget", "widgets", "Namespaced", "v1", "v2")
	f.Add("", "v1beta1", "", "", "", "Cluster", "v1beta1", "v1")
	f.Add("v9", "", "apps.k8s.io", "X", "", "", "", "")
	f.Add("", "", "a", "B", "c", "Global", "v2", "v1")
	f.Fuzz(func(t *testing.T, selectVersion, projVersion, group, kind, plural, scope, renameFrom, renameTo string) {
		src := testCRD(ver{"v1beta1", true, false}, ver{"v1", true, true}, ver{"v2", false, false})
		before := src.DeepCopy()
		p := &syncagentv1alpha1.ResourceProjection{Group: group, Kind: kind, Plural: plural, Scope: syncagentv1alpha1.ResourceScope(scope)}
		p.Version = projVersion
		if renameFrom != "" {
			p.Versions = map[string]string{renameFrom: renameTo}
		}
		var res syncagentv1alpha1.SourceResourceDescriptor
		if selectVersion != "" {
			res.Versions = []string{selectVersion}
		}
		crd, err := Project(src, pr(res, p))
		if !equalCRD(before, src) {
			t.Fatal("Project changed its input")
		}
		if err != nil {
			return
		}
		if crd.Name != crd.Spec.Names.Plural+"."+crd.Spec.Group {
			t.Errorf("name %q is not <plural>.<group> (%q, %q)", crd.Name, crd.Spec.Names.Plural, crd.Spec.Group)
		}
		storage, seen := 0, map[string]bool{}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage++
			}
			if seen[v.Name] {
				t.Errorf("version %q twice", v.Name)
			}
			seen[v.Name] = true
		}
		if storage != 1 {
			t.Errorf("%d storage versions, want 1: %+v", storage, summarize(crd).Versions)
		}
	})
}

func equalCRD(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }
