package sync

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
	mcsource "sigs.k8s.io/multicluster-runtime/pkg/source"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
)

// watchRelated makes changes of an entry's origin objects enqueue their
// primaries (spec.related[].watch): byOwner follows an ownerReference to a
// primary of the same side in the same namespace; bySelector enqueues the
// primaries on that side whose labels match.
func watchRelated(ctrl mccontroller.Controller, opts Options, e *related.Entry) error {
	w := e.Watch
	if w == nil || (w.ByOwner == nil && w.BySelector == nil) {
		return nil
	}
	var selector labels.Selector
	if w.ByOwner == nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(w.BySelector); err != nil {
			return err
		}
	}

	if e.Origin == related.SideKcp {
		return ctrl.MultiClusterWatch(mcsource.Kind(typed(e.Kcp.GVK),
			func(clusterName string, cl cluster.Cluster) handler.TypedEventHandler[*unstructured.Unstructured, mcreconcile.Request] {
				return handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj *unstructured.Unstructured) []mcreconcile.Request {
					keys := owners(obj, opts.RemoteGVK, opts.RemoteNamespaced)
					if selector != nil {
						keys = nil
						for _, o := range matching(ctx, cl.GetClient(), opts.RemoteGVK, selector) {
							keys = append(keys, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
						}
					}
					reqs := make([]mcreconcile.Request, 0, len(keys))
					for _, k := range keys {
						reqs = append(reqs, mcreconcile.Request{ClusterName: clusterName, Request: reconcile.Request{NamespacedName: k}})
					}
					return reqs
				})
			}))
	}

	// Service side: map local primaries to their kcp objects.
	return ctrl.Watch(source.TypedKind[*unstructured.Unstructured, mcreconcile.Request](opts.RelatedCache, typed(e.Service.GVK),
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj *unstructured.Unstructured) []mcreconcile.Request {
			var reqs []mcreconcile.Request
			if selector != nil {
				for _, o := range matching(ctx, opts.LocalCache, opts.LocalGVK, selector) {
					if !objmeta.OwnedByOtherAgent(o, opts.AgentName) {
						reqs = append(reqs, localToRemote(ctx, o)...)
					}
				}
				return reqs
			}
			for _, k := range owners(obj, opts.LocalGVK, opts.LocalNamespaced) {
				reqs = append(reqs, localKeyToRemote(ctx, opts, k)...)
			}
			return reqs
		})))
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
