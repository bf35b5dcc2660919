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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
)

// createdNamespaces deletes the service-cluster namespaces this agent
// created (labelled with its name) for a workspace that is gone, in two
// sweeps over the same endpoints:
//
//  1. A namespace whose workspace no endpoint's binding list names and
//     that is not engaged, whose name contains the workspace's logical
//     cluster name (one per workspace: a namespace several workspaces
//     share is never deleted), and that is empty (nothing but what
//     Kubernetes puts into every namespace) is marked with the
//     DeletionCandidate annotation.
//  2. The next sweep deletes it if all of that still holds and nothing
//     changed it since the mark (its resourceVersion): an agent about to
//     write into a namespace removes the mark first, which changes it.
//
// Anything else keeps a namespace (copies, objects the agent did not
// create, a type the agent may not list), and a mark that no longer holds
// is removed. bound returns this sweep's binding list; one that could not
// be read decides nothing.
func (s *sweeper) createdNamespaces(ctx context.Context, bound func() *bindings) {
	prev, prevEndpoints := s.candidates, s.candidatesEndpoints
	s.candidates, s.candidatesEndpoints = map[types.UID]string{}, ""
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := s.reader.List(ctx, &list, ctrlruntimeclient.MatchingLabels{keys.CreatedBy: s.agentName}); err != nil {
		s.log.Error(err, "Failed to list the namespaces the agent created")
		return
	}
	if len(list.Items) == 0 {
		return
	}
	b := bound()
	if b.err != nil {
		s.log.V(1).Info("Cannot tell which workspaces bind the export; created namespaces are kept", "error", b.err.Error())
		return
	}
	s.candidatesEndpoints = b.endpoints
	if prevEndpoints != b.endpoints {
		prev = nil // another set of endpoints: start again
	}
	s.discovery.Invalidate()
	for i := range list.Items {
		ns := &list.Items[i]
		if ns.DeletionTimestamp != nil {
			continue
		}
		if !s.emptyOfGoneWorkspace(ctx, ns, b) {
			if _, marked := ns.Annotations[keys.DeletionCandidate]; marked {
				s.unmark(ctx, ns)
			}
			continue
		}
		markedRV, wasCandidate := prev[ns.UID]
		if !wasCandidate || markedRV != ns.ResourceVersion {
			if rv, ok := s.mark(ctx, ns); ok {
				s.candidates[ns.UID] = rv
			}
			continue
		}
		// Engaged since the check began (the check lists every type)?
		if s.fleet.engagedCluster(ns.Labels[keys.CreatedForCluster]) != nil {
			continue
		}
		uid, rv := ns.UID, ns.ResourceVersion
		del := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}
		err := s.client.Delete(ctx, del, ctrlruntimeclient.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			s.log.V(1).Info("A namespace the agent created changed since it was found empty; it is kept", "namespace", ns.Name)
			continue
		case err != nil:
			s.log.Error(err, "Failed to delete a namespace the agent created", "namespace", ns.Name)
			continue
		}
		metrics.CreatedNamespacesDeleted.Inc()
		s.log.Info("Deleted a namespace the agent created for a workspace that is gone, and that nothing lives in", "namespace", ns.Name, "cluster", ns.Labels[keys.CreatedForCluster])
	}
}

// emptyOfGoneWorkspace reports whether ns was created for one workspace
// that is gone and holds nothing.
func (s *sweeper) emptyOfGoneWorkspace(ctx context.Context, ns *metav1.PartialObjectMetadata, b *bindings) bool {
	cluster := ns.Labels[keys.CreatedForCluster]
	if cluster == "" || !strings.Contains(ns.Name, cluster) || !b.gone(s.fleet, cluster) {
		return false
	}
	verdict, err := s.emptyNS.Check(ctx, ns.Name)
	switch {
	case err != nil:
		s.log.Error(err, "Failed to tell whether a namespace the agent created is empty", "namespace", ns.Name)
		return false
	case verdict.Unknown != "":
		s.log.Info("Keeping a namespace the agent created for a workspace that is gone: cannot tell whether it is empty", "namespace", ns.Name, "cluster", cluster, "reason", verdict.Unknown)
		return false
	case !verdict.Empty:
		s.log.V(1).Info("Keeping a namespace the agent created for a workspace that is gone: it is not empty", "namespace", ns.Name, "cluster", cluster, "holds", verdict.Holder)
		return false
	}
	return true
}

// mark sets the DeletionCandidate annotation on ns and returns the
// resourceVersion that gave it.
func (s *sweeper) mark(ctx context.Context, ns *metav1.PartialObjectMetadata) (string, bool) {
	got, err := s.annotate(ctx, ns, time.Now().UTC().Format(time.RFC3339))
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return "", false // changed since it was listed: looked at again next time
	case err != nil:
		s.log.Error(err, "Failed to mark an empty namespace the agent created for deletion", "namespace", ns.Name)
		return "", false
	}
	s.log.V(1).Info("Marked an empty namespace the agent created for a workspace that is gone; the next sweep deletes it unless it changes", "namespace", ns.Name)
	return got.ResourceVersion, true
}

// unmark removes the DeletionCandidate annotation from ns.
func (s *sweeper) unmark(ctx context.Context, ns *metav1.PartialObjectMetadata) {
	if _, err := s.annotate(ctx, ns, nil); ctrlruntimeclient.IgnoreNotFound(err) != nil {
		s.log.Error(err, "Failed to remove the deletion mark from a namespace the agent created", "namespace", ns.Name)
	}
}

// annotate sets (value nil: removes) the DeletionCandidate annotation of
// ns, as long as ns is the namespace that was checked (its UID and
// resourceVersion).
func (s *sweeper) annotate(ctx context.Context, ns *metav1.PartialObjectMetadata, value any) (*corev1.Namespace, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": ns.UID, "resourceVersion": ns.ResourceVersion, "annotations": map[string]any{keys.DeletionCandidate: value},
	}})
	if err != nil {
		return nil, err
	}
	got := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}
	return got, s.client.Patch(ctx, got, ctrlruntimeclient.RawPatch(types.MergePatchType, patch))
}
