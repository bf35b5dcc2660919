package syncmanager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/claims"
	"github.com/kcp-syncagent/api-syncagent/internal/export"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// claimsCheckInterval is how often the export's bindings are read for the
// claims they grant: a consumer's change is shown within a minute, and a
// check costs one paginated list of bindings per endpoint.
// claimsCheckRetry is the wait before the first check, and after a check
// that could not list every endpoint (none connected yet, one failing).
const (
	claimsCheckInterval = time.Minute
	claimsCheckRetry    = 5 * time.Second
	// claimsCheckTimeout bounds one check's lists.
	claimsCheckTimeout = 30 * time.Second
)

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
// accepted, other verbs or another selector; kcp 0.32 calls the last two
// PermissionClaimsMismatch): related objects of those types are refused or
// hidden there. It reads the bindings through the endpoints, counts them
// by state (sync_agent_apibindings) and records a Warning Event on every
// PublishedResource whose related objects use an affected type, once per
// binding and finding. It writes nothing to kcp.
type claimsReport struct {
	fleet   *fleet
	clients endpointClients
	// client reads PublishedResources (the manager's cache).
	client ctrlruntimeclient.Reader
	events record.EventRecorder
	log    logr.Logger
	// reported is what was last reported per binding (workspace/name);
	// only the check's goroutine uses it.
	reported map[string]claims.Finding
}

// NeedLeaderElection: only the leader connects to the endpoints.
func (c *claimsReport) NeedLeaderElection() bool { return true }

// Start checks the bindings until ctx ends.
func (c *claimsReport) Start(ctx context.Context) error {
	defer metrics.APIBindingClaims.Reset()
	wait := claimsCheckRetry
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = claimsCheckInterval
		if !c.check(ctx) {
			wait = claimsCheckRetry
		}
	}
}

// check reads every endpoint's bindings, reports what changed, and sets
// the gauge; it reports whether every endpoint was read. A check that
// could not read them all changes nothing: the gauge and the memory of
// what was reported stay as the last complete check left them.
func (c *claimsReport) check(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, claimsCheckTimeout)
	defer cancel()
	findings := map[string]claims.Finding{}
	workspaces := map[string]string{}
	err := eachBinding(ctx, c.clients, c.fleet.endpointURLs(), apiBindingsV1alpha2, func(_ string, b *unstructured.Unstructured) error {
		key := logicalcluster.From(b).String() + "/" + b.GetName()
		findings[key] = claims.Assess(b)
		workspaces[key] = logicalcluster.From(b).String()
		return nil
	})
	if err != nil {
		c.log.V(2).Info("Could not check the claims of every binding", "error", err.Error())
		return false
	}
	counts := map[claims.State]int{}
	var prs []*syncagentv1alpha1.PublishedResource
	for _, key := range slices.Sorted(maps.Keys(findings)) {
		f := findings[key]
		counts[f.State]++
		reason, bad := claimsReasons[f.State]
		if last, ok := c.reported[key]; !bad || ok && last.State == f.State && last.Message == f.Message {
			continue
		}
		if prs == nil {
			prs = c.publishedResources(ctx)
		}
		msg := fmt.Sprintf("workspace %s, APIBinding %s: %s; related objects of these types are refused or hidden there until the consumer grants the claims as the export asks",
			workspaces[key], key[len(workspaces[key])+1:], f.Message)
		c.log.Info("A binding does not grant the export's claims as asked", "workspace", workspaces[key], "state", f.State, "problem", f.Message)
		for _, pr := range prs {
			if usesAny(pr, f.Resources) {
				c.events.Event(pr, corev1.EventTypeWarning, reason, msg)
			}
		}
	}
	c.reported = findings
	for _, s := range claims.States {
		metrics.APIBindingClaims.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
	return true
}

// publishedResources are those whose sync controller runs (a failed read
// leaves one out: its Event comes with the next change).
func (c *claimsReport) publishedResources(ctx context.Context) []*syncagentv1alpha1.PublishedResource {
	c.fleet.mu.Lock()
	names := slices.Sorted(maps.Keys(c.fleet.controllers))
	c.fleet.mu.Unlock()
	prs := []*syncagentv1alpha1.PublishedResource{}
	for _, name := range names {
		pr := &syncagentv1alpha1.PublishedResource{}
		if err := c.client.Get(ctx, ctrlruntimeclient.ObjectKey{Name: name}, pr); err != nil {
			c.log.V(2).Info("Could not read a PublishedResource for the claims report", "publishedResource", name, "error", err.Error())
			continue
		}
		prs = append(prs, pr)
	}
	return prs
}

// usesAny reports whether the PublishedResource's related objects are of
// one of resources in kcp (any, if kcp named no resource).
func usesAny(pr *syncagentv1alpha1.PublishedResource, resources []schema.GroupResource) bool {
	for _, rel := range pr.Spec.Related {
		if len(resources) == 0 || slices.Contains(resources, export.KcpSideGR(rel)) {
			return true
		}
	}
	return false
}
