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

package syncmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
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

// ReasonNamespaceMetadataKept: a configured label or annotation is left as
// someone else set it on a namespace the agent created (a Warning Event on
// the namespace).
const ReasonNamespaceMetadataKept = "NamespaceMetadataKept"

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
	events    record.EventRecorder
	log       logr.Logger
}

func addNamespaceMetadata(mgr manager.Manager, agentName string, md *nsmeta.Metadata, log logr.Logger) error {
	r := &namespaceMetadata{client: mgr.GetClient(), agentName: agentName, metadata: md,
		events: mgr.GetEventRecorderFor(namespaceMetadataController), log: log.WithName("namespace-metadata")}
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
	rendered, err := r.metadata.Render(nsmeta.Context{ClusterName: cluster, Namespace: ns.Name})
	if err != nil {
		// Terminal until the configuration changes (a restart).
		r.log.Error(err, "Cannot render the metadata of a namespace the agent created", "namespace", ns.Name, "cluster", cluster)
		return reconcile.Result{}, nil
	}
	patch, foreign := rendered.Patch(ns.Labels, ns.Annotations)
	if len(foreign) > 0 {
		r.events.Eventf(ns, corev1.EventTypeWarning, ReasonNamespaceMetadataKept,
			"Left as someone else set them (the agent overwrites only values it set): %s", strings.Join(foreign, ", "))
	}
	if patch == nil {
		return reconcile.Result{}, nil
	}
	patch, err = withUID(patch, ns.UID, ns.ResourceVersion)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.client.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}, ctrlruntimeclient.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsConflict(err) {
			// Changed since the read: read again (with the controller's
			// backoff), not an error.
			return reconcile.Result{Requeue: true}, nil
		}
		if apierrors.IsNotFound(err) || (apierrors.IsInvalid(err) && r.replaced(ctx, ns)) {
			// Gone, or another namespace of that name now (its own
			// events reconcile it).
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("failed to update the metadata of namespace %s: %w", ns.Name, err)
	}
	r.log.Info("Updated the labels and annotations of a namespace the agent created", "namespace", ns.Name, "patch", string(patch))
	return reconcile.Result{}, nil
}

// replaced reports whether ns was deleted and created again since it was
// read (the API server refuses a patch whose uid differs as Invalid).
func (r *namespaceMetadata) replaced(ctx context.Context, ns *corev1.Namespace) bool {
	cur := &corev1.Namespace{}
	err := r.client.Get(ctx, types.NamespacedName{Name: ns.Name}, cur)
	return apierrors.IsNotFound(err) || (err == nil && cur.UID != ns.UID)
}

// withUID adds metadata.uid and resourceVersion to a merge patch: the API
// server refuses it for another namespace of the same name (deleted and
// created again by someone else since it was read), and for one changed
// since (someone's value must not be overwritten as the agent's: the
// change brings another reconcile).
func withUID(patch []byte, uid types.UID, resourceVersion string) ([]byte, error) {
	var p map[string]map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	p["metadata"]["uid"] = uid
	if resourceVersion != "" {
		p["metadata"]["resourceVersion"] = resourceVersion
	}
	return json.Marshal(p)
}
