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

package sync

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// namedReader records which reader served a read.
type namedReader struct {
	name string
	got  *[]string
}

func (n namedReader) Get(context.Context, ctrlruntimeclient.ObjectKey, ctrlruntimeclient.Object, ...ctrlruntimeclient.GetOption) error {
	*n.got = append(*n.got, n.name)
	return nil
}

func (n namedReader) List(context.Context, ctrlruntimeclient.ObjectList, ...ctrlruntimeclient.ListOption) error {
	*n.got = append(*n.got, n.name)
	return nil
}

// TestRoutedReads: on the service cluster, only the related types a
// controller watches are read from its cache; every other related type is
// read from the server, so that no informer of all Secrets of the cluster
// is started by a read.
func TestRoutedReads(t *testing.T) {
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	listOf := func(gvk schema.GroupVersionKind) ctrlruntimeclient.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return l
	}
	tests := []struct {
		name string
		read func(ctrlruntimeclient.Reader) error
		want string
	}{
		{"an unwatched related type", func(r ctrlruntimeclient.Reader) error {
			return r.Get(t.Context(), types.NamespacedName{Namespace: "ns", Name: "s"}, typed(secret))
		}, "live"},
		{"a list of an unwatched related type", func(r ctrlruntimeclient.Reader) error {
			return r.List(t.Context(), listOf(secret), ctrlruntimeclient.InNamespace("ns"))
		}, "live"},
		{"a watched related type", func(r ctrlruntimeclient.Reader) error {
			return r.Get(t.Context(), types.NamespacedName{Namespace: "ns", Name: "c"}, typed(configMap))
		}, "cache"},
		{"a list of a watched related type", func(r ctrlruntimeclient.Reader) error {
			return r.List(t.Context(), listOf(configMap))
		}, "cache"},
		{"Namespaces by selector", func(r ctrlruntimeclient.Reader) error {
			return r.List(t.Context(), &corev1.NamespaceList{})
		}, "live"},
		{"a typed read of a watched type (the cache has its unstructured informer only)", func(r ctrlruntimeclient.Reader) error {
			return r.Get(t.Context(), types.NamespacedName{Namespace: "ns", Name: "c"}, &corev1.ConfigMap{})
		}, "live"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			r := routedReads{Client: fake.NewClientBuilder().Build(), cache: namedReader{"cache", &got}, live: namedReader{"live", &got},
				cached: sets.New(configMap)}
			if err := tt.read(r); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []string{tt.want}) {
				t.Errorf("read from %v, want %s", got, tt.want)
			}
		})
	}
}

// TestWatchedRelatedTypes: the preflight checks list and watch only on the
// related types the controller watches on the service cluster.
func TestWatchedRelatedTypes(t *testing.T) {
	secretGVK := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	configMapGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	opts := testOptions(t)
	opts.LocalCache, opts.RelatedCache = newFakeInformers(), newFakeInformers()
	specs := relatedSpecs()
	// An unwatched service-origin Secret, and a second watched ConfigMap
	// entry.
	unwatched := specs[1]
	unwatched.Identifier, unwatched.Kind, unwatched.Watch = "tls", "Secret", nil
	second := specs[1]
	second.Identifier = "config2"
	opts.PublishedResource.Spec.Related = append(specs, unwatched, second)
	secrets := RelatedTypes{Kcp: relatedType(secretGVK, "secrets"), Service: relatedType(secretGVK, "secrets")}
	configMaps := RelatedTypes{Kcp: relatedType(configMapGVK, "configmaps"), Service: relatedType(configMapGVK, "configmaps")}
	opts.RelatedTypes = []RelatedTypes{secrets, configMaps, secrets, configMaps}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupVersionResource{configMaps.Service.GVR}
	if !slices.Equal(c.watchedRelated, want) {
		t.Errorf("watched related types %v, want %v", c.watchedRelated, want)
	}
}
