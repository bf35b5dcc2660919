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
	"slices"
	"strings"
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
// and whether any is still pending (its Lease not decided yet: a release
// waits for it). An endpoint another partition's agent holds is that
// agent's to sync and release: during a release no endpoint changes hands
// (releaseUnderWay), so it releases what it holds before its finalizer
// goes. Without a partition the agent serves every endpoint listed.
func (r *reconciler) servedOf(listed []string) (urls []string, pending bool) {
	if r.fleet == nil || r.fleet.claims == nil {
		return listed, false
	}
	return servedAmong(listed, r.fleet.claims.States())
}

func servedAmong(listed []string, states map[string]endpointlease.Status) (urls []string, pending bool) {
	for _, u := range listed {
		switch states[u].State {
		case endpointlease.Serving:
			urls = append(urls, u)
		case endpointlease.Pending:
			pending = true
		}
	}
	return urls, pending
}

// releaseUnderWay reports whether a release is under way that keeps every
// endpoint with its holder (endpointlease.View.Frozen): a PublishedResource
// is being deleted while a release finalizer (of any partition) is on it,
// or this agent releases one it no longer syncs. Read from the cache; an
// error counts as a release under way.
func (r *reconciler) releaseUnderWay() bool {
	ctx, cancel := context.WithTimeout(context.Background(), listSelectedTimeout)
	defer cancel()
	prs := &syncagentv1alpha1.PublishedResourceList{}
	if err := r.client.List(ctx, prs); err != nil {
		return true
	}
	for i := range prs.Items {
		pr := &prs.Items[i]
		if pr.DeletionTimestamp != nil && slices.ContainsFunc(pr.Finalizers, isReleaseFinalizer) {
			return true
		}
		if r.hasReleaseFinalizer(pr) && (r.ReleaseOnly || !selection.Matches(r.Selector, pr)) {
			return true
		}
	}
	return false
}

// isReleaseFinalizer: a release finalizer of any agent or partition.
func isReleaseFinalizer(f string) bool { return strings.HasPrefix(f, "syncagent.kcp.io/release-") }

// listedURL is the URL the slice lists for an endpoint (before
// --endpoint-url-rewrite): the endpoint's Lease is named after it.
func (r *reconciler) listedURL(url string) string {
	r.servedMu.Lock()
	defer r.servedMu.Unlock()
	if raw, ok := r.listedAs[url]; ok {
		return raw
	}
	return url
}

// endpointLeasePending is how long a release waits before it looks again
// at an endpoint whose Lease is not decided yet (a claim steps every
// retry period, 2 s).
const endpointLeasePending = 2 * time.Second
