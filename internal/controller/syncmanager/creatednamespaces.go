package syncmanager

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
)

// createdNamespaces deletes the service-cluster namespaces this agent
// created (labelled with its name) for a workspace that is not engaged any
// more (deleted or unbound), once two sweeps in a row proved them empty:
// nothing in them but what Kubernetes puts into every namespace. Anything
// else keeps a namespace: copies, objects the agent did not create, a type
// the agent may not list. The delete is conditional on the namespace being
// the one that was checked, unchanged.
func (s *sweeper) createdNamespaces(ctx context.Context) {
	seen := s.emptySeen
	s.emptySeen = map[types.UID]bool{}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := s.reader.List(ctx, &list, ctrlruntimeclient.MatchingLabels{keys.CreatedBy: s.agentName}); err != nil {
		s.log.Error(err, "Failed to list the namespaces the agent created")
		return
	}
	s.discovery.Invalidate()
	for i := range list.Items {
		ns := &list.Items[i]
		cluster := ns.Labels[keys.CreatedForCluster]
		if ns.DeletionTimestamp != nil || cluster == "" || s.fleet.engagedCluster(cluster) != nil {
			continue
		}
		verdict, err := s.emptyNS.Check(ctx, ns.Name)
		switch {
		case err != nil:
			s.log.Error(err, "Failed to tell whether a namespace the agent created is empty", "namespace", ns.Name)
			continue
		case verdict.Unknown != "":
			s.log.Info("Keeping a namespace the agent created for a workspace that is gone: cannot tell whether it is empty", "namespace", ns.Name, "cluster", cluster, "reason", verdict.Unknown)
			continue
		case !verdict.Empty:
			s.log.V(1).Info("Keeping a namespace the agent created for a workspace that is gone: it is not empty", "namespace", ns.Name, "cluster", cluster, "holds", verdict.Holder)
			continue
		case !seen[ns.UID]:
			s.emptySeen[ns.UID] = true // deleted if still empty next time
			continue
		}
		uid, rv := ns.UID, ns.ResourceVersion
		del := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}
		if err := s.client.Delete(ctx, del, ctrlruntimeclient.Preconditions{UID: &uid, ResourceVersion: &rv}); ctrlruntimeclient.IgnoreNotFound(err) != nil {
			s.log.Error(err, "Failed to delete a namespace the agent created", "namespace", ns.Name)
			continue
		}
		metrics.CreatedNamespacesDeleted.Inc()
		s.log.Info("Deleted a namespace the agent created for a workspace that is gone, and that nothing lives in", "namespace", ns.Name, "cluster", cluster)
	}
}
