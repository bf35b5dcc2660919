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
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/emptyns"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// sweeper periodically deletes state Secrets whose kcp object is gone
// (contract §7 #6): objects that vanish without our finalizer being
// processed, for example when their workspace is deleted, would otherwise
// leave their state behind forever. A Secret is deleted only when every
// object it holds state for is confirmed missing by a live read (never a
// cache) in an engaged workspace; anything it cannot check is kept.
//
// With unbound set (--sweep-unbound-workspaces) it also deletes the local
// copies and state of workspaces that no longer bind the export (deleted
// or unbound while the agent was down, or with our finalizers removed by
// hand), which nothing else would ever clean up: see goneWorkspaces.
type sweeper struct {
	fleet  *fleet
	client ctrlruntimeclient.Client
	// reader lists local copies from the API server (metadata only).
	reader ctrlruntimeclient.Reader
	// clients reach the endpoints, where the export's bindings are listed.
	clients   endpointClients
	namespace string
	agentName string
	interval  time.Duration
	unbound   bool
	log       logr.Logger
	// suspects are the workspaces the previous sweep found unbound, with
	// the endpoints it listed: only a workspace found unbound by two
	// sweeps in a row over the same endpoints is cleaned up.
	suspects          map[string]bool
	suspectsEndpoints string

	// emptyNS, if set (--delete-created-namespaces), proves the namespaces
	// the agent created empty before they are deleted (see
	// createdNamespaces); discovery is its cache of the service cluster's
	// types, renewed every sweep.
	emptyNS   *emptyns.Checker
	discovery interface{ Invalidate() }
	// candidates are the created namespaces the previous sweep found empty
	// and marked, with the resourceVersion the mark gave them, and the
	// endpoints that sweep listed the bindings of.
	candidates          map[types.UID]string
	candidatesEndpoints string
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

// failed logs a failure of the sweep, unless the sweep was cut off because
// the agent stops or may no longer lead (the next leader sweeps again).
func (s *sweeper) failed(ctx context.Context, err error, msg string, kv ...any) {
	if lifecycle.Quiet(ctx, err) {
		s.log.V(1).Info(msg, append(kv, "error", err.Error())...)
		return
	}
	s.log.Error(err, msg, kv...)
}

// NeedLeaderElection: only the leader deletes state.
func (s *sweeper) NeedLeaderElection() bool { return true }

func (s *sweeper) sweep(ctx context.Context) {
	// The cache's own Secrets, only read (a copy of every state Secret
	// would be held for the whole sweep); an orphan is deleted through a
	// copy.
	var secrets corev1.SecretList
	if err := s.client.List(ctx, &secrets, ctrlruntimeclient.InNamespace(s.namespace),
		ctrlruntimeclient.MatchingLabels{keys.ObjectState: "true", keys.AgentName: s.agentName}, ctrlruntimeclient.UnsafeDisableDeepCopy); err != nil {
		s.failed(ctx, err, "Failed to list state Secrets for the orphan sweep")
		return
	}
	// Listed once a part of the sweep needs it.
	bound := sync.OnceValue(func() *bindings { return s.bindings(ctx) })
	if s.unbound {
		s.goneWorkspaces(ctx, secrets.Items, bound)
	}
	deleted, handed := 0, 0
	seen := map[state.Primary]bool{}
	for i := range secrets.Items {
		secret := &secrets.Items[i]
		gone, ok := s.orphaned(ctx, secret)
		if !ok {
			continue
		}
		if s.handOver(ctx, secret, gone, seen) {
			handed++
			continue
		}
		// Only the Secret as it was checked: one a new object of the same
		// name wrote since is its three-way base.
		err := s.client.Delete(ctx, secret.DeepCopy(), ctrlruntimeclient.Preconditions{UID: &secret.UID, ResourceVersion: &secret.ResourceVersion})
		if apierrors.IsConflict(err) {
			s.log.V(1).Info("An orphaned state Secret changed since the sweep checked it; left to the next sweep", "secret", secret.Name)
			continue
		}
		if ctrlruntimeclient.IgnoreNotFound(err) != nil {
			s.failed(ctx, err, "Failed to delete an orphaned state Secret", "secret", secret.Name)
			continue
		}
		deleted++
		s.log.Info("Deleted orphaned state Secret", "secret", secret.Name)
	}
	s.log.V(1).Info("State sweep done", "stateSecrets", len(secrets.Items), "deleted", deleted, "handedOver", handed)
	if s.emptyNS != nil {
		s.createdNamespaces(ctx, bound)
	}
}

// bindings is what one sweep found out about the workspaces that bind the
// export: those of every endpoint's binding list (bound), and the
// endpoints listed. err says it could not tell (an endpoint could not be
// listed, a binding names no workspace, no endpoint is connected).
type bindings struct {
	bound     map[string]bool
	endpoints string
	err       error
}

// gone reports whether the workspace was found unbound: not in any
// endpoint's binding list, and not engaged.
func (b *bindings) gone(f *fleet, ws string) bool {
	return b.err == nil && !b.bound[ws] && f.engagedCluster(ws) == nil
}

// bindings lists the export's bindings on every connected endpoint.
func (s *sweeper) bindings(ctx context.Context) *bindings {
	urls := s.fleet.endpointURLs()
	bound, err := s.boundWorkspaces(ctx, urls)
	return &bindings{bound: bound, endpoints: strings.Join(urls, " "), err: err}
}

// orphaned returns the kcp objects the Secret holds state for (for a
// related object's state, its primary) if every one of them is confirmed
// gone.
func (s *sweeper) orphaned(ctx context.Context, secret *corev1.Secret) ([]*unstructured.Unstructured, bool) {
	cl := s.fleet.engagedCluster(secret.Labels[keys.RemoteObjectCluster])
	if cl == nil || len(secret.Data) == 0 {
		return nil, false
	}
	var objects []*unstructured.Unstructured
	if primary, ok := state.PrimaryOfRelated(secret); ok {
		// A related object's state goes with its primary.
		objects = append(objects, primary.Unstructured())
	} else {
		for _, data := range secret.Data {
			stored := &unstructured.Unstructured{}
			if err := stored.UnmarshalJSON(data); err != nil {
				return nil, false
			}
			objects = append(objects, stored)
		}
	}
	for _, stored := range objects {
		if stored.GetName() == "" {
			return nil, false
		}
		gvk, ok := s.fleet.syncedGVK(stored.GroupVersionKind().GroupKind())
		if !ok {
			return nil, false
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		key := types.NamespacedName{Namespace: stored.GetNamespace(), Name: stored.GetName()}
		err := cl.GetCache().Get(ctx, key, obj)
		// The read may have started the informer of the type.
		s.fleet.usedBy(secret.Labels[keys.RemoteObjectCluster], gvk)
		if err == nil {
			// In the cache: alive, no request needed.
			return nil, false
		}
		// "Gone" needs a live read: the provider's GetAPIReader is its
		// cache (empty right after a reconnect, when every object would
		// look gone); its client reads unstructured objects from the
		// server.
		// Only the object's own 404 counts: one for the whole resource (a
		// binding going away, a resource withdrawn from the export) says
		// nothing about the object.
		if err := cl.GetClient().Get(ctx, key, obj); !syncer.ObjectNotFound(err, key.Name) {
			return nil, false
		}
	}
	return objects, true
}

// handOver hands each gone kcp object whose local copy is still there to
// the sync controller of its kind, and reports whether there was one (or
// it could not tell): the state then stays. The controller's pass finds
// the object gone and deletes the copy, then the state (see
// syncer.Vanished); without the state the copy could no longer be cleaned
// up, and a later kcp object of the same name would take the copy over
// without a base for its three-way merge. Nothing else may bring that
// pass: the object can have vanished while its workspace was not engaged
// or its PublishedResource not selected, and the patrol may be off. The
// pass needs the object's own state: a related object's state whose
// primary has none left goes. seen remembers the copies looked up in this
// sweep, by object.
func (s *sweeper) handOver(ctx context.Context, secret *corev1.Secret, gone []*unstructured.Unstructured, seen map[state.Primary]bool) bool {
	cluster := secret.Labels[keys.RemoteObjectCluster]
	handed := false
	for _, obj := range gone {
		gk := obj.GroupVersionKind().GroupKind()
		p := state.Primary{Remote: objmeta.Remote{Cluster: cluster, Namespace: obj.GetNamespace(), Name: obj.GetName()}, APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind()}
		key, ctrl, ok := s.fleet.syncing(gk)
		if !ok {
			// Its controller stopped since orphaned checked it.
			return true
		}
		found, cached := seen[p]
		if !cached {
			var err error
			if found, err = s.hasCopy(ctx, key.localGVK, p); err != nil {
				s.failed(ctx, err, "Failed to look for the local copy of a vanished kcp object; its state stays", "cluster", cluster, "kind", gk.String(), "name", objmeta.QualifiedName(p.Namespace, p.Name))
				return true
			}
			seen[p] = found
		}
		if !found {
			continue
		}
		if _, related := state.PrimaryOfRelated(secret); related {
			own, err := s.store().Get(ctx, p)
			if err != nil {
				return true
			}
			if own == nil {
				continue
			}
		}
		handed = true
		if cached {
			continue
		}
		req := mcreconcile.Request{ClusterName: cluster, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}}}
		// A controller that does not run yet is asked by the next sweep.
		if ctrl != nil && ctrl.Enqueue(req) {
			s.log.V(1).Info("A kcp object vanished while its local copy stayed; handed to its sync, which deletes the copy, then the state", "cluster", cluster, "kind", gk.String(), "name", objmeta.QualifiedName(p.Namespace, p.Name))
		}
	}
	return handed
}

// store reads this agent's state Secrets (from the cache).
func (s *sweeper) store() *state.Store {
	return &state.Store{Client: s.client, Namespace: s.namespace, AgentName: s.agentName}
}

// hasCopy reports whether the service cluster (read live) has a local
// copy of type localGVK of the kcp object p that the sync would take for
// its own: found by the object's labels, without another agent's label
// (copies of the reference or of older versions carry none), not a state
// Secret, and recording no other kcp kind (that would be the copy of a
// same-named object of another PublishedResource).
func (s *sweeper) hasCopy(ctx context.Context, localGVK schema.GroupVersionKind, p state.Primary) (bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(localGVK.GroupVersion().WithKind(localGVK.Kind + "List"))
	if err := s.reader.List(ctx, list, &ctrlruntimeclient.ListOptions{LabelSelector: p.Selector()}); err != nil {
		return false, fmt.Errorf("failed to list %s: %w", localGVK.Kind, err)
	}
	for i := range list.Items {
		item := &list.Items[i]
		if _, isState := item.Labels[keys.ObjectState]; isState {
			continue
		}
		if !objmeta.OwnedByOtherAgent(item, s.agentName) && !objmeta.OfOtherKind(item, p.GroupKind()) {
			return true, nil
		}
	}
	return false, nil
}

// listPage is the page size of the lists of bindings and local copies.
const listPage = 500

// apiBindings is where the export's bindings are listed on an endpoint
// (the provider engages workspaces from the same list).
var apiBindings = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apibindings"}

// goneWorkspaces deletes the local copies (of the running controllers'
// types) and the state Secrets of workspaces that no endpoint binds the
// export in. A workspace counts as gone only when two sweeps in a row,
// over the same set of endpoints, listed the bindings of every endpoint
// without an error and did not find it, and it is not engaged. Copies
// without this agent's label (of other or older agents) are left alone.
func (s *sweeper) goneWorkspaces(ctx context.Context, secrets []corev1.Secret, bound func() *bindings) {
	// Anything that cannot be decided starts the count again.
	suspects, endpoints := s.suspects, s.suspectsEndpoints
	s.suspects, s.suspectsEndpoints = nil, ""
	copies, err := s.listCopies(ctx)
	if err != nil {
		s.failed(ctx, err, "Failed to list local copies for the sweep of unbound workspaces")
		return
	}
	named := map[string]bool{}
	for _, c := range copies {
		named[c.GetLabels()[keys.RemoteObjectCluster]] = true
	}
	for _, sec := range secrets {
		named[sec.Labels[keys.RemoteObjectCluster]] = true
	}
	delete(named, "")
	if len(named) == 0 {
		return
	}
	b := bound()
	if b.err != nil {
		s.log.Info("Cannot tell which workspaces bind the export; the sweep of unbound workspaces waits", "error", b.err.Error())
		return
	}
	gone := map[string]bool{}
	for ws := range named {
		if b.gone(s.fleet, ws) {
			gone[ws] = true
		}
	}
	s.suspects, s.suspectsEndpoints = gone, b.endpoints
	confirmed := map[string]bool{}
	if endpoints == s.suspectsEndpoints {
		for ws := range gone {
			if suspects[ws] {
				confirmed[ws] = true
			}
		}
	}
	for i := range copies {
		c := &copies[i]
		if !confirmed[c.GetLabels()[keys.RemoteObjectCluster]] {
			continue
		}
		if _, importing := c.GetAnnotations()[keys.Importing]; importing {
			// Claimed by an import that did not finish: the service
			// owner's object, not a copy.
			continue
		}
		if err := s.client.Delete(ctx, c); ctrlruntimeclient.IgnoreNotFound(err) != nil {
			s.failed(ctx, err, "Failed to delete the local copy of a gone workspace", "kind", c.Kind, "namespace", c.GetNamespace(), "name", c.GetName())
			continue
		}
		metrics.GoneWorkspaceObjectsDeleted.WithLabelValues("copy").Inc()
		s.log.Info("Deleted the local copy of an object of a workspace that no longer binds the export", "kind", c.Kind, "namespace", c.GetNamespace(), "name", c.GetName(), "cluster", c.GetLabels()[keys.RemoteObjectCluster])
	}
	for i := range secrets {
		sec := &secrets[i]
		if !confirmed[sec.Labels[keys.RemoteObjectCluster]] {
			continue
		}
		if err := s.client.Delete(ctx, sec.DeepCopy()); ctrlruntimeclient.IgnoreNotFound(err) != nil {
			s.failed(ctx, err, "Failed to delete the state of a gone workspace", "secret", sec.Name)
			continue
		}
		metrics.GoneWorkspaceObjectsDeleted.WithLabelValues("state").Inc()
		s.log.Info("Deleted the state of an object of a workspace that no longer binds the export", "secret", sec.Name, "cluster", sec.Labels[keys.RemoteObjectCluster])
	}
}

// listCopies lists, from the API server and as metadata, this agent's
// local copies of the types the running controllers sync.
func (s *sweeper) listCopies(ctx context.Context) ([]metav1.PartialObjectMetadata, error) {
	synced, err := labels.NewRequirement(keys.RemoteObjectCluster, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	var out []metav1.PartialObjectMetadata
	for _, gvk := range s.fleet.localGVKs() {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := &ctrlruntimeclient.ListOptions{LabelSelector: labels.NewSelector().Add(*synced), Limit: listPage}
		for {
			if err := s.reader.List(ctx, list, opts); err != nil {
				return nil, fmt.Errorf("failed to list %s: %w", gvk.Kind, err)
			}
			for _, item := range list.Items {
				// Copies without this agent's label may be another agent's.
				if item.Labels[keys.AgentName] != s.agentName || item.Labels[keys.ObjectState] == "true" {
					continue
				}
				item.SetGroupVersionKind(gvk)
				out = append(out, item)
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return out, nil
}

// boundWorkspaces lists the workspaces that bind the export on the
// endpoints urls; any error, a binding without a workspace, or no endpoint
// at all means it cannot tell.
func (s *sweeper) boundWorkspaces(ctx context.Context, urls []string) (map[string]bool, error) {
	bound := map[string]bool{}
	err := eachBinding(ctx, s.clients, urls, apiBindings, func(url string, b *unstructured.Unstructured) error {
		ws := logicalcluster.From(b).String()
		if ws == "" {
			return fmt.Errorf("a binding on %s names no workspace", url)
		}
		bound[ws] = true
		return nil
	})
	return bound, err
}

// eachBinding calls fn for every binding of the export the endpoints urls
// list (as gvr), page by page; it stops at the first error, and no
// endpoint at all is one.
func eachBinding(ctx context.Context, clients endpointClients, urls []string, gvr schema.GroupVersionResource, fn func(url string, b *unstructured.Unstructured) error) error {
	if len(urls) == 0 {
		return errors.New("no endpoint is connected")
	}
	for _, url := range urls {
		c, err := clients(url, "*")
		if err != nil {
			return err
		}
		opts := metav1.ListOptions{Limit: listPage}
		for {
			list, err := c.Resource(gvr).List(ctx, opts)
			if err != nil {
				return fmt.Errorf("failed to list the bindings on %s: %w", url, err)
			}
			for i := range list.Items {
				if err := fn(url, &list.Items[i]); err != nil {
					return err
				}
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return nil
}
