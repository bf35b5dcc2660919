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

package cacheindex

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/cacheindex/cacheindextest"
)

const field = "example.com/owner"

func secret(ns, name, owner string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Labels: map[string]string{"owner": owner}}}
}

func ownerOf(o ctrlruntimeclient.Object) []string {
	if v := o.GetLabels()["owner"]; v != "" {
		return []string{v}
	}
	return nil
}

// The index serves controller-runtime's List with MatchingFields and no
// namespace: this fails if controller-runtime changes its index names or
// key format.
func TestListFindsIndexedObjects(t *testing.T) {
	c := cacheindextest.NewCache(t, scheme.Scheme, func(ctx context.Context, c cache.Cache) error {
		return Add(ctx, c, &corev1.Secret{}, field, ownerOf)
	}, secret("a", "one", "x"), secret("b", "two", "y"), secret("b", "three", "x"), secret("a", "four", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for value, want := range map[string][]string{"x": {"a/one", "b/three"}, "y": {"b/two"}, "z": nil} {
		list := &corev1.SecretList{}
		if err := c.List(ctx, list, ctrlruntimeclient.MatchingFields{field: value}); err != nil {
			t.Fatalf("%s: %v", value, err)
		}
		var got []string
		for _, s := range list.Items {
			got = append(got, s.Namespace+"/"+s.Name)
		}
		sort.Strings(got) // a cache lists in no defined order
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("objects of %q: got %v, want %v", value, got, want)
		}
	}
	if err := Add(ctx, c, &corev1.Secret{}, field, ownerOf); err == nil || !strings.Contains(err.Error(), "indexer conflict") {
		t.Errorf("adding the index twice: got %v, want an indexer conflict", err)
	}
}

func TestOneKeyPerValue(t *testing.T) {
	keys, err := Indexers(field, ownerOf)[indexPrefix+field](secret("ns", "n", "x"))
	if err != nil || strings.Join(keys, ",") != "__all_namespaces/x" {
		t.Errorf("keys: got %v, %v; want [__all_namespaces/x]", keys, err)
	}
	if _, err := Indexers(field, ownerOf)[indexPrefix+field]("not an object"); err == nil {
		t.Error("indexing a string: got no error")
	}
}
