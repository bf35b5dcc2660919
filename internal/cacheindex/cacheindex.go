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

// Package cacheindex adds field indexes to controller-runtime caches with
// one key per value. controller-runtime's own IndexField stores two keys
// per value of a namespaced object (one for lookups in its namespace, one
// for lookups across namespaces), and for an index whose every value is
// unique (the agent's index of copies and state Secrets by their kcp
// object) each key costs a set of its own: about a fifth of the memory of
// a small cached object. An index added here serves only lookups across
// namespaces: List with MatchingFields and without InNamespace.
package cacheindex

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// The index name and key format controller-runtime's cache reader looks up
// for MatchingFields{field: value} without a namespace
// (sigs.k8s.io/controller-runtime/pkg/cache/internal: FieldIndexName and
// KeyToNamespacedKey); TestListFindsIndexedObjects fails if they change.
const (
	indexPrefix   = "field:"
	allNamespaces = "__all_namespaces/"
)

// Add adds the index on field to the informer of obj's type in informers.
// It waits, bounded by ctx, for the informer to sync. Adding an index of
// the same name twice fails with client-go's "indexer conflict".
func Add(ctx context.Context, informers cache.Informers, obj ctrlruntimeclient.Object, field string, extract ctrlruntimeclient.IndexerFunc) error {
	inf, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("failed to get the informer of %T: %w", obj, err)
	}
	if err := inf.AddIndexers(Indexers(field, extract)); err != nil {
		return fmt.Errorf("failed to index %T by %s: %w", obj, field, err)
	}
	return nil
}

// Indexers returns the index on field: one key per value extract returns.
func Indexers(field string, extract ctrlruntimeclient.IndexerFunc) toolscache.Indexers {
	return toolscache.Indexers{indexPrefix + field: func(o any) ([]string, error) {
		obj, ok := o.(ctrlruntimeclient.Object)
		if !ok {
			return nil, fmt.Errorf("cannot index a %T", o)
		}
		values := extract(obj)
		keys := make([]string, len(values))
		for i, v := range values {
			keys[i] = allNamespaces + v
		}
		return keys, nil
	}}
}
