// Package selection lists the PublishedResources this agent handles
// (--published-resource-selector) and maps CRD events to them; every
// controller uses it, so all of them honour the selector the same way.
package selection

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
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

// ForCRD returns requests for the selected PublishedResources whose source
// type is the CRD's group/kind.
func ForCRD(ctx context.Context, c ctrlruntimeclient.Reader, selector labels.Selector, crd *apiextensionsv1.CustomResourceDefinition) ([]reconcile.Request, error) {
	prs, err := List(ctx, c, selector)
	if err != nil {
		return nil, err
	}
	var reqs []reconcile.Request
	for _, pr := range prs {
		if pr.Spec.Resource.APIGroup == crd.Spec.Group && pr.Spec.Resource.Kind == crd.Spec.Names.Kind {
			reqs = append(reqs, reconcile.Request{NamespacedName: ctrlruntimeclient.ObjectKeyFromObject(&pr)})
		}
	}
	return reqs, nil
}

// CRDEventHandler returns a handler for CRD events: it calls invalidate (a
// CRD changed what the service cluster serves, so cached discovery is stale)
// and enqueues the selected PublishedResources of the CRD's group/kind.
func CRDEventHandler(c ctrlruntimeclient.Reader, selector labels.Selector, invalidate func(), log logr.Logger) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj ctrlruntimeclient.Object) []reconcile.Request {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return nil
		}
		invalidate()
		reqs, err := ForCRD(ctx, c, selector, crd)
		if err != nil {
			log.Error(err, "Failed to map a CRD event", "crd", crd.Name)
		}
		return reqs
	})
}

// Matches reports whether obj is selected.
func Matches(selector labels.Selector, obj ctrlruntimeclient.Object) bool {
	return selector.Matches(labels.Set(obj.GetLabels()))
}
