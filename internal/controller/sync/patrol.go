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

package sync

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// Patrol configures a sync controller's patroller: a periodic
// anti-entropy pass that compares every kcp object with what the agent
// keeps for it on the service cluster and puts what the event-driven path
// missed (a state Secret deleted: nothing watches them; a lost event)
// through the normal sync, and reports what the contract keeps (fields
// changed on the service side).
type Patrol struct {
	// Interval between passes, each jittered by up to ±patrolJitter; 0
	// disables the patroller.
	Interval time.Duration
	// Report only counts and logs what a pass finds; nothing is written.
	Report bool
}

// ReasonPatrolDrift is the reason of the Event on the PublishedResource
// that sums up a patrol pass that found drift.
const ReasonPatrolDrift = "PatrolDrift"

const (
	// patrolJitter spreads the passes of the controllers (±10 %).
	patrolJitter = 0.1
	// patrolChecksPerSecond and patrolBurst bound the checks of a pass
	// (re-checks included): a check reads caches, plus the server for a
	// state Secret the cache lacks, a name no copy holds, an unwatched
	// related type or a suspected orphan, so a pass never competes with
	// the event path for the API servers.
	patrolChecksPerSecond = 50
	patrolBurst           = 10
	// patrolSettle is the wait before objects are checked again: drift
	// found twice that far apart is no event the sync is still working
	// on; a repair is checked again after the same wait, up to
	// patrolRecheckRounds times.
	patrolSettle        = 5 * time.Second
	patrolRecheckRounds = 6
)

// patrolDelay is the wait before the next pass: interval ± jitter, where
// u in [0, 1) is uniformly random.
func patrolDelay(interval time.Duration, u float64) time.Duration {
	return time.Duration(float64(interval) * (1 + patrolJitter*(2*u-1)))
}

// runPatrol runs a pass every jittered interval once the controller has
// synced, until ctx ends; done is closed when it returns.
func (c *Controller) runPatrol(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	if c.opts.Patrol.Interval <= 0 {
		return
	}
	select {
	case <-c.synced:
	case <-ctx.Done():
		return
	}
	for {
		t := time.NewTimer(patrolDelay(c.opts.Patrol.Interval, rand.Float64())) //nolint:gosec // jitter, not security
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		c.patrolOnce(ctx)
	}
}

// patrolFindings is what a pass found: drift kinds of kcp objects, and
// orphaned local copies.
type patrolFindings struct {
	drifted map[mcreconcile.Request][]string
	orphans map[mcreconcile.Request]*unstructured.Unstructured
}

func (f patrolFindings) empty() bool { return len(f.drifted) == 0 && len(f.orphans) == 0 }

// counts returns the objects found per kind.
func (f patrolFindings) counts() map[string]int {
	out := map[string]int{}
	for _, kinds := range f.drifted {
		for _, k := range kinds {
			out[k]++
		}
	}
	if len(f.orphans) > 0 {
		out[syncer.DriftOrphanCopy] = len(f.orphans)
	}
	return out
}

// patrolOnce runs one pass: check, confirm, count, and (unless reporting)
// repair through the sync's own queue, then check the repaired objects
// again and count those that are in line now. A pass cut off by the
// controller's stop counts nothing.
func (c *Controller) patrolOnce(ctx context.Context) {
	start := time.Now()
	pr := c.opts.PublishedResource.Name
	limiter := rate.NewLimiter(patrolChecksPerSecond, patrolBurst)
	found, err := c.patrolCheck(ctx, limiter)
	if err != nil && ctx.Err() == nil {
		c.log.Error(err, "The patrol pass could not check every object")
	}
	if !found.empty() && ctx.Err() == nil {
		found = c.confirm(ctx, limiter, found)
	}
	repaired := map[string]int{}
	if !found.empty() && !c.opts.Patrol.Report {
		repaired = c.patrolRepair(ctx, limiter, found)
	}
	if ctx.Err() != nil {
		return
	}
	for kind, n := range found.counts() {
		metrics.PatrolDriftFound.WithLabelValues(pr, kind).Add(float64(n))
	}
	for kind, n := range repaired {
		metrics.PatrolRepaired.WithLabelValues(pr, kind).Add(float64(n))
	}
	metrics.PatrolRuns.WithLabelValues(pr).Inc()
	metrics.PatrolDuration.WithLabelValues(pr).Observe(time.Since(start).Seconds())
	if found.empty() {
		c.log.V(1).Info("Patrol pass found no drift", "duration", time.Since(start).String())
		return
	}
	msg := fmt.Sprintf("The patrol found %s", describeCounts(found.counts()))
	if c.opts.Patrol.Report {
		msg += "; report mode: nothing was changed."
	} else {
		msg += fmt.Sprintf("; repaired %s.", describeCounts(repaired))
	}
	c.log.Info(msg, "duration", time.Since(start).String())
	if c.opts.Events != nil {
		c.opts.Events.Event(c.opts.PublishedResource, corev1.EventTypeWarning, ReasonPatrolDrift, msg)
	}
}

// describeCounts writes "2 copy-differs, 1 orphan-copy" (sorted by kind),
// or "nothing".
func describeCounts(counts map[string]int) string {
	if len(counts) == 0 {
		return "nothing"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}

// patrolCheck checks every kcp object of every engaged workspace, then
// the local copies.
func (c *Controller) patrolCheck(ctx context.Context, limiter *rate.Limiter) (patrolFindings, error) {
	found := patrolFindings{drifted: map[mcreconcile.Request][]string{}}
	var errs []error
	for _, name := range c.hub.names() {
		reqs, err := c.r.primaries(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, req := range reqs {
			if err := limiter.Wait(ctx); err != nil {
				return found, err
			}
			kinds, _, err := c.r.drift(ctx, req)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s in workspace %s: %w", req.NamespacedName, req.ClusterName, err))
				continue
			}
			if len(kinds) > 0 {
				found.drifted[req] = kinds
			}
		}
	}
	copies, err := c.copies(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	found.orphans, err = findOrphans(ctx, limiter, copies, c.orphanChecks())
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return found, fmt.Errorf("%d check(s) failed, the first: %w", len(errs), errs[0])
	}
	return found, nil
}

// confirm checks what a pass found once more after patrolSettle and keeps
// what is still there: drift the event path was about to repair (a status
// on its way to kcp) is not reported.
func (c *Controller) confirm(ctx context.Context, limiter *rate.Limiter, found patrolFindings) patrolFindings {
	if !backoff.Sleep(ctx, patrolSettle) {
		return found
	}
	out := patrolFindings{drifted: map[mcreconcile.Request][]string{}, orphans: map[mcreconcile.Request]*unstructured.Unstructured{}}
	for req := range found.drifted {
		if limiter.Wait(ctx) != nil {
			return out
		}
		if kinds, _, err := c.r.drift(ctx, req); err == nil && len(kinds) > 0 {
			out.drifted[req] = kinds
		}
	}
	checks := c.orphanChecks()
	for req, cp := range found.orphans {
		if limiter.Wait(ctx) != nil {
			return out
		}
		if still, err := checks.orphaned(ctx, cp); err == nil && still {
			out.orphans[req] = cp
		}
	}
	return out
}

// patrolRepair puts what a pass found through the sync's own queue, then
// returns, per kind, how many objects a later check found in line: drift
// the sync repairs (see syncer.Repairable) and orphans, which go through
// the cleanup of a vanished object. Nothing is written here.
func (c *Controller) patrolRepair(ctx context.Context, limiter *rate.Limiter, found patrolFindings) map[string]int {
	pending := map[mcreconcile.Request][]string{}
	for req, kinds := range found.drifted {
		var repairable []string
		for _, k := range kinds {
			if syncer.Repairable(k) {
				repairable = append(repairable, k)
			}
		}
		if len(repairable) > 0 && c.hub.enqueue(req) {
			pending[req] = repairable
		}
	}
	orphaned := map[mcreconcile.Request]*unstructured.Unstructured{}
	for req, cp := range found.orphans {
		if c.hub.enqueue(req) {
			orphaned[req] = cp
		}
	}

	repaired := map[string]int{}
	checks := c.orphanChecks()
	for round := 0; round < patrolRecheckRounds && len(pending)+len(orphaned) > 0; round++ {
		if !backoff.Sleep(ctx, patrolSettle) {
			return repaired
		}
		for req, kinds := range pending {
			if limiter.Wait(ctx) != nil {
				return repaired
			}
			now, checked, err := c.r.drift(ctx, req)
			if err != nil || !checked {
				continue // gone, filtered or unreadable now: not repaired by us
			}
			fixed := 0
			for _, k := range kinds {
				if !slices.Contains(now, k) {
					repaired[k]++
					fixed++
				}
			}
			if fixed == len(kinds) {
				delete(pending, req)
			}
		}
		for req, cp := range orphaned {
			if limiter.Wait(ctx) != nil {
				return repaired
			}
			if gone, err := checks.copyGone(ctx, cp); err == nil && gone {
				repaired[syncer.DriftOrphanCopy]++
				delete(orphaned, req)
			}
		}
	}
	for req, kinds := range pending {
		c.log.Info("The patrol's repair did not bring an object in line", "cluster", req.ClusterName, "kcp", req.NamespacedName.String(), "drift", strings.Join(kinds, ","))
	}
	for req := range orphaned {
		c.log.Info("The patrol's repair did not remove an orphaned local copy", "cluster", req.ClusterName, "kcp", req.NamespacedName.String())
	}
	return repaired
}

// copies lists this agent's local copies of the controller's type: the
// copies cache's own objects, not copies of them (a pass takes minutes
// and would hold a second copy of the cache all that time), so they are
// only read; findOrphans keeps copies of the orphans.
func (c *Controller) copies(ctx context.Context) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(c.opts.LocalGVK.GroupVersion().WithKind(c.opts.LocalGVK.Kind + "List"))
	if err := c.opts.LocalCache.List(ctx, list, ctrlruntimeclient.MatchingLabels{keys.AgentName: c.opts.AgentName}, ctrlruntimeclient.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("failed to list the local copies: %w", err)
	}
	return list.Items, nil
}

// orphanChecks are the reads that tell an orphaned local copy.
type orphanChecks struct {
	// engaged returns the workspace if it is engaged and its handlers are
	// in place.
	engaged func(cluster string) (Workspace, bool)
	// hasState reports whether p has state of this PublishedResource's kind.
	hasState func(ctx context.Context, p state.Primary) (bool, error)
	// gone reports whether the kcp object of req is confirmed gone.
	gone func(ctx context.Context, ws Workspace, req mcreconcile.Request) (bool, error)
	// copyGone reports whether that local copy (its UID) is gone.
	copyGone  func(ctx context.Context, cp *unstructured.Unstructured) (bool, error)
	remoteGVK schema.GroupVersionKind
}

func (c *Controller) orphanChecks() orphanChecks {
	return orphanChecks{
		engaged: func(cluster string) (Workspace, bool) {
			ws, ok := c.hub.workspace(cluster)
			return ws, ok && c.hub.registered(cluster)
		},
		hasState: func(ctx context.Context, p state.Primary) (bool, error) {
			last, err := c.r.syncer.State.Get(ctx, p)
			return last != nil, err
		},
		gone:      c.r.gone,
		copyGone:  c.copyGone,
		remoteGVK: c.opts.RemoteGVK,
	}
}

// orphaned reports whether the local copy cp is an orphan: it names a kcp
// object of an engaged workspace that has state of this PublishedResource's
// kind, and the workspace's server confirms that object is gone. A copy
// without such state is not this sync's to judge: copies of objects that a
// PublishedResource released (deleted, disabled, another projection) stay
// by contract (§6.7), and the cleanup of a vanished object needs the state
// too. Copies of workspaces that are not engaged are the sweeper's.
func (o orphanChecks) orphaned(ctx context.Context, cp *unstructured.Unstructured) (bool, error) {
	remote, ok := objmeta.FromLocal(cp)
	if !ok || cp.GetDeletionTimestamp() != nil {
		return false, nil
	}
	ws, ok := o.engaged(remote.Cluster)
	if !ok {
		return false, nil
	}
	p := state.Primary{Remote: remote, APIVersion: o.remoteGVK.GroupVersion().String(), Kind: o.remoteGVK.Kind}
	if has, err := o.hasState(ctx, p); err != nil || !has {
		return false, err
	}
	return o.gone(ctx, ws, requestOf(remote))
}

func requestOf(r objmeta.Remote) mcreconcile.Request {
	return mcreconcile.Request{ClusterName: r.Cluster, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}}}
}

// findOrphans returns copies of the orphaned local copies among copies
// (which it only reads), by the request of their kcp object.
func findOrphans(ctx context.Context, limiter *rate.Limiter, copies []unstructured.Unstructured, checks orphanChecks) (map[mcreconcile.Request]*unstructured.Unstructured, error) {
	out := map[mcreconcile.Request]*unstructured.Unstructured{}
	for i := range copies {
		if err := limiter.Wait(ctx); err != nil {
			return out, err
		}
		cp := &copies[i]
		orphan, err := checks.orphaned(ctx, cp)
		if err != nil {
			return out, err
		}
		if orphan {
			remote, _ := objmeta.FromLocal(cp)
			out[requestOf(remote)] = cp.DeepCopy()
		}
	}
	return out, nil
}

// copyGone reports whether the local copy cp (that object: its UID) is
// gone from the service cluster's API server.
func (c *Controller) copyGone(ctx context.Context, cp *unstructured.Unstructured) (bool, error) {
	cur := typed(c.opts.LocalGVK)
	err := c.opts.ServiceReader.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(cp), cur)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return cur.GetUID() != cp.GetUID(), nil
}

// primaries lists the kcp objects of a workspace (from its cache).
func (r *reconciler) primaries(ctx context.Context, name string) ([]mcreconcile.Request, error) {
	engaged, ok := r.workspaces.workspace(name)
	if !ok || !r.workspaces.registered(name) {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(r.remoteGVK.GroupVersion().WithKind(r.remoteGVK.Kind + "List"))
	// Only the names are read: no copies of the cached objects.
	if err := r.workspaces.reads(engaged).List(ctx, list, ctrlruntimeclient.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("failed to list %s in workspace %s: %w", r.remoteGVK.Kind, name, err)
	}
	out := make([]mcreconcile.Request, 0, len(list.Items))
	for _, obj := range list.Items {
		out = append(out, mcreconcile.Request{ClusterName: name, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}})
	}
	return out, nil
}

// drift returns the drift kinds of the kcp object of req, as the sync
// would see it (filters and workspace paths applied); checked is false
// when there was nothing to compare: the object is gone, not synced by
// this controller, or its workspace not engaged.
func (r *reconciler) drift(ctx context.Context, req mcreconcile.Request) (kinds []string, checked bool, err error) {
	engaged, ok := r.workspaces.workspace(req.ClusterName)
	if !ok || !r.workspaces.registered(req.ClusterName) || r.deletionOnly {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	cl := engaged.Cluster
	kcpClient := r.workspaces.reads(engaged)
	obj := typed(r.remoteGVK)
	if err := kcpClient.Get(ctx, req.NamespacedName, obj); err != nil {
		return nil, false, ctrlruntimeclient.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return nil, false, nil
	}
	if matches, err := r.matches(ctx, kcpClient, obj); err != nil || !matches {
		return nil, false, err
	}
	ws := syncer.Workspace{Client: kcpClient, Live: cl.GetClient(), Cluster: req.ClusterName}
	if r.pr.Spec.EnableWorkspacePaths {
		if ws.Path, err = workspacePath(ctx, kcpClient); err != nil {
			return nil, false, err
		}
	}
	kinds, err = r.syncer.Drift(ctx, ws, obj)
	return kinds, err == nil, err
}

// gone reports whether the kcp object of req is confirmed gone: missing
// from the workspace's cache and, read from its server, a 404 about the
// object itself.
func (r *reconciler) gone(ctx context.Context, engaged Workspace, req mcreconcile.Request) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	cl := engaged.Cluster
	obj := typed(r.remoteGVK)
	err := r.workspaces.reads(engaged).Get(ctx, req.NamespacedName, obj)
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	err = cl.GetClient().Get(ctx, req.NamespacedName, obj)
	if syncer.ObjectNotFound(err, req.Name) {
		return true, nil
	}
	return false, ctrlruntimeclient.IgnoreNotFound(err)
}
