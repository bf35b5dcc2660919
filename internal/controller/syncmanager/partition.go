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
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/endpointlease"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/selection"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// The keys this agent writes on the PublishedResources it selects are its
// partition's (Options.Partition): the agents of several partitions of one
// export select the same PublishedResources, and each releases what it
// synced on its own shards, so each keeps a finalizer, a record of synced
// resources and a SyncReady condition of its own. Without a partition they
// are the usual ones.

// releaseFinalizer is the finalizer with which this agent keeps a
// PublishedResource until it released its objects.
func (r *reconciler) releaseFinalizer() string {
	return keys.ReleaseFinalizerIn(r.AgentName, r.Partition)
}

// syncedResourcesKey is the annotation recording the kcp resources this
// agent's controllers synced for a PublishedResource.
func (r *reconciler) syncedResourcesKey() string { return keys.SyncedResourcesIn(r.Partition) }

// ownSyncReady is c (built as SyncReady) with this agent's condition type.
func (r *reconciler) ownSyncReady(c metav1.Condition) metav1.Condition {
	c.Type = conditions.SyncReadyType(r.Partition)
	return c
}

// syncReadyOf is this agent's SyncReady condition on pr, nil if it has none.
func (r *reconciler) syncReadyOf(pr *syncagentv1alpha1.PublishedResource) *metav1.Condition {
	return apimeta.FindStatusCondition(pr.Status.Conditions, conditions.SyncReadyType(r.Partition))
}

// partitionChanged writes this agent's SyncReady False (PartitionChanged)
// on a PublishedResource it selects, after its endpoint slice changed
// partition (cause: endpoints' error).
func (r *reconciler) partitionChanged(ctx context.Context, name string, cause error) error {
	pr := &syncagentv1alpha1.PublishedResource{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: name}, pr); err != nil {
		return ctrlruntimeclient.IgnoreNotFound(err)
	}
	if !selection.Matches(r.Selector, pr) || pr.DeletionTimestamp != nil {
		return nil
	}
	cond := syncReady(metav1.ConditionFalse, syncagentv1alpha1.ReasonPartitionChanged, "Not synced: %v.", cause)
	return r.status.Update(ctx, pr, func(st *syncagentv1alpha1.PublishedResourceStatus) {
		conditions.Apply(st, r.ownSyncReady(cond), pr.Generation)
	})
}

// servedOf is, of the endpoints the slice lists, those this agent serves,
// and whether any is still pending: neither served here nor held by another
// partition's agent (which releases what it serves). Without a partition
// the agent serves every endpoint listed.
func (r *reconciler) servedOf(listed []string) (urls []string, pending bool) {
	if r.fleet == nil || r.fleet.claims == nil {
		return listed, false
	}
	states := r.fleet.claims.States()
	for _, u := range listed {
		switch states[u] {
		case endpointlease.Serving:
			urls = append(urls, u)
		case endpointlease.Pending:
			pending = true
		}
	}
	return urls, pending
}

// endpointLeasePending is how long a release waits before it looks again
// at an endpoint whose Lease is not decided yet (a claim steps every
// retry period, 2 s).
const endpointLeasePending = 2 * time.Second
