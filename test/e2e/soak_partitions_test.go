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

//go:build e2e && soak

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// The soak's partition mode (SOAK_PARTITIONED): the first agent runs as
// two partitions of one agent name, eu and us, each with two replicas and
// an endpoint slice of its own whose Partition selects the shards labelled
// with its region; at the start the root shard is eu's, the second us's.
// eu publishes, us runs with the publishing controllers off. A fault of
// its own moves a shard to the other partition and back while the clients
// go on. Quiescence requires each endpoint's Lease back with its shard's
// partition and SyncReady.<partition> Running; the audit log must show
// every write for a workspace coming from the replica that held its
// endpoint's Lease at the time, and each partition's writes from its
// leader only.

// soakRegions are the partitions and the shard each starts with.
var soakRegions = []struct{ partition, shard string }{{"eu", framework.RootShard}, {"us", framework.SecondShard}}

const (
	// soakMoveTimeout bounds the wait for a moved shard's endpoint Lease
	// to reach the receiving partition's agent (a release under way holds
	// moves back until it ends: the administrator's waits are
	// soakAdminTimeout).
	soakMoveTimeout = soakAdminTimeout + time.Minute
	// causeMove: see soakExpectedErrors.
	causeMove = "shard moved between partitions"
)

// firstAgent is the first agent's replicas: one set, or one per
// partition.
type firstAgent struct {
	sets []*replicaSet
	part *soakPartitions // nil: unpartitioned
	// deck holds the kinds of the next faults (only the fault loop uses it).
	deck []int
}

// soakPartitions is what the partition mode needs to know of kcp.
type soakPartitions struct {
	t     *testing.T
	f     *framework.Fixture
	k     *framework.Kcp
	agent string // the agent name both partitions share
	// lease is the endpoint Lease of each shard (set once both slices
	// list their shard: see learnEndpoints).
	lease map[string]string
}

// startFirstAgent starts one replica of each of the first agent's sets,
// with partitions when partitioned.
func startFirstAgent(t *testing.T, f *framework.Fixture, k *framework.Kcp, args []string, partitioned bool) *firstAgent {
	newSet := func(args []string) *replicaSet {
		r := &replicaSet{t: t, args: args, pprof: map[*framework.Agent]string{}}
		r.start(nil)
		return r
	}
	if !partitioned {
		return &firstAgent{sets: []*replicaSet{newSet(args)}}
	}
	p := &soakPartitions{t: t, f: f, k: k, agent: f.Export.Name + "-syncagent"}
	var regions []string
	for _, r := range soakRegions {
		framework.LabelShard(t, k, r.shard, r.partition)
		regions = append(regions, r.partition)
	}
	framework.CreatePartitions(t, f.Org, f.Export.Name, regions...)
	// The second agent user (token rotations) may read the slices too.
	framework.Must(t, f.Org.Client.Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "api-syncagent:partitions:second"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "api-syncagent:partitions"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: framework.SecondAgentUser}},
	}), "let the second agent user read the slices")
	a := &firstAgent{part: p}
	for i, region := range regions {
		// The agent name is given: by default it derives from the slice's.
		extra := []string{"--apiexportendpointslice-ref=" + p.slice(region), "--agent-name=" + p.agent}
		if i > 0 {
			extra = append(extra, "--disabled-controllers=apiresourceschema,apiexport")
		}
		a.sets = append(a.sets, newSet(append(slices.Clone(args), extra...)))
	}
	return a
}

func (p *soakPartitions) slice(region string) string { return p.f.Export.Name + "-" + region }

// partitions are the partitions (nil: unpartitioned).
func (a *firstAgent) partitions() []string {
	if a.part == nil {
		return nil
	}
	var out []string
	for _, r := range soakRegions {
		out = append(out, r.partition)
	}
	return out
}

func (a *firstAgent) start(log *opLog) {
	for _, r := range a.sets {
		r.start(log)
	}
}

func (a *firstAgent) heal(log *opLog) {
	for _, r := range a.sets {
		r.heal(log)
	}
}

func (a *firstAgent) oneLeaderRunning(t *testing.T, controllers int) {
	t.Helper()
	for _, r := range a.sets {
		r.oneLeaderRunning(t, controllers)
	}
}

// running are the replicas of every set that run.
func (a *firstAgent) running() []*framework.Agent {
	var out []*framework.Agent
	for _, r := range a.sets {
		out = append(out, r.running()...)
	}
	return out
}

// all are every replica ever started.
func (a *firstAgent) all() []*framework.Agent {
	var out []*framework.Agent
	for _, r := range a.sets {
		r.mu.Lock()
		out = append(out, r.all...)
		r.mu.Unlock()
	}
	return out
}

// fault deals the next fault: a replica fault hits a random set.
func (a *firstAgent) fault(rnd *rand.Rand, k *framework.Kcp, svc *framework.ServiceCluster, faults *faultWindows, log *opLog) {
	if len(a.deck) == 0 {
		kinds := faultKinds
		if a.part != nil {
			kinds++
		}
		a.deck = rnd.Perm(kinds)
	}
	kind := a.deck[0]
	a.deck = a.deck[1:]
	if kind == faultMove {
		a.part.move(rnd, faults, log)
		return
	}
	r := a.sets[0]
	if len(a.sets) > 1 && kind != faultShard && kind != faultService {
		r = a.sets[rnd.IntN(len(a.sets))]
	}
	r.fault(kind, rnd, k, svc, faults, log)
	if kind == faultService {
		for _, r := range a.sets {
			r.awaitLeaderOrExit(soakLease + 15*time.Second)
			r.heal(log)
		}
	}
}

// learnEndpoints reads the endpoint each partition's slice lists (its
// shard's: a workspace there binds the export) and names its Lease.
func (p *soakPartitions) learnEndpoints(t *testing.T) {
	p.lease = map[string]string{}
	for _, r := range soakRegions {
		framework.WaitFor(t, syncTimeout, "one endpoint in "+p.slice(r.partition), func(ctx context.Context) (bool, error) {
			s := &kcpapisv1alpha1.APIExportEndpointSlice{}
			if err := p.f.Org.Client.Get(ctx, types.NamespacedName{Name: p.slice(r.partition)}, s); err != nil {
				return false, err
			}
			if len(s.Status.APIExportEndpoints) != 1 {
				return false, nil
			}
			p.lease[r.shard] = keys.EndpointLease(p.agent, s.Status.APIExportEndpoints[0].URL)
			return true, nil
		})
	}
}

// holderPartition is the partition whose agent holds a shard's endpoint
// Lease ("" without holder).
func (p *soakPartitions) holderPartition(ctx context.Context, shard string) (string, error) {
	lease := &coordinationv1.Lease{}
	err := p.f.Service.Client.Get(ctx, types.NamespacedName{Namespace: framework.AgentNamespace, Name: p.lease[shard]}, lease)
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", nil
	}
	return lease.Annotations[keys.HolderPartitionAnnotation], nil
}

// atHome waits until each shard's endpoint Lease is held by the agent of
// the partition the shard started in.
func (p *soakPartitions) atHome(t *testing.T) {
	t.Helper()
	for _, r := range soakRegions {
		framework.WaitFor(t, syncTimeout, "the "+r.partition+" agent holding the endpoint of "+r.shard, func(ctx context.Context) (bool, error) {
			got, err := p.holderPartition(ctx, r.shard)
			if err != nil || got != r.partition {
				return false, fmt.Errorf("held by partition %q (%v)", got, err)
			}
			return true, nil
		})
	}
}

// move moves a random shard to the other partition the way docs/sizing.md
// tells (relabel the shard, touch the receiving slice so that kcp lists it
// there, and annotate the endpoint's Lease with the receiving partition:
// kcp keeps listing the shard in the giving partition's slice, so a move
// back would not be seen otherwise), lets it be served there for 10–30 s
// while the clients go on, and moves it back the same way.
// Each move is waited for until the receiving partition's agent holds the
// endpoint's Lease (at most soakMoveTimeout) and logged with how long it
// took.
func (p *soakPartitions) move(rnd *rand.Rand, faults *faultWindows, log *opLog) {
	r := soakRegions[rnd.IntN(len(soakRegions))]
	other := soakRegions[0].partition
	if other == r.partition {
		other = soakRegions[1].partition
	}
	hold := time.Duration(10+rnd.IntN(21)) * time.Second
	defer faults.begin(causeMove)()
	log.add("fault-shard-move %s %s->%s for %s", r.shard, r.partition, other, hold)
	if !p.moveTo(r.shard, other, log) {
		return
	}
	time.Sleep(hold)
	p.moveTo(r.shard, r.partition, log)
}

// moveTo moves shard to a partition and waits for its endpoint Lease;
// false when a step failed.
func (p *soakPartitions) moveTo(shard, to string, log *opLog) bool {
	ctx, cancel := context.WithTimeout(context.Background(), soakMoveTimeout)
	defer cancel()
	start := time.Now()
	step := func(op string, f func() error) bool {
		err := retryUnavailable(ctx, f)
		if err != nil {
			p.t.Errorf("move %s to %s: %s: %v", shard, to, op, err)
			log.add("fault-shard-move %s: %s: error: %v", shard, op, err)
		}
		return err == nil
	}
	if !step("relabel", func() error { return framework.SetShardRegion(ctx, p.k, shard, to) }) ||
		!step("touch "+p.slice(to), func() error { return p.touch(ctx, p.slice(to)) }) ||
		!step("annotate "+p.lease[shard], func() error { return p.moveLease(ctx, shard, to) }) {
		return false
	}
	err := poll(ctx, soakMoveTimeout, func(ctx context.Context) (bool, error) {
		got, err := p.holderPartition(ctx, shard)
		return err == nil && got == to, nil
	})
	holder, _ := p.holderPartition(context.Background(), shard)
	log.add("fault-shard-moved %s to %s: endpoint Lease held by %q after %s (%v)", shard, to, holder, time.Since(start).Round(100*time.Millisecond), resultOf(err))
	if err != nil {
		p.t.Errorf("the endpoint of %s did not move to %s within %s: held by %q", shard, to, soakMoveTimeout, holder)
	}
	return true
}

// touch changes an annotation of a slice: kcp reconciles it and lists the
// shards its Partition selects now.
func (p *soakPartitions) touch(ctx context.Context, name string) error {
	s := &kcpapisv1alpha1.APIExportEndpointSlice{}
	if err := p.f.Org.Client.Get(ctx, types.NamespacedName{Name: name}, s); err != nil {
		return err
	}
	patch := ctrlruntimeclient.MergeFrom(s.DeepCopy())
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, "soak.example.com/moved-at", time.Now().Format(time.RFC3339Nano))
	return p.f.Org.Client.Patch(ctx, s, patch)
}

// moveLease tells the agents that the shard's endpoint moved to a
// partition (syncagent.kcp.io/move-to, as an administrator would with
// kubectl annotate).
func (p *soakPartitions) moveLease(ctx context.Context, shard, to string) error {
	lease := &coordinationv1.Lease{}
	if err := p.f.Service.Client.Get(ctx, types.NamespacedName{Namespace: framework.AgentNamespace, Name: p.lease[shard]}, lease); err != nil {
		return err
	}
	patch := ctrlruntimeclient.MergeFrom(lease.DeepCopy())
	metav1.SetMetaDataAnnotation(&lease.ObjectMeta, keys.MoveToAnnotation, to)
	return p.f.Service.Client.Patch(ctx, lease, patch)
}

// oneWriterEach checks the audit log: each partition's writes come from
// its leader, and each write for a workspace from the holder of its
// shard's endpoint Lease at the time.
func (p *soakPartitions) oneWriterEach(t *testing.T, w *soakWorld, log *opLog) {
	var leaders []string
	for _, r := range soakRegions {
		lease := keys.LeaderLease(p.agent, r.partition)
		leaders = append(leaders, lease)
		oneWriter(t, p.f, lease, log)
	}
	audit, err := os.Open(filepath.Join(framework.ArtifactsDir(t), "service-audit.log"))
	framework.Must(t, err, "open the audit log")
	defer audit.Close()
	shardOf := w.shards()
	vs, writes, err := invariant.EndpointOneWriter(audit, framework.AgentNamespace, leaders, func(o invariant.WrittenObject) string {
		if o.Resource == "events" && (o.Group == "" || o.Group == "events.k8s.io") {
			return "" // not state
		}
		cluster := o.Namespace
		if cluster == "" { // the widgets' copies (<cluster>-<name>) and the workspaces' namespaces
			cluster, _, _ = strings.Cut(o.Name, "-")
		}
		return p.lease[shardOf[cluster]]
	})
	framework.Must(t, err, "read the audit log")
	log.add("endpoint-one-writer writes=%v violations=%d", writes, len(vs))
	for _, r := range soakRegions {
		if writes[p.lease[r.shard]] == 0 {
			t.Errorf("the audit log holds no write for a workspace of %s: the endpoint one-writer check saw nothing there", r.shard)
		}
	}
	for _, v := range vs {
		t.Errorf("%s", v)
	}
}
