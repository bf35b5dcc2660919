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
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingDiscovery serves the golden discovery lists and hands out the
// OpenAPI v2 documents in docs one after the other (the last one again and
// again), counting the fetches.
type countingDiscovery struct {
	*fakediscovery.FakeDiscovery
	preferred []*metav1.APIResourceList
	docs      []*openapi_v2.Document
	fetches   int
	fail      bool
	// invalidations counts the drops of the cache.
	invalidations int
}

func (d *countingDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return d.preferred, nil
}

func (d *countingDiscovery) OpenAPISchema() (*openapi_v2.Document, error) {
	doc := d.docs[min(d.fetches, len(d.docs)-1)]
	d.fetches++
	if d.fail {
		return nil, errors.New("injected: the document cannot be fetched")
	}
	return doc, nil
}

func (d *countingDiscovery) Fresh() bool { return true }
func (d *countingDiscovery) Invalidate() { d.invalidations++ }

func newCountingResolver(t *testing.T, docs ...*openapi_v2.Document) (*Resolver, *countingDiscovery) {
	t.Helper()
	in := loadReferenceInputs(t)
	d := &countingDiscovery{
		FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: in.GroupsAndResources}},
		preferred:     in.PreferredResources,
		docs:          docs,
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return &Resolver{disco: d, crds: fake.NewClientBuilder().WithScheme(s).Build()}, d
}

// goldenDocument is the OpenAPI v2 document of the golden inputs.
func goldenDocument(t *testing.T) *openapi_v2.Document {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(referenceDir, "openapi-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi_v2.ParseDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestResolver_modelsOutliveDiscovery: the large OpenAPI document is
// fetched once, not again after discovery is invalidated (every CRD event
// does that).
func TestResolver_modelsOutliveDiscovery(t *testing.T) {
	r, d := newCountingResolver(t, goldenDocument(t))
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	for range 3 {
		if _, err := r.Resolve(context.Background(), deployment); err != nil {
			t.Fatal(err)
		}
		r.Invalidate()
	}
	if _, err := r.Resolve(context.Background(), schema.GroupKind{Kind: "ConfigMap"}); err != nil {
		t.Fatal(err)
	}
	if d.fetches != 1 {
		t.Errorf("the OpenAPI document was fetched %d times, want once", d.fetches)
	}
}

// TestResolver_missingModelRefetches: a kind that discovery lists but the
// cached models lack (an API that came up after the fetch) makes the
// resolver fetch the document again, but at most once a minute; a failed
// refresh keeps the models it has.
func TestResolver_missingModelRefetches(t *testing.T) {
	empty := &openapi_v2.Document{Swagger: "2.0", Info: &openapi_v2.Info{Title: "empty", Version: "v1"}, Definitions: &openapi_v2.Definitions{}}
	r, d := newCountingResolver(t, empty, goldenDocument(t))
	now := time.Now()
	r.now = func() time.Time { return now }
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}

	var missing *missingModelError
	for range 3 {
		if _, err := r.Resolve(context.Background(), deployment); !errors.As(err, &missing) {
			t.Fatalf("err = %v, want the missing model", err)
		}
	}
	if d.fetches != 1 {
		t.Fatalf("%d fetches within a minute, want 1", d.fetches)
	}
	now = now.Add(missingModelRefetchInterval)
	crd, err := r.Resolve(context.Background(), deployment)
	if err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Names.Kind != "Deployment" || d.fetches != 2 {
		t.Errorf("kind %q after %d fetches, want Deployment after 2", crd.Spec.Names.Kind, d.fetches)
	}

	// After the TTL the document is fetched again; if that fails, the
	// models at hand are used.
	d.fail = true
	now = now.Add(openAPIModelsTTL)
	if _, err := r.Resolve(context.Background(), deployment); err != nil {
		t.Errorf("a failed refresh must keep the models: %v", err)
	}
	if d.fetches != 3 {
		t.Errorf("%d fetches, want a third one after the TTL", d.fetches)
	}
}

// TestResolver_missesInvalidateRarely: lookups of a type that is not served
// (a PublishedResource retried with backoff, a related type) drop the
// discovery cache at most every missInvalidateInterval, not on every miss.
func TestResolver_missesInvalidateRarely(t *testing.T) {
	r, d := newCountingResolver(t, goldenDocument(t))
	now := time.Now()
	r.now = func() time.Time { return now }
	missingKind := schema.GroupKind{Group: "example.com", Kind: "Nothing"}
	missingResource := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "nothings"}
	for range 5 {
		var notFound *NotFoundError
		if _, err := r.Resolve(context.Background(), missingKind); !errors.As(err, &notFound) {
			t.Fatalf("err = %v, want not found", err)
		}
		if _, err := r.ResourceInfo(missingResource); err == nil {
			t.Fatal("want an error for a resource that is not served")
		}
	}
	if d.invalidations != 1 {
		t.Fatalf("10 misses within the interval dropped the cache %d times, want 1", d.invalidations)
	}
	now = now.Add(missInvalidateInterval)
	_, _ = r.ResourceInfo(missingResource)
	if d.invalidations != 2 {
		t.Errorf("a miss after the interval: %d drops, want 2", d.invalidations)
	}
	r.Invalidate()
	if d.invalidations != 2 {
		t.Errorf("Invalidate must not drop the cache itself (it would wait for a refresh): %d drops", d.invalidations)
	}
	_, _ = r.ResourceInfo(missingResource)
	if d.invalidations != 3 {
		t.Errorf("an explicit invalidation counts as the last drop: %d drops, want 3", d.invalidations)
	}
}
