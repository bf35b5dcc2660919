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
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/util/proto"
)

// apiApprovedValue is what the reference writes into the api-approved
// annotation of CRDs it builds for protected groups.
const apiApprovedValue = "https://github.com/kcp-dev/kubernetes/pull/4"

// kindResource is what discovery says about a kind within its group: the
// resource (the last list that serves it has the final word, as in the
// reference), the versions that serve it, and its subresources by the
// version of the list that names them.
type kindResource struct {
	resource     metav1.APIResource
	versions     sets.Set[string]
	subresources map[string]sets.Set[string]
}

// findKind collects what discovery says about gk. Versions and
// subresources are keyed by the GroupVersion of the list that names them:
// the API server leaves a subresource's own group and version empty when
// they are its parent's, so keyed by those, a built-in type's status would
// be lost (the reference's releases up to v0.7.0 lost it, and with it every
// status written back to kcp). Subresources count only with gk's kind, as
// in the reference: a built-in type's scale subresource serves the kind
// autoscaling/Scale and is not published.
func findKind(lists []*metav1.APIResourceList, gk schema.GroupKind) (*kindResource, error) {
	var found *kindResource
	versions := sets.New[string]()
	subresources := map[string]sets.Set[string]{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || gv.Group != gk.Group {
			continue // (an unparseable group version is no group of ours)
		}
		for _, res := range list.APIResources {
			if res.Kind != gk.Kind {
				continue
			}
			if _, sub, ok := strings.Cut(res.Name, "/"); ok {
				if subresources[gv.Version] == nil {
					subresources[gv.Version] = sets.New[string]()
				}
				subresources[gv.Version].Insert(sub)
			} else {
				found = &kindResource{resource: res}
			}
			versions.Insert(gv.Version)
		}
	}
	if found == nil {
		return nil, &NotFoundError{GK: gk}
	}
	found.resource.Group = gk.Group
	found.versions = versions
	found.subresources = subresources
	return found, nil
}

// preferredVersion is the version in which the preferred-resources lists
// name the resource (the first list of its group that does).
func preferredVersion(preferred []*metav1.APIResourceList, group, resource string) string {
	for _, list := range preferred {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || gv.Group != group {
			continue
		}
		for _, res := range list.APIResources {
			if res.Name == resource {
				return gv.Version
			}
		}
	}
	return ""
}

// builtinCRD builds the CRD of a built-in or aggregated type, found in
// discovery as kr, exactly as the reference does: names and scope from
// discovery; every version that serves the kind, in Kubernetes version
// order, served, the preferred one as storage, with its schema converted
// from the OpenAPI v2 model; the subresources found by findKind; the API
// server's CRD defaults; and for protected groups the api-approved
// annotation.
func builtinCRD(gk schema.GroupKind, kr *kindResource, preferred []*metav1.APIResourceList, models map[schema.GroupVersionKind]proto.Schema) (*apiextensionsv1.CustomResourceDefinition, error) {
	res := kr.resource
	storage := preferredVersion(preferred, gk.Group, res.Name)
	if storage == "" {
		return nil, errors.New("cannot determine the storage version: discovery prefers no version of the resource")
	}
	scope := apiextensionsv1.ClusterScoped
	if res.Namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdName(res.Name, gk.Group)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gk.Group,
			Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: res.Name, Singular: res.SingularName, Kind: res.Kind,
				ShortNames: res.ShortNames, Categories: res.Categories,
			},
		},
	}
	versions := sets.List(kr.versions)
	slices.SortFunc(versions, version.CompareKubeAwareVersionStrings)
	for _, v := range versions {
		model := models[gk.WithVersion(v)]
		if model == nil {
			return nil, &missingModelError{gvk: gk.WithVersion(v)}
		}
		props, err := convertModel(model)
		if err != nil {
			return nil, err
		}
		sub := &apiextensionsv1.CustomResourceSubresources{}
		if kr.subresources[v].Has("status") {
			sub.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
		}
		if kr.subresources[v].Has("scale") {
			sub.Scale = &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}
		}
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == storage,
			Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
			Subresources: sub,
		})
	}
	apiextensionsv1.SetDefaults_CustomResourceDefinition(crd)
	if apihelpers.IsProtectedCommunityGroup(gk.Group) {
		crd.Annotations = map[string]string{AnnotationAPIApproved: apiApprovedValue}
	}
	return crd, nil
}

// missingModelError means the OpenAPI v2 document has no model for a
// version that discovery lists.
type missingModelError struct{ gvk schema.GroupVersionKind }

func (e *missingModelError) Error() string {
	return fmt.Sprintf("the service cluster's OpenAPI v2 document has no model for %s", e.gvk)
}

// crdName is the name a CRD of the resource would have ("core" for the
// core group).
func crdName(plural, group string) string {
	if group == "" {
		return plural + ".core"
	}
	return plural + "." + group
}

func ptrTrue() *bool { t := true; return &t }
