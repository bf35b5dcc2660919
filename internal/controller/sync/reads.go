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
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
)

// routedReads is a client that reads the types in cached from cache and
// every other type from live, and writes through Client. On the service
// cluster, the controller caches only the related types it watches (their
// informers run anyway): reading one related object must not start an
// informer that holds every object of its type in the whole cluster (all
// Secrets, say), nor need the permission to list and watch them everywhere.
type routedReads struct {
	ctrlruntimeclient.Client
	cache, live ctrlruntimeclient.Reader
	// cached are the types whose unstructured objects are read from cache.
	cached sets.Set[schema.GroupVersionKind]
}

func (r routedReads) Get(ctx context.Context, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
	reader, err := r.reader(obj)
	if err != nil {
		return err
	}
	return reader.Get(ctx, key, obj, opts...)
}

func (r routedReads) List(ctx context.Context, list ctrlruntimeclient.ObjectList, opts ...ctrlruntimeclient.ListOption) error {
	reader, err := r.reader(list)
	if err != nil {
		return err
	}
	return reader.List(ctx, list, opts...)
}

func (r routedReads) reader(obj runtime.Object) (ctrlruntimeclient.Reader, error) {
	gvk, err := objectGVK(obj, r.Scheme())
	if err != nil {
		return nil, err
	}
	// The cache holds unstructured informers only (the watches'): a typed
	// read would ask for an informer it does not have.
	if _, unstructured := obj.(runtime.Unstructured); unstructured && r.cached.Has(gvk) {
		return r.cache, nil
	}
	return r.live, nil
}

// objectGVK is the type of an object, or of the items of a list.
func objectGVK(obj runtime.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return gvk, err
	}
	if kcp.IsList(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return gvk, nil
}

// cachedReads is a client whose Get and List use a workspace cache.
type cachedReads struct {
	ctrlruntimeclient.Client
	cache cache.Cache
	// record, if set, is told the type of every informer the reads use.
	record func(schema.GroupVersionKind)
}

func (c cachedReads) Get(ctx context.Context, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
	if err := c.ensureInformer(ctx, obj); err != nil {
		return err
	}
	return c.cache.Get(ctx, key, obj, opts...)
}

func (c cachedReads) List(ctx context.Context, list ctrlruntimeclient.ObjectList, opts ...ctrlruntimeclient.ListOption) error {
	if err := c.ensureInformer(ctx, list); err != nil {
		return err
	}
	return c.cache.List(ctx, list, opts...)
}

// ensureInformer starts the informer of the type explicitly and waits,
// bounded by ctx, until it has synced. Reading through the provider's cache
// without it would start the informer itself and wait for it without a
// deadline, or see an informer that has not synced yet as empty (the
// virtual workspace may not serve the type at all: a claim that is
// missing). Unstructured types get an unstructured informer.
func (c cachedReads) ensureInformer(ctx context.Context, obj runtime.Object) error {
	gvk, err := objectGVK(obj, c.Scheme())
	if err != nil {
		return err
	}
	var o ctrlruntimeclient.Object = typed(gvk)
	if _, ok := obj.(runtime.Unstructured); !ok {
		n, err := c.Scheme().New(gvk)
		if err != nil {
			return err
		}
		if o, ok = n.(ctrlruntimeclient.Object); !ok {
			return fmt.Errorf("%s is not an object", gvk)
		}
	}
	if _, err := c.cache.GetInformer(ctx, o); err != nil {
		// The cache answers a wait cut off by ctx with a Timeout error
		// that does not wrap ctx's error; a stop must read as a stop.
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		return fmt.Errorf("failed to read %s from the workspace cache: %w", gvk, err)
	}
	if c.record != nil {
		c.record(gvk)
	}
	return nil
}
