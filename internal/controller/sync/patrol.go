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
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// Patrol configures a sync controller's patroller: a periodic
// anti-entropy pass that compares every kcp object with what the agent
// keeps for it on the service cluster and repairs what the event-driven
// path missed or cannot see (a field edited on a local copy, a state
// Secret deleted, a copy whose kcp object is gone).
type Patrol struct {
	// Interval between passes, each jittered by up to ±patrolJitter; 0
	// disables the patroller.
	Interval time.Duration
	// Report only counts and logs what a pass finds; nothing is written.
	Report bool
	// LocalTypeShared, if set, reports whether another PublishedResource
	// has the same local type: a copy without state whose kcp object is
	// gone may then be that one's, and is left alone.
	LocalTypeShared func(ctx context.Context) (bool, error)
}

// ReasonPatrolDrift is the reason of the Event on the PublishedResource
// that sums up a patrol pass that found drift.
const ReasonPatrolDrift = "PatrolDrift"

const (
	// patrolJitter spreads the passes of the controllers (±10 %).
	patrolJitter = 0.1
	// patrolChecksPerSecond and patrolBurst bound the checks of a pass:
	// each reads caches (live reads only for a suspected orphan), so a
	// pass never competes with the event path for the API servers.
	patrolChecksPerSecond = 50
	patrolBurst           = 10
	// patrolRepairSettle is the wait before the repaired objects are
	// checked again; up to patrolRecheckRounds rounds.
	patrolRepairSettle  = 5 * time.Second
	patrolRecheckRounds = 6
)

// patrolDelay is the wait before the next pass: interval ± jitter, where
// u in [0, 1) is uniformly random.
func patrolDelay(interval time.Duration, u float64) time.Duration {
	return time.Duration(float64(interval) * (1 + patrolJitter*(2*u-1)))
}

// runPatrol runs a pass every jittered interval once the controller has
// synced, until ctx ends.
func (c *Controller) runPatrol(ctx context.Context) {
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
	orphans []orphan
}

// orphan is a local copy whose kcp object is confirmed gone.
type orphan struct {
	req  mcreconcile.Request
	copy *unstructured.Unstructured
	// withState: state of this PublishedResource's kind exists, so the
	// sync's cleanup of a vanished object removes copy and state.
	withState bool
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

// patrolOnce runs one pass: check, count, and (unless reporting) repair
// through the sync's own queue and path, then check the repaired objects
// again and count those that are in line now.
func (c *Controller) patrolOnce(ctx context.Context) {
	start := time.Now()
	pr := c.opts.PublishedResource.Name
	found, err := c.patrolCheck(ctx)
	if ctx.Err() != nil {
		return // stopped: the pass is not complete
	}
	if err != nil {
		c.log.Error(err, "The patrol pass could not check every object")
	}
	for kind, n := range found.counts() {
		metrics.PatrolDriftFound.WithLabelValues(pr, kind).Add(float64(n))
	}
	repaired := map[string]int{}
	if !found.empty() && !c.opts.Patrol.Report {
		repaired = c.patrolRepair(ctx, found)
		for kind, n := range repaired {
			metrics.PatrolRepaired.WithLabelValues(pr, kind).Add(float64(n))
		}
	}
	if ctx.Err() != nil {
		return
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
// the local copies, at patrolChecksPerSecond.
func (c *Controller) patrolCheck(ctx context.Context) (patrolFindings, error) {
	found := patrolFindings{drifted: map[mcreconcile.Request][]string{}}
	limiter := rate.NewLimiter(patrolChecksPerSecond, patrolBurst)
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
			kinds, err := c.r.drift(ctx, req)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s in workspace %s: %w", req.NamespacedName, req.ClusterName, err))
				continue
			}
			if len(kinds) > 0 {
				found.drifted[req] = kinds
			}
		}
	}
	orphans, err := c.orphans(ctx, limiter)
	found.orphans = orphans
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return found, fmt.Errorf("%d check(s) failed, the first: %w", len(errs), errs[0])
	}
	return found, nil
}

// orphans returns the local copies of engaged workspaces whose kcp object
// the workspace's server confirms gone. Copies of workspaces that are not
// engaged are the sweep's (--sweep-unbound-workspaces); copies without
// state of this PublishedResource's kind count only if no other
// PublishedResource has the same local type.
func (c *Controller) orphans(ctx context.Context, limiter *rate.Limiter) ([]orphan, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(c.opts.LocalGVK.GroupVersion().WithKind(c.opts.LocalGVK.Kind + "List"))
	if err := c.opts.LocalCache.List(ctx, list, ctrlruntimeclient.MatchingLabels{keys.AgentName: c.opts.AgentName}); err != nil {
		return nil, fmt.Errorf("failed to list the local copies: %w", err)
	}
	var shared *bool
	var out []orphan
	for i := range list.Items {
		cp := &list.Items[i]
		remote, ok := objmeta.FromLocal(cp)
		if !ok || cp.GetDeletionTimestamp() != nil {
			continue
		}
		engaged, ok := c.hub.workspace(remote.Cluster)
		if !ok || !c.hub.registered(remote.Cluster) {
			continue
		}
		if err := limiter.Wait(ctx); err != nil {
			return out, err
		}
		req := mcreconcile.Request{ClusterName: remote.Cluster, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: remote.Namespace, Name: remote.Name}}}
		gone, err := c.r.gone(ctx, engaged, req)
		if err != nil || !gone {
			if err != nil {
				return out, err
			}
			continue
		}
		p := state.Primary{Remote: remote, APIVersion: c.opts.RemoteGVK.GroupVersion().String(), Kind: c.opts.RemoteGVK.Kind}
		last, err := c.r.syncer.State.Get(ctx, p)
		if err != nil {
			return out, err
		}
		if last == nil {
			if shared == nil {
				s := false
				if c.opts.Patrol.LocalTypeShared != nil {
					if s, err = c.opts.Patrol.LocalTypeShared(ctx); err != nil {
						return out, err
					}
				}
				shared = &s
			}
			if *shared {
				continue
			}
		}
		out = append(out, orphan{req: req, copy: cp, withState: last != nil})
	}
	return out, nil
}

// patrolRepair repairs what a pass found and returns, per kind, how many
// objects a later check found in line. Drifted objects go through the
// sync's queue with Repair set; orphans with state through the cleanup of
// a vanished object; orphans without state (nothing of the sync knows
// them) are deleted here, only the copy that was read (UID precondition).
func (c *Controller) patrolRepair(ctx context.Context, found patrolFindings) map[string]int {
	defer c.r.clearRepairs()
	pending := map[mcreconcile.Request][]string{}
	for req, kinds := range found.drifted {
		c.r.markRepair(req)
		if c.hub.enqueue(req) {
			pending[req] = kinds
		}
	}
	orphaned := map[mcreconcile.Request]*unstructured.Unstructured{}
	for _, o := range found.orphans {
		if o.withState {
			if c.hub.enqueue(o.req) {
				orphaned[o.req] = o.copy
			}
			continue
		}
		uid := o.copy.GetUID()
		if err := c.opts.Service.Delete(ctx, o.copy, ctrlruntimeclient.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Error(err, "Failed to delete an orphaned local copy", "local", objmeta.QualifiedName(o.copy.GetNamespace(), o.copy.GetName()))
			continue
		}
		c.log.Info("Deleted a local copy whose kcp object is gone", "local", objmeta.QualifiedName(o.copy.GetNamespace(), o.copy.GetName()), "cluster", o.req.ClusterName, "kcp", o.req.NamespacedName.String())
		orphaned[o.req] = o.copy
	}

	repaired := map[string]int{}
	for round := 0; round < patrolRecheckRounds && len(pending)+len(orphaned) > 0; round++ {
		t := time.NewTimer(patrolRepairSettle)
		select {
		case <-ctx.Done():
			t.Stop()
			return repaired
		case <-t.C:
		}
		for req, kinds := range pending {
			if now, err := c.r.drift(ctx, req); err == nil && len(now) == 0 {
				for _, k := range kinds {
					repaired[k]++
				}
				delete(pending, req)
			}
		}
		for req, cp := range orphaned {
			if gone, err := c.copyGone(ctx, cp); err == nil && gone {
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
	cl := engaged.Cluster
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(r.remoteGVK.GroupVersion().WithKind(r.remoteGVK.Kind + "List"))
	if err := (cachedReads{Client: cl.GetClient(), cache: cl.GetCache()}).List(ctx, list); err != nil {
		return nil, fmt.Errorf("failed to list %s in workspace %s: %w", r.remoteGVK.Kind, name, err)
	}
	out := make([]mcreconcile.Request, 0, len(list.Items))
	for _, obj := range list.Items {
		out = append(out, mcreconcile.Request{ClusterName: name, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}})
	}
	return out, nil
}

// drift returns the drift kinds of the kcp object of req, as the sync
// would see it (filters and workspace paths applied); none for an object
// the controller does not sync or that is gone.
func (r *reconciler) drift(ctx context.Context, req mcreconcile.Request) ([]string, error) {
	engaged, ok := r.workspaces.workspace(req.ClusterName)
	if !ok || !r.workspaces.registered(req.ClusterName) || r.deletionOnly {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	cl := engaged.Cluster
	kcpClient := cachedReads{Client: cl.GetClient(), cache: cl.GetCache()}
	obj := typed(r.remoteGVK)
	if err := kcpClient.Get(ctx, req.NamespacedName, obj); err != nil {
		return nil, ctrlruntimeclient.IgnoreNotFound(err)
	}
	if matches, err := r.matches(ctx, kcpClient, obj); err != nil || !matches {
		return nil, err
	}
	ws := syncer.Workspace{Client: kcpClient, Live: cl.GetClient(), Cluster: req.ClusterName}
	if r.pr.Spec.EnableWorkspacePaths {
		var err error
		if ws.Path, err = workspacePath(ctx, kcpClient); err != nil {
			return nil, err
		}
	}
	return r.syncer.Drift(ctx, ws, obj)
}

// gone reports whether the kcp object of req is confirmed gone: missing
// from the workspace's cache and, read from its server, a 404 about the
// object itself.
func (r *reconciler) gone(ctx context.Context, engaged Workspace, req mcreconcile.Request) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	cl := engaged.Cluster
	obj := typed(r.remoteGVK)
	err := (cachedReads{Client: cl.GetClient(), cache: cl.GetCache()}).Get(ctx, req.NamespacedName, obj)
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	err = cl.GetClient().Get(ctx, req.NamespacedName, obj)
	if syncer.ObjectNotFound(err, req.Name) {
		return true, nil
	}
	return false, ctrlruntimeclient.IgnoreNotFound(err)
}

// markRepair makes the passes of req repair (see syncer.Syncer.Repair)
// until one ends in line, or the patrol pass clears the marks.
func (r *reconciler) markRepair(req mcreconcile.Request) {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	r.repairs[req] = true
}

func (r *reconciler) repairing(req mcreconcile.Request) bool {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	return r.repairs[req]
}

func (r *reconciler) repairDone(req mcreconcile.Request) {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	delete(r.repairs, req)
}

func (r *reconciler) clearRepairs() {
	r.streakMu.Lock()
	defer r.streakMu.Unlock()
	clear(r.repairs)
}
