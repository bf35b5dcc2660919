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
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// kcpWatches are the kcp-side watches: the primaries, and the kcp-origin
// related objects: their deletion enqueues the primaries that hold them
// (releaseKeys), and with spec.related[].watch their changes do too
// (byOwner follows an ownerReference to a primary in the same namespace;
// bySelector enqueues the workspace's primaries whose labels match).
// Entries of one type share a watch.
func kcpWatches(opts Options, entries []*related.Entry) ([]kcpWatch, error) {
	primary := kcpWatch{obj: typed(opts.RemoteGVK), gvr: opts.RemoteGVK.GroupVersion().WithResource(opts.RemoteResource), keys: func(_ Workspace, _, obj *unstructured.Unstructured) []types.NamespacedName {
		return []types.NamespacedName{{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	}}
	out := []kcpWatch{primary}
	byType := map[schema.GroupVersionKind][]func(Workspace, *unstructured.Unstructured) []types.NamespacedName{}
	gvrs := map[schema.GroupVersionKind]schema.GroupVersionResource{}
	var order []schema.GroupVersionKind
	release := releaseKeys(opts)
	for _, e := range entries {
		if e.Origin != related.SideKcp {
			continue
		}
		if _, seen := byType[e.Kcp.GVK]; !seen {
			order = append(order, e.Kcp.GVK)
			gvrs[e.Kcp.GVK] = e.Kcp.GVR
			byType[e.Kcp.GVK] = append(byType[e.Kcp.GVK], release)
		}
		byOwner, selector, err := watchMode(e)
		if err != nil || (!byOwner && selector == nil) {
			if err != nil {
				return nil, fmt.Errorf("spec.related %q: watch: %w", e.Identifier, err)
			}
			continue
		}
		keys := func(_ Workspace, obj *unstructured.Unstructured) []types.NamespacedName {
			return owners(obj, opts.RemoteGVK, opts.RemoteNamespaced)
		}
		if selector != nil {
			keys = func(ws Workspace, _ *unstructured.Unstructured) []types.NamespacedName {
				var out []types.NamespacedName
				// The workspace's own cache: no request per event.
				for _, o := range matching(context.Background(), ws.Cluster.GetCache(), opts.RemoteGVK, selector) {
					out = append(out, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
				}
				return out
			}
		}
		byType[e.Kcp.GVK] = append(byType[e.Kcp.GVK], keys)
	}
	for _, gvk := range order {
		fns := byType[gvk]
		out = append(out, kcpWatch{obj: typed(gvk), gvr: gvrs[gvk], keys: fanOut(fns)})
	}
	return out, nil
}

// releaseKeys maps a kcp-origin related source that is being deleted and
// carries the agent's finalizer to the primaries whose records name it, so
// that it is released at once, whatever the entry's watch and whether the
// primary is synced (Syncer.ReleaseDeletedSources). The records come from
// the cache: an event handler does not wait on the API server.
func releaseKeys(opts Options) func(Workspace, *unstructured.Unstructured) []types.NamespacedName {
	fin := finalizer.For(opts.AgentName)
	store := &state.Store{Client: opts.Service, Namespace: opts.Namespace, AgentName: opts.AgentName}
	primary := opts.RemoteGVK.GroupKind()
	return func(ws Workspace, obj *unstructured.Unstructured) []types.NamespacedName {
		if obj.GetDeletionTimestamp() == nil || !fin.Holds(obj) {
			return nil
		}
		ref := state.RefOf(obj)
		records, err := store.RecordsOfSource(context.Background(), ws.Name, ref)
		if err != nil {
			return nil // the primaries' own passes release it later
		}
		var out []types.NamespacedName
		for _, rec := range records {
			if rec.Primary.GroupKind() == primary {
				out = append(out, types.NamespacedName{Namespace: rec.Primary.Namespace, Name: rec.Primary.Name})
			}
		}
		return out
	}
}

// localSources are the service-side watches: the local copies of this
// agent, and the service-origin related objects of entries with
// spec.related[].watch, mapped to the kcp objects of their primaries.
// Entries of one type share a watch.
func localSources(opts Options, entries []*related.Entry) ([]*localSource, error) {
	copies := newLocalSource(opts.LocalCache, typed(opts.LocalGVK), func(ctx context.Context, _, obj *unstructured.Unstructured) []mcreconcile.Request {
		if objmeta.OwnedByOtherAgent(obj, opts.AgentName) || objmeta.IsState(obj) {
			return nil
		}
		return localToRemote(ctx, obj)
	})
	out := []*localSource{copies}
	byType := map[schema.GroupVersionKind][]func(context.Context, *unstructured.Unstructured) []mcreconcile.Request{}
	var order []schema.GroupVersionKind
	for _, e := range entries {
		if e.Origin == related.SideKcp {
			continue
		}
		byOwner, selector, err := watchMode(e)
		if err != nil || (!byOwner && selector == nil) {
			if err != nil {
				return nil, fmt.Errorf("spec.related %q: watch: %w", e.Identifier, err)
			}
			continue
		}
		keys := func(ctx context.Context, obj *unstructured.Unstructured) []mcreconcile.Request {
			var reqs []mcreconcile.Request
			for _, k := range owners(obj, opts.LocalGVK, opts.LocalNamespaced) {
				reqs = append(reqs, localKeyToRemote(ctx, opts, k)...)
			}
			return reqs
		}
		if selector != nil {
			keys = func(ctx context.Context, _ *unstructured.Unstructured) []mcreconcile.Request {
				var reqs []mcreconcile.Request
				for _, o := range matching(ctx, opts.LocalCache, opts.LocalGVK, selector) {
					if !objmeta.OwnedByOtherAgent(o, opts.AgentName) {
						reqs = append(reqs, localToRemote(ctx, o)...)
					}
				}
				return reqs
			}
		}
		if _, seen := byType[e.Service.GVK]; !seen {
			order = append(order, e.Service.GVK)
		}
		byType[e.Service.GVK] = append(byType[e.Service.GVK], keys)
	}
	for _, gvk := range order {
		fns := byType[gvk]
		out = append(out, newLocalSource(opts.RelatedCache, typed(gvk), fanOut(fns)))
	}
	return out, nil
}

// serviceWatched are the service-side types of the service-origin entries
// with a watch, once each, in spec order: the related types the controller
// caches on the service cluster.
func serviceWatched(entries []*related.Entry) []related.Type {
	var out []related.Type
	for _, e := range entries {
		if e.Origin == related.SideKcp || e.Watch == nil || (e.Watch.ByOwner == nil && e.Watch.BySelector == nil) {
			continue
		}
		if !slices.ContainsFunc(out, func(t related.Type) bool { return t.GVK == e.Service.GVK }) {
			out = append(out, e.Service)
		}
	}
	return out
}

// fanOut maps an event to what every fn maps the object's previous (nil
// except on updates) and current version to.
func fanOut[C, T any](fns []func(C, *unstructured.Unstructured) []T) func(C, *unstructured.Unstructured, *unstructured.Unstructured) []T {
	return func(c C, old, obj *unstructured.Unstructured) []T {
		var out []T
		for _, o := range []*unstructured.Unstructured{old, obj} {
			if o == nil {
				continue
			}
			for _, fn := range fns {
				out = append(out, fn(c, o)...)
			}
		}
		return out
	}
}

// watchMode reads an entry's spec.related[].watch.
func watchMode(e *related.Entry) (byOwner bool, selector labels.Selector, err error) {
	w := e.Watch
	switch {
	case w == nil:
		return false, nil, nil
	case w.ByOwner != nil:
		return true, nil, nil
	case w.BySelector != nil:
		selector, err = metav1.LabelSelectorAsSelector(w.BySelector)
		return false, selector, err
	}
	return false, nil, nil
}

// owners returns the primaries obj names as owners.
func owners(obj *unstructured.Unstructured, gvk schema.GroupVersionKind, namespaced bool) []types.NamespacedName {
	var out []types.NamespacedName
	for _, ref := range obj.GetOwnerReferences() {
		if ref.APIVersion != gvk.GroupVersion().String() || ref.Kind != gvk.Kind {
			continue
		}
		key := types.NamespacedName{Name: ref.Name}
		if namespaced {
			key.Namespace = obj.GetNamespace()
		}
		out = append(out, key)
	}
	return out
}

// matching lists the primaries of type gvk whose labels match selector.
// Errors mean nothing to enqueue: the primaries reconcile on their own later.
func matching(ctx context.Context, c ctrlruntimeclient.Reader, gvk schema.GroupVersionKind, selector labels.Selector) []*unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, ctrlruntimeclient.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// localKeyToRemote maps a local primary to its kcp object.
func localKeyToRemote(ctx context.Context, opts Options, key types.NamespacedName) []mcreconcile.Request {
	local := typed(opts.LocalGVK)
	if err := opts.LocalCache.Get(ctx, key, local); err != nil || objmeta.OwnedByOtherAgent(local, opts.AgentName) {
		return nil
	}
	return localToRemote(ctx, local)
}
