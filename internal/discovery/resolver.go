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

// Package discovery finds the source type of a PublishedResource on the
// service cluster and returns it as a CRD: the real CRD when one exists,
// otherwise one built from discovery and the OpenAPI v2 models (built-in
// and aggregated types) exactly as the reference agent builds it. Discovery
// results are cached; Invalidate refreshes them (the apiresourceschema
// controller calls it on CRD events).
package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/util/proto"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// AnnotationAPIApproved is the annotation Kubernetes requires on CRDs of
// protected groups.
const AnnotationAPIApproved = "api-approved.kubernetes.io"

// NotFoundError means the service cluster does not serve the group/kind.
type NotFoundError struct{ GK schema.GroupKind }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("the service cluster does not serve %s", e.GK)
}

// Resolver resolves group/kinds to source CRDs. It is safe for concurrent
// use and holds no lock across a request.
type Resolver struct {
	disco discovery.CachedDiscoveryInterface
	crds  ctrlruntimeclient.Reader

	// mu guards the fields below.
	mu sync.Mutex
	// models are the parsed OpenAPI v2 models (nil until needed), fetched
	// at modelsFetched.
	models        map[schema.GroupVersionKind]proto.Schema
	modelsFetched time.Time
	// invalidated is when the discovery cache was last dropped; stale asks
	// the next lookup to drop it.
	invalidated time.Time
	stale       bool
	// now is the clock (nil: time.Now).
	now func() time.Time
}

// missInvalidateInterval: a lookup of a type that discovery does not list
// drops the cached discovery (the type may have appeared: an aggregated
// API sends no CRD event) at most this often.
const missInvalidateInterval = 30 * time.Second

// discoveryTimeout bounds each discovery request (the OpenAPI v2 document
// included) to the service cluster.
const discoveryTimeout = time.Minute

// NewResolver returns a Resolver with a memory-cached discovery client for
// cfg; CRDs are read through crds (normally the manager's cache).
func NewResolver(cfg *rest.Config, crds ctrlruntimeclient.Reader) (*Resolver, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = discoveryTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create discovery client: %w", err)
	}
	return &Resolver{disco: memory.NewMemCacheClient(dc), crds: crds}, nil
}

// Invalidate marks the cached discovery information stale: the next lookup
// drops it. (Dropping it here would wait for a refresh in progress, and
// CRD event handlers call this.)
func (r *Resolver) Invalidate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stale = true
}

// fresh drops the cached discovery if Invalidate asked for it.
func (r *Resolver) fresh() {
	r.mu.Lock()
	stale := r.stale
	if stale {
		r.stale, r.invalidated = false, r.clock()
	}
	r.mu.Unlock()
	if stale {
		r.disco.Invalidate()
	}
}

// invalidateOnMiss drops the cached discovery after a lookup missed, unless
// it was dropped less than missInvalidateInterval ago; it reports whether
// it did (the caller looks again).
func (r *Resolver) invalidateOnMiss() bool {
	r.mu.Lock()
	due := r.clock().Sub(r.invalidated) >= missInvalidateInterval
	if due {
		r.invalidated = r.clock()
	}
	r.mu.Unlock()
	if due {
		r.disco.Invalidate()
	}
	return due
}

// Resolve returns the source CRD of gk. The result is owned by the caller.
// It returns a *NotFoundError when the kind is not served.
func (r *Resolver) Resolve(ctx context.Context, gk schema.GroupKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	r.fresh()
	kr, err := r.lookupKind(gk)
	if notFound := (*NotFoundError)(nil); errors.As(err, &notFound) && r.invalidateOnMiss() {
		// It may have appeared since the cache was filled.
		kr, err = r.lookupKind(gk)
	}
	if err != nil {
		return nil, err
	}

	crd := &apiextensionsv1.CustomResourceDefinition{}
	name := crdName(kr.resource.Name, gk.Group)
	err = r.crds.Get(ctx, types.NamespacedName{Name: name}, crd)
	switch {
	case err == nil:
		return fromCRD(crd), nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get CRD %s: %w", name, err)
	}

	preferred, err := r.disco.ServerPreferredResources()
	if err != nil && len(preferred) == 0 {
		return nil, fmt.Errorf("failed to discover the service cluster's preferred versions: %w", err)
	}
	models, err := r.openAPIModels(false)
	if err != nil {
		return nil, err
	}
	built, err := builtinCRD(gk, kr, preferred, models)
	if missing := (*missingModelError)(nil); errors.As(err, &missing) {
		// A type that is newer than the cached models (an aggregated API
		// that came up later): fetch them again, at most once a minute.
		if models, err = r.openAPIModels(true); err != nil {
			return nil, err
		}
		built, err = builtinCRD(gk, kr, preferred, models)
	}
	return built, err
}

// lookupKind finds gk in the (cached) discovery.
func (r *Resolver) lookupKind(gk schema.GroupKind) (*kindResource, error) {
	_, lists, err := r.disco.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("failed to discover the service cluster's APIs: %w", err)
	}
	// Partial failures (an unavailable aggregated API) only matter if they
	// hide our kind; then the kind is reported as not found.
	return findKind(lists, gk)
}

const (
	// openAPIModelsTTL is how long the parsed OpenAPI v2 models are reused.
	// The document holds every type of the service cluster and is large; the
	// models of built-in types change only when the cluster is upgraded, so
	// they are not refreshed with discovery (which every CRD event
	// invalidates).
	openAPIModelsTTL = 30 * time.Minute
	// missingModelRefetchInterval bounds the refetches for a model that
	// discovery lists but the document lacks (an aggregated API without
	// OpenAPI v2 would otherwise cost a fetch on every retry).
	missingModelRefetchInterval = time.Minute
)

// openAPIModels returns the service cluster's OpenAPI v2 models by kind. It
// fetches and parses the document when there are no models yet, when they
// are older than openAPIModelsTTL, or, for a missing model, when they are
// older than missingModelRefetchInterval. If a fetch fails, older models
// are still used.
func (r *Resolver) openAPIModels(missing bool) (map[schema.GroupVersionKind]proto.Schema, error) {
	r.mu.Lock()
	cached, fetched := r.models, r.modelsFetched
	age := r.clock().Sub(fetched)
	r.mu.Unlock()
	if cached != nil && age < openAPIModelsTTL && (!missing || age < missingModelRefetchInterval) {
		return cached, nil
	}
	// Fetched without the lock: concurrent callers may fetch twice.
	models, err := r.fetchModels()
	if err != nil {
		if cached != nil {
			return cached, nil
		}
		return nil, err
	}
	r.mu.Lock()
	r.models, r.modelsFetched = models, r.clock()
	r.mu.Unlock()
	return models, nil
}

func (r *Resolver) fetchModels() (map[schema.GroupVersionKind]proto.Schema, error) {
	doc, err := r.disco.OpenAPISchema()
	if err != nil {
		return nil, fmt.Errorf("failed to get the OpenAPI v2 document: %w", err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the OpenAPI v2 document: %w", err)
	}
	return modelsByGVK(models), nil
}

// clock returns the time; callers may hold r.mu.
func (r *Resolver) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// fromCRD keeps what the schema depends on: name, the api-approved
// annotation, generation and the spec (with conversion None; the
// conversion strategy is not published). Versions without a schema of a
// non-structural CRD get one that preserves unknown fields.
func fromCRD(in *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Generation: in.Generation},
		Spec:       *in.Spec.DeepCopy(),
	}
	if v, ok := in.Annotations[AnnotationAPIApproved]; ok {
		out.Annotations = map[string]string{AnnotationAPIApproved: v}
	}
	nonStructural := false
	for _, c := range in.Status.Conditions {
		if c.Type == apiextensionsv1.NonStructuralSchema && c.Status == apiextensionsv1.ConditionTrue {
			nonStructural = true
		}
	}
	if nonStructural {
		for i, v := range out.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				out.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()},
				}
			}
		}
	}
	out.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	return out
}
