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

// Package selection lists the PublishedResources this agent handles
// (--published-resource-selector) and maps CRD events to them; every
// controller uses it, so all of them honour the selector the same way.
package selection

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// List returns the selected PublishedResources that are not being deleted.
func List(ctx context.Context, c ctrlruntimeclient.Reader, selector labels.Selector) ([]syncagentv1alpha1.PublishedResource, error) {
	var list syncagentv1alpha1.PublishedResourceList
	if err := c.List(ctx, &list, ctrlruntimeclient.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("failed to list PublishedResources: %w", err)
	}
	out := list.Items[:0]
	for _, pr := range list.Items {
		if pr.DeletionTimestamp == nil {
			out = append(out, pr)
		}
	}
	return out, nil
}

// CRDEventHandler returns a handler for CRD events: it enqueues the
// selected PublishedResources of the CRD's group/kind, and calls invalidate
// (cached discovery is stale) when the event changes what the service
// cluster serves (a CRD created or deleted, its spec changed, its names
// accepted or it became established) and a selected PublishedResource
// uses the CRD's group, as its source or a related type. Status updates
// that change nothing served keep the cache.
func CRDEventHandler(c ctrlruntimeclient.Reader, selector labels.Selector, invalidate func(), log logr.Logger) handler.EventHandler {
	handle := func(ctx context.Context, obj ctrlruntimeclient.Object, served bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return
		}
		prs, err := List(ctx, c, selector)
		if err != nil {
			log.Error(err, "Failed to map a CRD event", "crd", crd.Name)
			return
		}
		invalidated := false
		for i := range prs {
			pr := &prs[i]
			if served && !invalidated && slices.Contains(groups(pr), crd.Spec.Group) {
				invalidate()
				invalidated = true
			}
			if pr.Spec.Resource.APIGroup == crd.Spec.Group && pr.Spec.Resource.Kind == crd.Spec.Names.Kind {
				q.Add(reconcile.Request{NamespacedName: ctrlruntimeclient.ObjectKeyFromObject(pr)})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			handle(ctx, e.Object, true, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			handle(ctx, e.ObjectNew, servedChanged(e.ObjectOld, e.ObjectNew), q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			handle(ctx, e.Object, true, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			handle(ctx, e.Object, true, q)
		},
	}
}

// servedChanged reports whether a CRD update can change discovery: its
// spec (generation), its accepted names or its Established condition.
func servedChanged(oldObj, newObj ctrlruntimeclient.Object) bool {
	o, ok1 := oldObj.(*apiextensionsv1.CustomResourceDefinition)
	n, ok2 := newObj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok1 || !ok2 {
		return true
	}
	return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Status.AcceptedNames, n.Status.AcceptedNames) ||
		established(o) != established(n)
}

func established(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.ConditionStatus {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status
		}
	}
	return apiextensionsv1.ConditionUnknown
}

// groups are the API groups a PublishedResource uses on the service
// cluster (and, for related types, possibly in kcp: a superset is fine).
func groups(pr *syncagentv1alpha1.PublishedResource) []string {
	out := []string{pr.Spec.Resource.APIGroup}
	for _, rel := range pr.Spec.Related {
		out = append(out, rel.Group)
		if rel.Projection != nil {
			out = append(out, rel.Projection.Group)
		}
	}
	return out
}

// Matches reports whether obj is selected.
func Matches(selector labels.Selector, obj ctrlruntimeclient.Object) bool {
	return selector.Matches(labels.Set(obj.GetLabels()))
}
