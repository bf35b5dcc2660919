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

package validation

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"
)

// TestCRDsAreAccepted validates the shipped CRDs as the API server does
// when they are created (structural schema, CEL rules within their cost
// budget): a rule over an unbounded list or string can make the whole CRD
// refused, which no Go test of the types would notice.
func TestCRDsAreAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "crd", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			v1 := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(raw, v1); err != nil {
				t.Fatal(err)
			}
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, internal, nil); err != nil {
				t.Fatal(err)
			}
			if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
				t.Fatalf("the API server would refuse the CRD: %v", errs.ToAggregate())
			}
		})
	}
}
