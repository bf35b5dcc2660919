package syncmanager

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
)

// namespaceMetadataController is the name of the controller that keeps
// the configured metadata on the namespaces the agent created.
const namespaceMetadataController = "syncagent-namespace-metadata"

// namespaceMetadata keeps the configured labels and annotations
// (--namespace-label, --namespace-annotation) on the service-cluster
// namespaces this agent created (keys.CreatedBy): every one is reconciled
// when the leader starts, so a changed configuration reaches the
// namespaces created before it, and again when one changes. Namespaces the
// agent did not create are never looked at.
type namespaceMetadata struct {
	client    ctrlruntimeclient.Client
	agentName string
	metadata  *nsmeta.Metadata
	log       logr.Logger
}

func addNamespaceMetadata(mgr manager.Manager, agentName string, md *nsmeta.Metadata, log logr.Logger) error {
	r := &namespaceMetadata{client: mgr.GetClient(), agentName: agentName, metadata: md, log: log.WithName("namespace-metadata")}
	created := predicate.NewPredicateFuncs(func(o ctrlruntimeclient.Object) bool { return o.GetLabels()[keys.CreatedBy] == agentName })
	return builder.ControllerManagedBy(mgr).
		Named(namespaceMetadataController).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		For(&corev1.Namespace{}, builder.WithPredicates(created, predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(r)
}

func (r *namespaceMetadata) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, req.NamespacedName, ns); err != nil {
		return reconcile.Result{}, ctrlruntimeclient.IgnoreNotFound(err)
	}
	if ns.Labels[keys.CreatedBy] != r.agentName || ns.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	cluster := ns.Labels[keys.CreatedForCluster]
	rendered, err := r.metadata.Render(nsmeta.Context{ClusterName: cluster})
	if err != nil {
		// Terminal until the configuration changes (a restart).
		r.log.Error(err, "Cannot render the metadata of a namespace the agent created", "namespace", ns.Name, "cluster", cluster)
		return reconcile.Result{}, nil
	}
	patch := rendered.Patch(ns.Labels, ns.Annotations)
	if patch == nil {
		return reconcile.Result{}, nil
	}
	patch, err = withUID(patch, ns.UID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.client.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); err != nil {
		return reconcile.Result{}, ctrlruntimeclient.IgnoreNotFound(fmt.Errorf("failed to update the metadata of namespace %s: %w", ns.Name, err))
	}
	r.log.Info("Updated the labels and annotations of a namespace the agent created", "namespace", ns.Name, "patch", string(patch))
	return reconcile.Result{}, nil
}

// withUID adds metadata.uid to a merge patch: the API server refuses it
// for another namespace of the same name (deleted and created again by
// someone else since it was read).
func withUID(patch []byte, uid types.UID) ([]byte, error) {
	var p map[string]map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	p["metadata"]["uid"] = uid
	return json.Marshal(p)
}
