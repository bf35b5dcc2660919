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

package discovery

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kube-openapi/pkg/util/proto"

	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// referenceDir holds what hack/refschema computed with kcp's crdpuller
// against the test bed's kube-apiserver: the inputs (discovery, OpenAPI v2)
// and the reference's CRD and schema name of each built-in kind. `make
// golden-schemas` regenerates it; the e2e test TestBuiltinSchemasMatchReference
// checks that it is current and that the agent publishes these names.
const referenceDir = "testdata/reference"

// referenceGroup is the group names.json was computed for.
const referenceGroup = "golden.example.com"

type referenceInputs struct {
	GroupsAndResources []*metav1.APIResourceList `json:"groupsAndResources"`
	PreferredResources []*metav1.APIResourceList `json:"preferredResources"`
	models             map[schema.GroupVersionKind]proto.Schema
}

func loadReferenceInputs(t *testing.T) *referenceInputs {
	t.Helper()
	in := &referenceInputs{}
	readJSON(t, filepath.Join(referenceDir, "discovery.json"), in)
	models, err := proto.NewOpenAPIData(goldenDocument(t))
	if err != nil {
		t.Fatal(err)
	}
	in.models = modelsByGVK(models)
	return in
}

// build finds gk in the golden discovery lists and builds its CRD, as
// Resolve does for a kind without a CRD.
func (in *referenceInputs) build(gk schema.GroupKind, preferred []*metav1.APIResourceList, models map[schema.GroupVersionKind]proto.Schema) (*apiextensionsv1.CustomResourceDefinition, error) {
	kr, err := findKind(in.GroupsAndResources, gk)
	if err != nil {
		return nil, err
	}
	return builtinCRD(gk, kr, preferred, models)
}

// referenceSchemaName projects crd into referenceGroup as the agent does
// and returns the schema's name.
func referenceSchemaName(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, group, kind string) string {
	t.Helper()
	pr := &syncagentv1alpha1.PublishedResource{Spec: syncagentv1alpha1.PublishedResourceSpec{
		Resource:   syncagentv1alpha1.SourceResourceDescriptor{APIGroup: group, Kind: kind},
		Projection: &syncagentv1alpha1.ResourceProjection{Group: referenceGroup},
	}}
	projected, err := projection.Project(crd, pr)
	if err != nil {
		t.Fatal(err)
	}
	name, err := projection.SchemaName(projected)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestBuiltinCRD_matchesReference builds every golden kind from the golden
// inputs and compares with the reference's CRD, then projects it as the
// agent does and compares the schema name with the reference's.
func TestBuiltinCRD_matchesReference(t *testing.T) {
	in := loadReferenceInputs(t)
	names := map[string]string{}
	readJSON(t, filepath.Join(referenceDir, "names.json"), &names)
	if len(names) < 4 {
		t.Fatalf("names.json lists %d kinds, want at least ConfigMap, Secret, Role and Deployment", len(names))
	}
	for id, wantName := range names {
		t.Run(id, func(t *testing.T) {
			kind, group, _ := strings.Cut(id, ".")
			if group == "core" {
				group = ""
			}
			want := &apiextensionsv1.CustomResourceDefinition{}
			readJSON(t, filepath.Join(referenceDir, id+".json"), want)

			got, err := in.build(schema.GroupKind{Group: group, Kind: kind}, in.PreferredResources, in.models)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("spec differs from the reference (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want.Name, got.Name); diff != "" {
				t.Errorf("name differs from the reference (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want.Annotations, got.Annotations); diff != "" {
				t.Errorf("annotations differ from the reference (-want +got):\n%s", diff)
			}

			name := referenceSchemaName(t, got, group, kind)
			if name != wantName {
				t.Errorf("schema name %s, the reference's is %s", name, wantName)
			}
		})
	}
}

// TestBuiltinCRD_notServed: a kind that discovery does not list is a
// NotFoundError; a kind without an OpenAPI model or preferred version is an
// error that says so.
func TestBuiltinCRD_notServed(t *testing.T) {
	in := loadReferenceInputs(t)
	_, err := in.build(schema.GroupKind{Group: "apps", Kind: "Nothing"}, in.PreferredResources, in.models)
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Errorf("err = %v, want a NotFoundError", err)
	}
	_, err = in.build(schema.GroupKind{Group: "apps", Kind: "Deployment"}, nil, in.models)
	if err == nil || !strings.Contains(err.Error(), "storage version") {
		t.Errorf("err = %v, want one about the storage version", err)
	}
	_, err = in.build(schema.GroupKind{Group: "apps", Kind: "Deployment"}, in.PreferredResources, nil)
	if err == nil || !strings.Contains(err.Error(), "no model for apps/v1, Kind=Deployment") {
		t.Errorf("err = %v, want one about the missing model", err)
	}
}

// TestFindKind_subresourcesOfTheListsVersion: the API server leaves a
// subresource's group and version empty when they are its parent's; the
// status of a built-in type is still found (keyed by the version of the
// list that names it), and a scale subresource that serves another kind
// (autoscaling/Scale) is not the type's.
func TestFindKind_subresourcesOfTheListsVersion(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true},
			{Name: "deployments/scale", Group: "autoscaling", Version: "v1", Kind: "Scale", Namespaced: true},
		}},
		{GroupVersion: "apps/v1beta2", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true},
			{Name: "deployments/status", Group: "apps", Version: "v1beta2", Kind: "Deployment", Namespaced: true},
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			{Name: "jobs/status", Kind: "Job", Namespaced: true},
		}},
	}
	kr, err := findKind(lists, schema.GroupKind{Group: "apps", Kind: "Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for v, subs := range kr.subresources {
		got[v] = sets.List(subs)
	}
	want := map[string][]string{"v1": {"status"}, "v1beta2": {"status"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subresources by version (-want +got):\n%s", diff)
	}
}

// TestBuiltinCRD_referenceV070Names: the reference's releases up to v0.7.0
// built the same CRDs without any subresource; stripped of theirs, the
// golden kinds get the schema names those releases published (computed by
// hack/refschema before subresources were keyed by the list's version).
// docs/migrating.md's account of a switch from them rests on this.
func TestBuiltinCRD_referenceV070Names(t *testing.T) {
	in := loadReferenceInputs(t)
	for id, want := range map[string]string{
		"Deployment.apps":                     "v6f498501.deployments.golden.example.com",
		"HorizontalPodAutoscaler.autoscaling": "ve6ecb51f.horizontalpodautoscalers.golden.example.com",
		"ConfigMap.core":                      "v92e78a63.configmaps.golden.example.com",
	} {
		t.Run(id, func(t *testing.T) {
			kind, group, _ := strings.Cut(id, ".")
			if group == "core" {
				group = ""
			}
			crd, err := in.build(schema.GroupKind{Group: group, Kind: kind}, in.PreferredResources, in.models)
			if err != nil {
				t.Fatal(err)
			}
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Subresources = &apiextensionsv1.CustomResourceSubresources{}
			}
			name := referenceSchemaName(t, crd, group, kind)
			if name != want {
				t.Errorf("schema name %s, the reference's v0.7.0 is %s", name, want)
			}
		})
	}
}
