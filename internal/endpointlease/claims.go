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
	"slices"
	"sync"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
)

// State is where an agent stands with an endpoint.
type State int

const (
	// Pending: not decided yet (no step read the Lease, or nobody holds it
	// and this agent has not taken it yet).
	Pending State = iota
	// Serving: this agent holds the Lease and serves the endpoint.
	Serving
	// Elsewhere: an agent of another partition holds the Lease; it serves
	// and releases the endpoint's objects.
	Elsewhere
)

// Claims runs one claim per endpoint the agent's slice lists, until the
// endpoint is no longer listed and the claim gave up what it held.
type Claims struct {
	cfg Config
	ctx context.Context //nolint:containedctx // the claims run until it ends.

	mu     sync.Mutex
	claims map[string]*entry
}

type entry struct {
	listed bool // guarded by Claims.mu, as status
	status Status
}

// Status is where the agent stands with one endpoint.
type Status struct {
	State State
	// HolderPartition: the partition whose agent holds the Lease
	// (Elsewhere).
	HolderPartition string
}

// New returns the claims of an agent; they run until ctx ends.
func New(ctx context.Context, cfg Config) *Claims {
	return &Claims{cfg: cfg, ctx: ctx, claims: map[string]*entry{}}
}

// Set starts a claim for each URL not claimed yet and tells the others'
// claims whether their endpoint is still listed.
func (c *Claims) Set(urls []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for u, e := range c.claims {
		e.listed = slices.Contains(urls, u)
	}
	for _, u := range urls {
		if _, ok := c.claims[u]; ok {
			continue
		}
		e := &entry{listed: true}
		c.claims[u] = e
		key := u
		if c.cfg.Key != nil {
			key = c.cfg.Key(u)
		}
		go c.run(u, key, e)
	}
}

// States is where the agent stands with each endpoint it claims.
func (c *Claims) States() map[string]Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Status, len(c.claims))
	for u, e := range c.claims {
		out[u] = e.status
	}
	return out
}

func (c *Claims) run(url, key string, e *entry) {
	log := c.cfg.Log.WithValues("url", url)
	cl := &claim{
		cfg:   &c.cfg,
		url:   url,
		key:   key,
		name:  keys.EndpointLease(c.cfg.AgentName, key),
		fence: fence.NewEndpoint(c.cfg.RenewDeadline, log.WithName("fence")),
		log:   log,
		listed: func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return e.listed
		},
		published: func(st Status) {
			c.mu.Lock()
			defer c.mu.Unlock()
			e.status = st
			c.count()
		},
	}
	lastErr := ""
	for {
		done, err := cl.step(c.ctx)
		switch {
		case err != nil && err.Error() != lastErr:
			log.Error(err, "Endpoint claim failed, trying again", "after", c.cfg.RetryPeriod.String())
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
		}
		c.mu.Lock()
		e.status = cl.status
		c.count()
		if done && !e.listed {
			delete(c.claims, url)
			c.count()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if !backoff.Sleep(c.ctx, c.cfg.RetryPeriod) {
			cl.stopServing("the agent stops")
			return
		}
	}
}

// count sets the gauge of the endpoints by state (c.mu held).
func (c *Claims) count() {
	n := map[State]int{}
	for _, e := range c.claims {
		n[e.status.State]++
	}
	metrics.EndpointLeases.WithLabelValues(metrics.EndpointServing).Set(float64(n[Serving]))
	metrics.EndpointLeases.WithLabelValues(metrics.EndpointElsewhere).Set(float64(n[Elsewhere]))
	metrics.EndpointLeases.WithLabelValues(metrics.EndpointPending).Set(float64(n[Pending]))
}
