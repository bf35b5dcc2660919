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

package chart

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestCRDCopyIsCurrent fails when the chart's copy of the CRDs differs
// from deploy/crd (run `make chart-crds`), and checks that the rendered CRD
// is that copy plus only the chart's labels and the keep annotation.
func TestCRDCopyIsCurrent(t *testing.T) {
	src, err := filepath.Glob(filepath.Join(CRDSourceDir(), "*.yaml"))
	if err != nil || len(src) == 0 {
		t.Fatalf("no CRDs in %s: %v", CRDSourceDir(), err)
	}
	copies, _ := filepath.Glob(filepath.Join(Dir(), "crd", "*.yaml"))
	names := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	diff(t, "CRD files in the chart (run `make chart-crds`)", names(src), names(copies))

	objs := render(t, required())
	for _, p := range src {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(Dir(), "crd", filepath.Base(p)))
		if err != nil {
			continue // reported above
		}
		if string(want) != string(got) {
			t.Errorf("%s is stale: run `make chart-crds`", filepath.Join("deploy/charts/api-syncagent/crd", filepath.Base(p)))
		}

		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(want, crd); err != nil {
			t.Fatal(err)
		}
		rendered := get[apiextensionsv1.CustomResourceDefinition](t, objs, "CustomResourceDefinition", crd.Name)
		if rendered.Annotations["helm.sh/resource-policy"] != "keep" || rendered.Labels["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("rendered CRD %s lacks the keep annotation or the chart labels: %v %v", crd.Name, rendered.Annotations, rendered.Labels)
		}
		delete(rendered.Annotations, "helm.sh/resource-policy")
		rendered.Labels = nil
		diff(t, "rendered CRD "+crd.Name+" (besides the chart's metadata)", crd, rendered)
	}

	for _, o := range render(t, with(map[string]any{"crds": map[string]any{"enabled": false}})) {
		if o.GetKind() == "CustomResourceDefinition" {
			t.Errorf("CRD %s rendered with crds.enabled=false", o.GetName())
		}
	}
}
