package syncmanager

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
)

// sweeper periodically deletes state Secrets whose kcp object is gone
// (contract §7 #6): objects that vanish without our finalizer being
// processed, for example when their workspace is deleted, would otherwise
// leave their state behind forever. A Secret is deleted only when every
// object it holds state for is confirmed missing by a live read (never a
// cache) in an engaged workspace; anything it cannot check is kept.
type sweeper struct {
	fleet     *fleet
	client    ctrlruntimeclient.Client
	namespace string
	agentName string
	interval  time.Duration
	log       logr.Logger
}

// Start sweeps every interval until ctx ends.
func (s *sweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.sweep(ctx)
		}
	}
}

// NeedLeaderElection: only the leader deletes state.
func (s *sweeper) NeedLeaderElection() bool { return true }

func (s *sweeper) sweep(ctx context.Context) {
	var secrets corev1.SecretList
	if err := s.client.List(ctx, &secrets, ctrlruntimeclient.InNamespace(s.namespace),
		ctrlruntimeclient.MatchingLabels{keys.ObjectState: "true", keys.AgentName: s.agentName}); err != nil {
		s.log.Error(err, "Failed to list state Secrets for the orphan sweep")
		return
	}
	for i := range secrets.Items {
		secret := &secrets.Items[i]
		if !s.orphaned(ctx, secret) {
			continue
		}
		if err := s.client.Delete(ctx, secret); ctrlruntimeclient.IgnoreNotFound(err) != nil {
			s.log.Error(err, "Failed to delete an orphaned state Secret", "secret", secret.Name)
			continue
		}
		s.log.Info("Deleted orphaned state Secret", "secret", secret.Name)
	}
}

// orphaned reports whether every object the Secret holds state for is
// confirmed gone.
func (s *sweeper) orphaned(ctx context.Context, secret *corev1.Secret) bool {
	cl := s.fleet.engagedCluster(secret.Labels[keys.RemoteObjectCluster])
	if cl == nil || len(secret.Data) == 0 {
		return false
	}
	var objects []*unstructured.Unstructured
	if primary, ok := state.PrimaryOfRelated(secret); ok {
		// A related object's state goes with its primary.
		objects = append(objects, primary.Unstructured())
	} else {
		for _, data := range secret.Data {
			stored := &unstructured.Unstructured{}
			if err := stored.UnmarshalJSON(data); err != nil {
				return false
			}
			objects = append(objects, stored)
		}
	}
	for _, stored := range objects {
		if stored.GetName() == "" {
			return false
		}
		gvk, ok := s.fleet.syncedGVK(stored.GroupVersionKind().GroupKind())
		if !ok {
			return false
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		key := types.NamespacedName{Namespace: stored.GetNamespace(), Name: stored.GetName()}
		if cl.GetCache().Get(ctx, key, obj) == nil {
			// In the cache: alive, no request needed.
			return false
		}
		// "Gone" needs a live read: the provider's GetAPIReader is its
		// cache (empty right after a reconnect, when every object would
		// look gone); its client reads unstructured objects from the
		// server.
		if err := cl.GetClient().Get(ctx, key, obj); !apierrors.IsNotFound(err) {
			return false
		}
	}
	return true
}
