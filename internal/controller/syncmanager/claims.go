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
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	"github.com/kcp-syncagent/api-syncagent/internal/claims"
	"github.com/kcp-syncagent/api-syncagent/internal/export"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// claimsCheckInterval is how often the export's bindings are read for the
// claims they grant: a consumer's change is shown within a minute, and a
// check costs one paginated list of bindings per endpoint. The first check
// waits claimsCheckRetry, and so does a check after one that could not read
// every endpoint, doubling up to claimsCheckInterval. claimsListTimeout
// bounds the list of one endpoint.
const (
	claimsCheckInterval = time.Minute
	claimsCheckRetry    = 5 * time.Second
	claimsListTimeout   = 30 * time.Second
)

// claimsEventsPerCheck bounds the Warnings one check records on one
// PublishedResource; the rest are counted in one more. client-go's spam
// filter allows an object a burst of 25 Events, then one per 5 minutes.
const claimsEventsPerCheck = 3

// apiBindingsV1alpha2 is the version of bindings whose claims carry verbs
// and selectors (kcp 0.28 and 0.32 both serve it on the endpoints).
var apiBindingsV1alpha2 = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}

// Event reasons on PublishedResources for a workspace whose binding grants
// less than the export claims.
const (
	ReasonClaimsMismatch    = "PermissionClaimsMismatch" // what kcp 0.32 calls it on the binding
	ReasonClaimsNotAccepted = "PermissionClaimsNotAccepted"
	ReasonClaimsInvalid     = "PermissionClaimsInvalid"
)

var claimsReasons = map[claims.State]string{
	claims.Mismatch:    ReasonClaimsMismatch,
	claims.NotAccepted: ReasonClaimsNotAccepted,
	claims.Invalid:     ReasonClaimsInvalid,
}

// claimsReport shows the service owner the workspaces whose binding does
// not grant the export's permission claims as asked (rejected, not
// accepted, fewer verbs or another selector; kcp 0.32 calls the last two
// PermissionClaimsMismatch): the agent's requests for those types are
// refused or see nothing there. It reads the bindings through the
// endpoints, counts them by state (sync_agent_apibindings) and records a
// Warning on every PublishedResource whose sync needs an affected claim,
// once per binding, finding and PublishedResource (a PublishedResource
// that starts later, or could not be read, is told at a later check). It
// writes nothing to kcp.
type claimsReport struct {
	fleet   *fleet
	clients endpointClients
	// client reads PublishedResources (the manager's cache).
	client ctrlruntimeclient.Reader
	events record.EventRecorder
	log    logr.Logger
	// reported is, per binding (workspace/name), the last finding and the
	// PublishedResources told of it; only the check's goroutine uses it.
	reported map[string]reported
}

type reported struct {
	finding claims.Finding
	told    sets.Set[string]
}

// NeedLeaderElection: only the leader connects to the endpoints.
func (c *claimsReport) NeedLeaderElection() bool { return true }

// Start checks the bindings until ctx ends.
func (c *claimsReport) Start(ctx context.Context) error {
	defer metrics.APIBindingClaims.Reset()
	defer metrics.APIBindingClaimsChecked.Set(0)
	wait, failures := claimsCheckRetry, 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if err := c.check(ctx); err != nil {
			wait = backoff.Exponential(claimsCheckRetry, claimsCheckInterval, failures)
			failures++
			c.log.Info("Could not read the claims of every binding; trying again", "error", err.Error(), "in", wait.String())
			continue
		}
		wait, failures = claimsCheckInterval, 0
	}
}

// check reads every endpoint's bindings, reports what changed, and sets
// the gauges. A check that could not read them all changes nothing: the
// gauges and the memory of what was reported stay as the last complete
// check left them (sync_agent_apibindings_checked_timestamp_seconds says
// when that was).
func (c *claimsReport) check(ctx context.Context) error {
	urls := c.fleet.endpointURLs()
	if len(urls) == 0 {
		return errors.New("no endpoint is connected")
	}
	findings := map[string]claims.Finding{}
	for _, url := range urls {
		listCtx, cancel := context.WithTimeout(ctx, claimsListTimeout)
		err := eachBinding(listCtx, c.clients, []string{url}, apiBindingsV1alpha2, func(_ string, b *unstructured.Unstructured) error {
			ws := logicalcluster.From(b).String()
			if ws == "" {
				return fmt.Errorf("the binding %s on %s names no workspace", b.GetName(), url)
			}
			findings[ws+"/"+b.GetName()] = claims.Assess(b)
			return nil
		})
		cancel()
		if err != nil {
			return err
		}
	}
	counts := map[claims.State]int{}
	var prs []needing
	pending := map[string][]string{} // PublishedResource -> keys of the bindings to tell it of
	next := make(map[string]reported, len(findings))
	for _, key := range slices.Sorted(maps.Keys(findings)) {
		f := findings[key]
		counts[f.State]++
		last, ok := c.reported[key]
		fresh := !ok || last.finding.State != f.State || last.finding.Message != f.Message
		if fresh {
			last = reported{finding: f, told: sets.New[string]()}
		}
		next[key] = last
		if _, bad := claimsReasons[f.State]; !bad {
			continue
		}
		if fresh {
			ws, name, _ := strings.Cut(key, "/")
			c.log.Info("A binding does not grant the export's claims as asked", "workspace", ws, "binding", name, "state", f.State, "problem", f.Message)
		}
		if len(f.Claims) == 0 {
			continue // kcp's complaint is about claims the export does not make
		}
		if prs == nil {
			prs = c.publishedResources(ctx)
		}
		for _, pr := range prs {
			if !last.told.Has(pr.Name) && pr.needsAny(f.Claims) {
				last.told.Insert(pr.Name)
				pending[pr.Name] = append(pending[pr.Name], key)
			}
		}
	}
	for _, pr := range prs {
		c.tell(pr.PublishedResource, pending[pr.Name], findings)
	}
	c.reported = next
	for _, s := range claims.States {
		metrics.APIBindingClaims.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
	metrics.APIBindingClaimsChecked.SetToCurrentTime()
	return nil
}

// tell records the Warnings of the bindings keys on pr: the first
// claimsEventsPerCheck one by one, the rest in one more.
func (c *claimsReport) tell(pr *syncagentv1alpha1.PublishedResource, keys []string, findings map[string]claims.Finding) {
	for i, key := range keys {
		if i == claimsEventsPerCheck {
			c.events.Event(pr, corev1.EventTypeWarning, claimsReasons[findings[key].State], fmt.Sprintf(
				"%d more workspaces do not grant the claims this PublishedResource needs as the export asks; sync_agent_apibindings counts them, the agent's log names them", len(keys)-i))
			return
		}
		f := findings[key]
		ws, name, _ := strings.Cut(key, "/")
		c.events.Event(pr, corev1.EventTypeWarning, claimsReasons[f.State], fmt.Sprintf(
			"workspace %s, APIBinding %s: %s; the agent's requests for these types are refused, or see nothing, in that workspace until the consumer grants the claims as the export asks", ws, name, f.Message))
	}
}

// needing is a PublishedResource with the claims its sync needs (the
// agent's own claims, and those of its related types).
type needing struct {
	*syncagentv1alpha1.PublishedResource
	needs []export.Claim
}

// publishedResources are those whose sync controller runs (never nil).
func (c *claimsReport) publishedResources(ctx context.Context) []needing {
	c.fleet.mu.Lock()
	names := slices.Sorted(maps.Keys(c.fleet.controllers))
	c.fleet.mu.Unlock()
	prs := []needing{}
	for _, name := range names {
		pr := &syncagentv1alpha1.PublishedResource{}
		if err := c.client.Get(ctx, ctrlruntimeclient.ObjectKey{Name: name}, pr); err != nil {
			c.log.V(2).Info("Could not read a PublishedResource for the claims report", "publishedResource", name, "error", err.Error())
			continue
		}
		prs = append(prs, newNeeding(pr))
	}
	return prs
}

func newNeeding(pr *syncagentv1alpha1.PublishedResource) needing {
	return needing{PublishedResource: pr, needs: export.RequiredClaims([]syncagentv1alpha1.PublishedResource{*pr}, nil)}
}

// needsAny reports whether the PublishedResource's sync needs one of the
// claims.
func (n needing) needsAny(affected []claims.Claim) bool {
	for _, need := range n.needs {
		if slices.Contains(affected, claims.Claim(need)) {
			return true
		}
	}
	return false
}
