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

// Package projection turns a source CRD and a PublishedResource into the
// projected CRD that is published into kcp (contract §3.2), and computes the
// name of its APIResourceSchema (§3.3). It is pure: no clients, no I/O.
package projection

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Error is a projection failure caused by the PublishedResource or the
// source type; retrying cannot fix it until one of them changes. Reason is
// the SchemaReady condition reason.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// SourceGK is the group/kind of the source type on the service cluster.
func SourceGK(pr *syncagentv1alpha1.PublishedResource) schema.GroupKind {
	return schema.GroupKind{Group: pr.Spec.Resource.APIGroup, Kind: pr.Spec.Resource.Kind}
}

// HasStatusSubresource reports whether version of crd has a status
// subresource.
func HasStatusSubresource(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return v.Subresources != nil && v.Subresources.Status != nil
		}
	}
	return false
}

// StorageVersion returns the name of the storage version, "" if none.
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// Project applies the PublishedResource's version selection and projection to
// a copy of src and returns it. The steps run in the contract's order, which
// determines the schema name:
//
//  1. drop unselected versions (error if none remains);
//  2. if no remaining version is storage, make the last served one storage
//     (error if none is served);
//  3. rename versions (deprecated single rename without re-sorting, or the
//     map rename, duplicate check and Kubernetes version order);
//  4. group, kind (with list kind, singular, naive plural), plural, scope,
//     categories and short names;
//  5. recompute the CRD name <plural>.<group>.
//
// Protected groups are rejected afterwards, because kcp refuses them.
func Project(src *apiextensionsv1.CustomResourceDefinition, pr *syncagentv1alpha1.PublishedResource) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := src.DeepCopy()
	if err := selectVersions(crd, pr.Spec.Resource); err != nil {
		return nil, err
	}
	if err := ensureStorageVersion(crd); err != nil {
		return nil, err
	}
	if p := pr.Spec.Projection; p != nil {
		if err := renameVersions(crd, p); err != nil {
			return nil, err
		}
		projectNames(crd, p)
	}
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	if IsProtectedGroup(crd.Spec.Group) {
		return nil, errorf(syncagentv1alpha1.ReasonProtectedGroup,
			"kcp does not accept the API group %q (core or *.k8s.io / *.kubernetes.io); set spec.projection.group", crd.Spec.Group)
	}
	return crd, nil
}

func selectVersions(crd *apiextensionsv1.CustomResourceDefinition, res syncagentv1alpha1.SourceResourceDescriptor) error {
	//nolint:staticcheck // the deprecated field must keep working (contract §2.9).
	single := res.Version
	if single != "" && len(res.Versions) > 0 {
		return errorf(syncagentv1alpha1.ReasonVersionSelectionFailed, "spec.resource.version and spec.resource.versions are mutually exclusive")
	}

	crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		switch {
		case single != "":
			return v.Name != single
		case len(res.Versions) > 0:
			return !slices.Contains(res.Versions, v.Name)
		default:
			return false
		}
	})

	if len(crd.Spec.Versions) == 0 {
		switch {
		case single != "":
			return errorf(syncagentv1alpha1.ReasonVersionSelectionFailed, "the source type has no version %q", single)
		case len(res.Versions) > 0:
			return errorf(syncagentv1alpha1.ReasonVersionSelectionFailed, "the source type has none of the versions %v", res.Versions)
		default:
			return errorf(syncagentv1alpha1.ReasonVersionSelectionFailed, "the source type has no versions")
		}
	}
	return nil
}

func ensureStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) error {
	lastServed := -1
	hasStorage := false
	for i, v := range crd.Spec.Versions {
		if v.Served {
			lastServed = i
		}
		hasStorage = hasStorage || v.Storage
	}
	if lastServed < 0 {
		return errorf(syncagentv1alpha1.ReasonVersionSelectionFailed, "none of the selected versions is served")
	}
	if !hasStorage {
		crd.Spec.Versions[lastServed].Storage = true
	}
	return nil
}

func renameVersions(crd *apiextensionsv1.CustomResourceDefinition, p *syncagentv1alpha1.ResourceProjection) error {
	//nolint:staticcheck // the deprecated field must keep working (contract §2.9).
	single := p.Version
	switch {
	case single != "" && len(p.Versions) > 0:
		return errorf(syncagentv1alpha1.ReasonInvalidProjection, "spec.projection.version and spec.projection.versions are mutually exclusive")

	case single != "":
		if n := len(crd.Spec.Versions); n != 1 {
			return errorf(syncagentv1alpha1.ReasonInvalidProjection,
				"spec.projection.version renames a single version, but %d versions are selected; use spec.projection.versions", n)
		}
		crd.Spec.Versions[0].Name = single

	case len(p.Versions) > 0:
		seen := map[string]bool{}
		for i, v := range crd.Spec.Versions {
			if renamed := p.Versions[v.Name]; renamed != "" {
				crd.Spec.Versions[i].Name = renamed
			}
			name := crd.Spec.Versions[i].Name
			if seen[name] {
				return errorf(syncagentv1alpha1.ReasonInvalidProjection, "spec.projection.versions maps two versions onto %q", name)
			}
			seen[name] = true
		}
		slices.SortFunc(crd.Spec.Versions, func(a, b apiextensionsv1.CustomResourceDefinitionVersion) int {
			return version.CompareKubeAwareVersionStrings(a.Name, b.Name)
		})
	}
	return nil
}

func projectNames(crd *apiextensionsv1.CustomResourceDefinition, p *syncagentv1alpha1.ResourceProjection) {
	names := &crd.Spec.Names
	if p.Group != "" {
		crd.Spec.Group = p.Group
	}
	if p.Kind != "" {
		names.Kind = p.Kind
		names.ListKind = p.Kind + "List"
		names.Singular = strings.ToLower(p.Kind)
		names.Plural = names.Singular + "s"
	}
	if p.Plural != "" {
		names.Plural = p.Plural
	}
	if p.Scope != "" {
		crd.Spec.Scope = apiextensionsv1.ResourceScope(p.Scope)
	}
	if p.Categories != nil {
		names.Categories = p.Categories
	}
	if p.ShortNames != nil {
		names.ShortNames = p.ShortNames
	}
}

// IsProtectedGroup reports whether kcp refuses CRDs of this group: the core
// group and the groups reserved by Kubernetes.
func IsProtectedGroup(group string) bool {
	return group == "" ||
		group == "k8s.io" || strings.HasSuffix(group, ".k8s.io") ||
		group == "kubernetes.io" || strings.HasSuffix(group, ".kubernetes.io")
}

// GVK returns the group/version/kind of a CRD's storage version: applied to
// the source CRD it is the local GVK, applied to the projected CRD the kcp GVK.
func GVK(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: crd.Spec.Group, Version: StorageVersion(crd), Kind: crd.Spec.Names.Kind}
}
