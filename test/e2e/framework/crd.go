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

package framework

import (
	"context"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestCRD returns a namespaced CRD <plural>.<group> with a status
// subresource and the given versions; the last one is the storage version.
// Each version's spec has a string field "color" and, to tell versions
// apart, a field named after the version.
func TestCRD(group, kind string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == len(versions)-1,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"color": {Type: "string"},
						v:       {Type: "string"},
					}},
					"status": {Type: "object", XPreserveUnknownFields: ptr(true)},
				},
			}},
		})
	}
	return crd
}

func ptr[T any](v T) *T { return &v }

// crdEstablishedTimeout bounds the wait for a new CRD to be served.
const crdEstablishedTimeout = time.Minute

// InstallCRD creates (or updates) a CRD and waits until it is established.
func (s *ServiceCluster) InstallCRD(t T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	existing := &apiextensionsv1.CustomResourceDefinition{}
	if err := s.Client.Get(t.Context(), types.NamespacedName{Name: crd.Name}, existing); err == nil {
		existing.Spec = crd.Spec
		Must(t, s.Client.Update(t.Context(), existing), "update CRD %s", crd.Name)
	} else {
		Must(t, s.Client.Create(t.Context(), crd), "create CRD %s", crd.Name)
	}
	s.waitEstablished(t, crd.Name)
}

func (s *ServiceCluster) waitEstablished(t T, name string) {
	t.Helper()
	WaitFor(t, crdEstablishedTimeout, "CRD "+name+" to be established", func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := s.Client.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// WaitForPublishedResource waits until cond holds for the named
// PublishedResource and returns it.
func (s *ServiceCluster) WaitForPublishedResource(t T, name string, timeout time.Duration, what string, cond func(*syncagentv1alpha1.PublishedResource) bool) *syncagentv1alpha1.PublishedResource {
	t.Helper()
	pr := &syncagentv1alpha1.PublishedResource{}
	WaitFor(t, timeout, "PublishedResource "+name+": "+what, func(ctx context.Context) (bool, error) {
		if err := s.Client.Get(ctx, types.NamespacedName{Name: name}, pr); err != nil {
			return false, err
		}
		return cond(pr), nil
	})
	return pr
}

// HasCondition returns a predicate for WaitForPublishedResource: the
// condition has the given status and reason for the current generation.
func HasCondition(condType string, status metav1.ConditionStatus, reason string) func(*syncagentv1alpha1.PublishedResource) bool {
	return func(pr *syncagentv1alpha1.PublishedResource) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, condType)
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == pr.Generation
	}
}
