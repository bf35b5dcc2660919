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

// Package preview shows, without contacting kcp, what a PublishedResource
// would publish and what the sync would do with sample kcp objects (the
// api-syncagent preview command). It runs the agent's own code: the
// validation behind ConfigValid, the projection, the schema, the
// permission claims, the compiled naming, mutation and related rules, and
// the syncer's computation of a new local copy and of the status for kcp.
package preview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/export"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
	"github.com/kcp-syncagent/api-syncagent/internal/validation"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Input is what a preview needs.
type Input struct {
	PublishedResource *syncagentv1alpha1.PublishedResource
	// Source is the source type as a CRD (a built-in type converted the
	// way the agent converts it).
	Source *apiextensionsv1.CustomResourceDefinition
	// Objects are sample kcp objects: of the published type (a status in
	// one stands for the status the service reports on its local copy), of
	// a kcp-side related type, or Namespaces (their labels decide
	// spec.filter.namespace).
	Objects []*unstructured.Unstructured
	// ServiceObjects are samples of service-side related objects, of
	// objects of the source type that ask to be imported, and Namespaces.
	ServiceObjects []*unstructured.Unstructured
	// AgentName goes into the labels; Workspace and WorkspacePath are the
	// samples' logical cluster name and path.
	AgentName, Workspace, WorkspacePath string
	// TypeInfo finds a related type on the service cluster (and, the same,
	// in kcp).
	TypeInfo func(schema.GroupVersionResource) (discovery.TypeInfo, error)
	// NamespaceMetadata is the agent's --namespace-label and
	// --namespace-annotation (nil: none).
	NamespaceMetadata *nsmeta.Metadata
}

// Output is what the preview shows.
type Output struct {
	// ConfigValid is the condition the agent would write.
	ConfigValid       metav1.Condition                          `json:"configValid"`
	ProjectedCRD      *apiextensionsv1.CustomResourceDefinition `json:"projectedCRD"`
	APIResourceSchema *kcpapisv1alpha1.APIResourceSchema        `json:"apiResourceSchema"`
	// PermissionClaims are the claims the agent adds to an APIExport that
	// has none (an administrator's own claims are kept).
	PermissionClaims []kcpapisv1alpha2.PermissionClaim `json:"permissionClaims"`
	Objects          []Object                          `json:"objects,omitempty"`
	// Imports are what the import requests among the service-side
	// samples would do.
	Imports []Import `json:"imports,omitempty"`
}

// Object is what the sync would do with one sample.
type Object struct {
	// Kcp names the sample (namespace/name).
	Kcp string `json:"kcp"`
	// Skipped says why the sample would not be synced.
	Skipped string `json:"skipped,omitempty"`
	// Notes say what the preview could not decide, or what else happens.
	Notes []string `json:"notes,omitempty"`
	// LocalName and LocalNamespace are the local copy's name.
	LocalName      string `json:"localName,omitempty"`
	LocalNamespace string `json:"localNamespace,omitempty"`
	// CreatedNamespace is the metadata of the local namespace if the agent
	// creates it (it does when the namespace does not exist yet).
	CreatedNamespace *NamespaceMetadata `json:"createdNamespace,omitempty"`
	// Deletion says what happens to the local copy when the kcp object is
	// deleted (its deletion propagation policy).
	Deletion string `json:"deletion,omitempty"`
	// Local is the local copy the agent would create.
	Local *unstructured.Unstructured `json:"local,omitempty"`
	// StatusToKcp is the status the agent would write into kcp from the
	// sample's status (after the status mutations).
	StatusToKcp any       `json:"statusToKcp,omitempty"`
	Related     []Related `json:"related,omitempty"`
	// References say what each spec.references field the sample fills
	// becomes.
	References []string `json:"references,omitempty"`
}

// NamespaceMetadata is the labels and annotations of a namespace the
// agent creates.
type NamespaceMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Related is what one related entry would look for and copy.
type Related struct {
	Identifier string `json:"identifier"`
	// Origin is the side the objects come from: kcp or service.
	Origin string `json:"origin"`
	// Lookups are the reads the resolution makes, in order.
	Lookups []string `json:"lookups"`
	// Copies are origin → destination (namespace/name); an origin that is
	// no sample is assumed to exist.
	Copies []string `json:"copies,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// InvalidError is a configuration the agent would refuse (ConfigValid
// False), with its messages.
type InvalidError struct{ Messages []string }

func (e *InvalidError) Error() string {
	return "invalid PublishedResource: " + strings.Join(e.Messages, "; ")
}

// Run computes the preview.
func Run(ctx context.Context, in Input) (*Output, error) {
	pr, src := in.PublishedResource, in.Source
	if pr == nil || src == nil {
		return nil, errors.New("a PublishedResource and its source CRD are needed")
	}
	if gk := projection.SourceGK(pr); gk != (schema.GroupKind{Group: src.Spec.Group, Kind: src.Spec.Names.Kind}) {
		return nil, fmt.Errorf("the PublishedResource publishes %s, the source CRD is of %s.%s", gk, src.Spec.Names.Kind, src.Spec.Group)
	}
	projected, projErr := projection.Project(src, pr)
	vin := validation.Input{LocalScope: src.Spec.Scope}
	if projected != nil {
		vin.KcpScope = projected.Spec.Scope
	}
	checked := validation.Check(pr, vin)
	out := &Output{ConfigValid: checked.Condition()}
	if len(checked.Invalid) > 0 {
		return out, &InvalidError{Messages: checked.Invalid}
	}
	if projErr != nil {
		return out, fmt.Errorf("projection: %w", projErr)
	}
	out.ProjectedCRD = projected
	ars, err := projection.Schema(src, projected, in.AgentName)
	if err != nil {
		return out, err
	}
	out.APIResourceSchema = ars
	projectedGR := schema.GroupResource{Group: projected.Spec.Group, Resource: projected.Spec.Names.Plural}
	out.PermissionClaims, _ = export.MergeClaims(nil, export.RequiredClaims([]syncagentv1alpha1.PublishedResource{*pr}, sets.New(projectedGR)))

	var types []related.Types
	for i := range pr.Spec.Related {
		kcpGVR, serviceGVR := related.GVRs(&pr.Spec.Related[i])
		t := related.Types{Kcp: related.Type{GVR: kcpGVR}, Service: related.Type{GVR: serviceGVR}}
		if t.Kcp.TypeInfo, err = in.typeInfo(kcpGVR, projected); err != nil {
			return out, fmt.Errorf("spec.related[%d] in kcp: %w", i, err)
		}
		if t.Service.TypeInfo, err = in.typeInfo(serviceGVR, src); err != nil {
			return out, fmt.Errorf("spec.related[%d] on the service cluster: %w", i, err)
		}
		types = append(types, t)
	}
	rules, err := syncer.Compile(pr, types)
	if err != nil {
		return out, &InvalidError{Messages: []string{err.Error()}}
	}
	s := &syncer.Syncer{
		AgentName:         in.AgentName,
		LocalGVK:          projection.GVK(src),
		LocalNamespaced:   src.Spec.Scope == apiextensionsv1.NamespaceScoped,
		StatusSubresource: projection.HasStatusSubresource(src, projection.StorageVersion(src)),
		Namer:             rules.Namer,
		NamespaceMetadata: in.NamespaceMetadata,
		SpecMutator:       rules.SpecMutator,
		StatusMutator:     rules.StatusMutator,
		Related:           rules.Related,
	}
	remote := projection.GVK(projected)
	kcpRelated := sets.New[schema.GroupKind]()
	for _, t := range types {
		kcpRelated.Insert(t.Kcp.GVK.GroupKind())
	}
	samples := map[related.Side][]*unstructured.Unstructured{}
	var asking []*unstructured.Unstructured
	serviceNamespaces := map[string]map[string]string{}
	for _, obj := range in.ServiceObjects {
		switch {
		case asksForImport(obj, s.LocalGVK):
			asking = append(asking, obj)
		case obj.GroupVersionKind().GroupKind() == schema.GroupKind{Kind: "Namespace"}:
			serviceNamespaces[obj.GetName()] = obj.GetLabels()
			samples[related.SideService] = append(samples[related.SideService], obj)
		default:
			samples[related.SideService] = append(samples[related.SideService], obj)
		}
	}
	var primaries []*unstructured.Unstructured
	namespaces := map[string]map[string]string{}
	for _, obj := range in.Objects {
		if obj.GetName() == "" {
			return out, fmt.Errorf("a %s sample without metadata.name", obj.GetKind())
		}
		switch gk := obj.GroupVersionKind().GroupKind(); {
		case gk == remote.GroupKind():
			if namespaced := projected.Spec.Scope == apiextensionsv1.NamespaceScoped; namespaced != (obj.GetNamespace() != "") {
				return out, fmt.Errorf("object %s: %s is %s in kcp, the sample %s a namespace", qualified(obj), gk, scopeWord(namespaced), hasWord(obj.GetNamespace() != ""))
			}
			primaries = append(primaries, obj)
		case kcpRelated.Has(gk):
			samples[related.SideKcp] = append(samples[related.SideKcp], obj)
		case gk == schema.GroupKind{Kind: "Namespace"}:
			namespaces[obj.GetName()] = obj.GetLabels()
			samples[related.SideKcp] = append(samples[related.SideKcp], obj)
		default:
			return out, fmt.Errorf("object %s is a %s: the PublishedResource publishes %s and has no related %s in kcp", qualified(obj), gk, remote.GroupKind(), gk)
		}
	}
	disabled := pr.Spec.Synchronization != nil && !pr.Spec.Synchronization.Enabled
	for _, obj := range primaries {
		if disabled {
			out.Objects = append(out.Objects, Object{Kcp: qualified(obj), Skipped: "synchronization is disabled (spec.synchronization.enabled: false): new objects are not synced; deletions of objects synced earlier still are"})
			continue
		}
		o, err := in.object(ctx, s, rules, remote.GroupKind(), primaries, samples, namespaces, obj)
		if err != nil {
			return out, fmt.Errorf("object %s: %w", qualified(obj), err)
		}
		out.Objects = append(out.Objects, o)
	}
	kcpNamespaced := projected.Spec.Scope == apiextensionsv1.NamespaceScoped
	for _, obj := range asking {
		if disabled {
			out.Imports = append(out.Imports, Import{Service: qualified(obj), Refused: "synchronization is disabled (spec.synchronization.enabled: false): nothing is imported"})
			continue
		}
		out.Imports = append(out.Imports, in.importOf(rules, remote, kcpNamespaced, primaries, namespaces, serviceNamespaces, obj))
	}
	return out, nil
}

// object previews one sample.
func (in Input) object(ctx context.Context, s *syncer.Syncer, rules syncer.Rules, own schema.GroupKind, primaries []*unstructured.Unstructured, samples map[related.Side][]*unstructured.Unstructured, namespaces map[string]map[string]string, obj *unstructured.Unstructured) (Object, error) {
	o := Object{Kcp: qualified(obj)}
	if obj.GetDeletionTimestamp() != nil {
		o.Skipped = "it is being deleted: the agent deletes its local copy, then removes its finalizer"
		return o, nil
	}
	if rules.ResourceFilter != nil && !rules.ResourceFilter.Matches(labels.Set(obj.GetLabels())) {
		o.Skipped = fmt.Sprintf("its labels do not match spec.filter.resource (%s)", rules.ResourceFilter)
		return o, nil
	}
	if f := rules.NamespaceFilter; f != nil && obj.GetNamespace() != "" {
		nsLabels, ok := namespaces[obj.GetNamespace()]
		switch {
		case !ok:
			o.Notes = append(o.Notes, fmt.Sprintf("spec.filter.namespace (%s) is matched against the labels of namespace %s in kcp; it has no sample (a Namespace among the objects), so it is assumed to match", f, obj.GetNamespace()))
		case !f.Matches(labels.Set(nsLabels)):
			o.Skipped = fmt.Sprintf("the labels of its namespace %s do not match spec.filter.namespace (%s)", obj.GetNamespace(), f)
			return o, nil
		}
	}
	local, mutated, err := s.NewCopy(in.workspace(), obj)
	if err != nil {
		return o, err
	}
	o.Local, o.LocalName, o.LocalNamespace = local, local.GetName(), local.GetNamespace()
	if o.LocalNamespace != "" {
		labels, annotations, err := s.CreatedNamespaceMetadata(in.Workspace, o.LocalNamespace)
		if err != nil {
			return o, err
		}
		o.CreatedNamespace = &NamespaceMetadata{Labels: labels, Annotations: annotations}
	}
	o.Deletion = deletion(obj)
	// The local copy as the service reports on it: with the sample's status.
	reported := local.DeepCopy()
	if status, ok := obj.Object["status"]; ok {
		reported.Object["status"] = status
		if !s.StatusSubresource {
			o.Notes = append(o.Notes, "the type has no status subresource: the status is not written back into kcp (the consumer gets a StatusSubresourceMissing Event)")
		} else if o.StatusToKcp, err = s.StatusForKcp(mutated, reported); err != nil {
			return o, err
		}
	}
	if o.StatusToKcp != nil {
		// The references write into it; it may share maps with the sample.
		o.StatusToKcp = runtime.DeepCopyJSONValue(o.StatusToKcp)
	}
	// The agent reads the fields after the spec mutations.
	o.References = in.referenceNotes(s, rules.References, own, primaries, mutated, local, o.StatusToKcp)
	for _, e := range s.Related {
		o.Related = append(o.Related, in.related(ctx, e, samples, obj, reported))
	}
	return o, nil
}

// workspace is the samples' workspace.
func (in Input) workspace() syncer.Workspace {
	ws := syncer.Workspace{Cluster: in.Workspace}
	if in.PublishedResource.Spec.EnableWorkspacePaths {
		ws.Path = in.WorkspacePath
	}
	return ws
}

// related runs an entry's resolution against readers that record each
// read and answer from the samples (an object that is no sample is assumed
// to exist, so that the copy it would get shows).
func (in Input) related(ctx context.Context, e *related.Entry, samples map[related.Side][]*unstructured.Unstructured, obj, local *unstructured.Unstructured) Related {
	r := Related{Identifier: e.Identifier, Origin: string(e.Origin), Lookups: []string{}}
	rec := &recorder{samples: samples, assumed: map[string]bool{}}
	pairs, err := e.Resolve(ctx, related.Primaries{Kcp: obj, Service: local, ClusterName: in.Workspace, ClusterPath: in.WorkspacePath},
		related.Readers{Kcp: rec.on(related.SideKcp), Service: rec.on(related.SideService)})
	r.Lookups = rec.lookups
	if err != nil {
		r.Error = err.Error()
		return r
	}
	for _, p := range pairs {
		c := fmt.Sprintf("%s → %s", qualified(p.Origin), objmeta.QualifiedName(p.Destination.Namespace, p.Destination.Name))
		if rec.assumed[qualified(p.Origin)] {
			c += " (no sample: if it exists)"
		}
		r.Copies = append(r.Copies, c)
	}
	return r
}

// typeInfo finds a related type: the source or projected type itself, or
// via in.TypeInfo.
func (in Input) typeInfo(gvr schema.GroupVersionResource, own *apiextensionsv1.CustomResourceDefinition) (discovery.TypeInfo, error) {
	if gvr.Group == own.Spec.Group && gvr.Resource == own.Spec.Names.Plural && slices.ContainsFunc(own.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == gvr.Version }) {
		return discovery.TypeInfo{GVK: gvr.GroupVersion().WithKind(own.Spec.Names.Kind), Namespaced: own.Spec.Scope == apiextensionsv1.NamespaceScoped,
			HasStatus: projection.HasStatusSubresource(own, gvr.Version)}, nil
	}
	if in.TypeInfo == nil {
		return discovery.TypeInfo{}, fmt.Errorf("%s is not known without a cluster", gvr)
	}
	return in.TypeInfo(gvr)
}

// deletion says what the agent does with the local copy when obj is
// deleted, by obj's deletion propagation policy.
func deletion(obj *unstructured.Unstructured) string {
	policy, known := objmeta.PropagationOf(obj)
	switch {
	case !known:
		return fmt.Sprintf("background: the local copy is deleted, its dependents after it (the value of %s is not background, foreground or orphan: the consumer gets an InvalidDeletionPropagation Warning)", keys.DeletionPropagationPolicy)
	case policy == objmeta.PropagateForeground:
		return "foreground: the local copy's dependents are deleted first, then the copy; the kcp object waits for them"
	case policy == objmeta.PropagateOrphan:
		return "orphan: the local copy is kept, without the agent's labels, marked " + keys.OrphanedFrom
	}
	return "background: the local copy is deleted, its dependents after it"
}

func scopeWord(namespaced bool) string {
	if namespaced {
		return "namespaced"
	}
	return "cluster-scoped"
}

func hasWord(has bool) string {
	if has {
		return "has"
	}
	return "has no"
}

func qualified(obj *unstructured.Unstructured) string {
	return objmeta.QualifiedName(obj.GetNamespace(), obj.GetName())
}
