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

package endpointlease

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
)

// Config is what the claims of one agent share.
type Config struct {
	// Leases reads and writes the endpoints' Leases in Namespace (the
	// service cluster, where the agents of one agent name meet).
	Leases    coordinationv1client.LeasesGetter
	Namespace string
	AgentName string
	// Partition and Identity are this agent's (its leader's identity).
	Partition, Identity string
	Timing              Timing
	// RenewDeadline: the endpoint fence lets writes through for it after
	// each renewal (shorter than Timing.LeaseDuration: the difference is
	// the margin for writes in flight); RetryPeriod: between two steps.
	RenewDeadline, RetryPeriod time.Duration
	Log                        logr.Logger
	// Key, if set, maps an endpoint's URL to the one its Lease is named
	// after (the slice's, before --endpoint-url-rewrite).
	Key func(url string) string
	// Frozen, if set, says that a release is under way: no endpoint
	// changes hands (see View.Frozen).
	Frozen func() bool
	// Passive: the agent only releases (its sync is off): see View.Passive.
	Passive bool
	// Serve starts serving an endpoint whose writes pass f; Stop stops
	// serving it and returns once nothing works on it any more. Changed
	// says that the endpoints served changed. None of them may block on a
	// claim.
	Serve   func(url string, f *fence.Fence)
	Stop    func(url string)
	Changed func()
}

// requestTimeout bounds each read and write of a Lease.
const requestTimeout = 5 * time.Second

// claim is one endpoint's: its state is the goroutine's (run), but listed,
// which Claims sets.
type claim struct {
	cfg *Config
	url string
	// key is the endpoint's URL as the slice lists it (url may be
	// rewritten): it names the Lease, so that agents with different
	// rewrites still meet on one.
	key   string
	name  string
	fence *fence.Fence
	log   logr.Logger

	listed func() bool

	// seen is the holder and renew time last read, since observed.
	seen     string
	observed time.Time
	// serving: Serve was called and Stop not since; renewed: when the
	// last successful write naming this agent holder was sent.
	serving bool
	renewed time.Time
	// status: where the last step left the agent with the endpoint.
	status Status
	// goneHolder: the holder named by the Lease before it was deleted.
	goneHolder string
	// loggedMoveTo: the move-to annotation last seen (logged once).
	loggedMoveTo string
	// published, if set, makes the state known at once (Claims.States)
	// when the agent stops serving, before the step ends.
	published func(Status)
}

// step reads the Lease, decides and acts once; it reports whether the
// claim is over (the endpoint is not listed and this agent neither serves
// it nor has anything left to write).
func (c *claim) step(ctx context.Context) (bool, error) {
	leases := c.cfg.Leases.Leases(c.cfg.Namespace)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	lease, err := leases.Get(rctx, c.name, metav1.GetOptions{})
	cancel()
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		c.checkFence()
		return false, fmt.Errorf("failed to read the endpoint's Lease %s: %w", c.name, err)
	}
	rec, err := record(lease, exists)
	if err != nil {
		// Each agent lists itself again with its next write.
		c.log.Info("Ignoring the listings of the endpoint's Lease", "lease", c.name, "error", err.Error())
	}
	now := time.Now()
	if seen := seenKey(lease, exists); seen != c.seen || c.observed.IsZero() {
		if !exists && c.seen != "" {
			c.goneHolder = strings.SplitN(c.seen, "@", 2)[0]
		}
		c.seen, c.observed = seen, now
	}
	listed := c.listed()
	if !exists && listed && c.goneHolder != "" && c.goneHolder != c.cfg.Identity && now.Sub(c.observed) < c.cfg.Timing.LeaseDuration {
		// Deleted while another agent held it: that agent's fence may be
		// open for a while yet.
		c.checkFence()
		return false, nil
	}
	frozen := c.cfg.Frozen != nil && c.cfg.Frozen()
	if rec.MoveTo != "" && rec.MoveTo != c.loggedMoveTo && rec.Holder == c.cfg.Identity {
		if _, known := rec.Listings[rec.MoveTo]; !known {
			c.log.Info("The endpoint's Lease asks to move it to a partition whose slice does not list it (yet): nothing moves until that partition's agent sees it listed", "lease", c.name, "moveTo", rec.MoveTo)
		}
	}
	c.loggedMoveTo = rec.MoveTo
	d := Decide(View{Exists: exists, Record: rec, Unchanged: now.Sub(c.observed), Partition: c.cfg.Partition, Identity: c.cfg.Identity, Listed: listed, Frozen: frozen, Passive: c.cfg.Passive}, c.cfg.Timing)
	if d.Yield || c.serving && !d.Serve {
		c.stopServing("given up")
		// Writes under the fence are cut within RenewDeadline of the
		// last renewal, and bytes already sent by then arrive well within
		// LeaseDuration (the margin an expired Lease gives too): only then
		// may another agent take the endpoint. What holds by then is
		// decided again (a release may have started meanwhile).
		if wait := time.Until(c.renewed.Add(c.cfg.Timing.LeaseDuration)); wait > 0 {
			if !backoff.Sleep(ctx, wait) {
				return true, nil
			}
			return false, nil
		}
	}
	wctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	switch {
	case d.Delete:
		err = leases.Delete(wctx, c.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &lease.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("failed to delete the endpoint's Lease %s: %w", c.name, err)
		}
		if err == nil {
			metrics.EndpointLeaseWrites.Inc()
		}
		return err == nil || apierrors.IsNotFound(err), nil
	case d.Write:
		sent := c.fence.Now()
		if err := c.write(wctx, lease, exists, d.Record); err != nil {
			c.checkFence()
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				return false, nil // another agent wrote first: decide again
			}
			return false, fmt.Errorf("failed to write the endpoint's Lease %s: %w", c.name, err)
		}
		metrics.EndpointLeaseWrites.Inc()
		if d.Serve {
			c.fence.Written(sent, true)
			c.renewed = sent
			if !c.serving {
				c.serving = true
				c.log.Info("Serving the endpoint: this agent holds its Lease", "lease", c.name)
				metrics.EndpointHandovers.WithLabelValues("taken").Inc()
				c.cfg.Serve(c.url, c.fence)
				c.cfg.Changed()
			}
		}
	}
	c.checkFence()
	c.status = Status{State: Pending, HolderPartition: d.Record.HolderPartition}
	switch {
	case c.serving:
		c.status.State = Serving
	case d.Record.Holder != "" && d.Record.HolderPartition != c.cfg.Partition, d.Abstain:
		c.status.State = Elsewhere
	}
	// A write is read back by one more step (a release, then a delete).
	return !listed && !c.serving && !d.Write, nil
}

// checkFence stops serving once the fence closed (renewals failed for the
// renew deadline).
func (c *claim) checkFence() {
	if c.serving && c.fence.Check() != nil {
		c.stopServing("its Lease was not renewed in time")
	}
}

func (c *claim) stopServing(why string) {
	c.fence.Written(c.fence.Now(), false)
	if !c.serving {
		return
	}
	c.serving = false
	c.status = Status{State: Pending}
	if c.published != nil {
		c.published(c.status)
	}
	c.log.Info("Not serving the endpoint any more", "lease", c.name, "reason", why)
	metrics.EndpointHandovers.WithLabelValues("given").Inc()
	c.cfg.Stop(c.url)
	c.cfg.Changed()
}

func (c *claim) write(ctx context.Context, lease *coordinationv1.Lease, exists bool, rec Record) error {
	if !exists {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: c.cfg.Namespace}}
	} else {
		lease = lease.DeepCopy()
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	listings, err := json.Marshal(rec.Listings)
	if err != nil {
		return err
	}
	lease.Annotations[keys.EndpointURLAnnotation] = c.key
	lease.Annotations[keys.ListingsAnnotation] = string(listings)
	setOrDelete(lease.Annotations, keys.HolderPartitionAnnotation, rec.HolderPartition)
	setOrDelete(lease.Annotations, keys.HandoverToAnnotation, rec.HandoverTo)
	setOrDelete(lease.Annotations, keys.MoveToAnnotation, rec.MoveTo)
	holder := lease.Spec.HolderIdentity
	lease.Spec.HolderIdentity = ptr.To(rec.Holder)
	lease.Spec.LeaseDurationSeconds = ptr.To(max(1, int32(c.cfg.Timing.LeaseDuration/time.Second)))
	if rec.Holder == c.cfg.Identity || ptr.Deref(holder, "") == c.cfg.Identity {
		// This agent's heartbeat, or its release: others count from it.
		// Another agent's write (a listing, a handover asked) leaves the
		// holder's renew time as it is, so a dead holder is not kept
		// alive by it.
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.RenewTime = &now
		if holder == nil || *holder != rec.Holder {
			lease.Spec.AcquireTime = &now
			lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		}
	}
	if !exists {
		_, err = c.cfg.Leases.Leases(c.cfg.Namespace).Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	_, err = c.cfg.Leases.Leases(c.cfg.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// record reads what the Lease says; with an error, all but the listings.
func record(lease *coordinationv1.Lease, exists bool) (Record, error) {
	if !exists {
		return Record{}, nil
	}
	rec := Record{
		Holder:          ptr.Deref(lease.Spec.HolderIdentity, ""),
		HolderPartition: lease.Annotations[keys.HolderPartitionAnnotation],
		HandoverTo:      lease.Annotations[keys.HandoverToAnnotation],
		MoveTo:          lease.Annotations[keys.MoveToAnnotation],
	}
	if s := lease.Annotations[keys.ListingsAnnotation]; s != "" {
		if err := json.Unmarshal([]byte(s), &rec.Listings); err != nil {
			rec.Listings = nil
			return rec, fmt.Errorf("the endpoint's Lease %s has an invalid %s annotation: %w", lease.Name, keys.ListingsAnnotation, err)
		}
	}
	return rec, nil
}

// seenKey is what changes when the holder renews, gives up or changes.
func seenKey(lease *coordinationv1.Lease, exists bool) string {
	if !exists {
		return ""
	}
	renew := ""
	if lease.Spec.RenewTime != nil {
		renew = lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "") + "@" + renew
}

func setOrDelete(m map[string]string, k, v string) {
	if v == "" {
		delete(m, k)
		return
	}
	m[k] = v
}
