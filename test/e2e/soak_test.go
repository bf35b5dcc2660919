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
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// The soak's shape (issue 14): W workspaces on two kcp shards, three
// PublishedResources, a pool of object names per workspace and kind, P
// clients doing seeded random operations for SOAK_DURATION, an
// administrator changing PublishedResources and bindings, and a seeded
// fault schedule; then quiescence and the invariant checker.
const (
	soakWorkspaces = 8  // default of SOAK_WORKSPACES, half on each shard
	soakObjects    = 12 // names per workspace and kind
	soakClients    = 4
	// soakOpPause bounds the pause between two operations of a client.
	soakOpPause = 300 * time.Millisecond
	// soakFaultEvery and soakAdminEvery are the mean times between two
	// faults and between two administrator changes.
	soakFaultEvery = 15 * time.Second
	soakAdminEvery = 20 * time.Second
	// soakRotateEvery is the mean time between two rotations of the kcp
	// token, in runs of at least soakRotateMin (the short runs of make
	// test keep their schedule).
	soakRotateEvery = 6 * time.Minute
	soakRotateMin   = 10 * time.Minute
	// soakLease is the agent's leader-election lease (controller-runtime's
	// default), which a stopped leader outlives.
	soakLease = 15 * time.Second
	// soakNewWorkspaces is how many workspaces the administrator creates
	// and binds during a run, at most.
	soakNewWorkspaces = 2
	// soakAdminTimeout bounds each wait of an administrator change.
	soakAdminTimeout = 2 * time.Minute
	// soakOperatorLabel is the label a service-side operator sets on
	// local copies, with the service-only field spec.v1.
	soakOperatorLabel = "operator.example.com/seen"
	// soakSelectLabel is the gadgets' filter label.
	soakSelectLabel = "soak-sync"
	// soakTokenLabel is on every kcp-origin related Secret (and so on its
	// copies): the checker finds stale copies by it.
	soakTokenLabel = "soak.example.com/token"
)

// soakKind is one published kind.
type soakKind struct {
	pr         string
	kcp, local schema.GroupVersionKind
	namespace  string // of the kcp objects; "" for a cluster-scoped kind
}

var (
	soakThings  = soakKind{pr: "things", kcp: kcpThing, local: localThing, namespace: "default"}
	soakWidgets = soakKind{pr: "widgets", namespace: "",
		kcp:   schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Widget"},
		local: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}}
	soakGadgets = soakKind{pr: "gadgets", namespace: "default",
		kcp:   schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"},
		local: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}}
	soakKinds = []soakKind{soakThings, soakWidgets, soakGadgets}
)

// soakPRs are the three PublishedResources: things (namespaced, status, a
// spec mutation, a kcp-origin and a service-origin related Secret, both
// watched by owner), widgets (cluster-scoped, named per workspace) and
// gadgets (a naming template, a label filter and the Things' kcp-origin
// token as related Secret), which the second agent syncs.
func soakPRs() []*syncagentv1alpha1.PublishedResource {
	things := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Mutation = &syncagentv1alpha1.ResourceMutationSpec{Spec: []syncagentv1alpha1.ResourceMutation{
			{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: "spec.color", Pattern: "^(.*)$", Replacement: "dark-$1"}},
		}}
		token := relatedSecret("token", syncagentv1alpha1.RelatedResourceOriginKcp, "{{ .Object.metadata.name }}-token")
		token.Watch = &syncagentv1alpha1.RelatedResourceWatch{ByOwner: &syncagentv1alpha1.RelatedResourceWatchByOwner{}}
		creds := relatedSecret("creds", syncagentv1alpha1.RelatedResourceOriginService, "{{ .Object.metadata.name }}-creds")
		creds.Watch = &syncagentv1alpha1.RelatedResourceWatch{ByOwner: &syncagentv1alpha1.RelatedResourceWatchByOwner{}}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{token, creds}
	})
	// A cluster-scoped local type needs names that tell workspaces apart
	// (the default would collide: ConfigValid warns).
	widgets := publishedResource("widgets", "example.com", "Widget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "{{ .ClusterName }}-{{ .Object.metadata.name }}"}
	})
	gadgets := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name }}-{{ .ClusterName }}", Namespace: soakGadgetsNamespace}
		s.Filter = &syncagentv1alpha1.ResourceFilter{Resource: &metav1.LabelSelector{MatchLabels: map[string]string{soakSelectLabel: "yes"}}}
		// The Thing of the same name's token: the consumer's Secret that
		// both agents use. Its owner is the Thing, so a change of it wakes
		// the gadgets by their labels.
		token := relatedSecret("token", syncagentv1alpha1.RelatedResourceOriginKcp, "{{ .Object.metadata.name }}-token")
		token.Watch = &syncagentv1alpha1.RelatedResourceWatch{BySelector: &metav1.LabelSelector{MatchLabels: map[string]string{soakSelectLabel: "yes"}}}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{token}
	})
	prs := []*syncagentv1alpha1.PublishedResource{things, widgets, gadgets}
	for _, pr := range prs {
		pr.Labels = map[string]string{soakAgentLabel: "yes"}
	}
	gadgets.Labels[soakAgentLabel] = soakSecondSelect
	return prs
}

func soakCRDs() []*apiextensionsv1.CustomResourceDefinition {
	widget := framework.TestCRD("example.com", "Widget", "v1")
	widget.Spec.Scope = apiextensionsv1.ClusterScoped
	return []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1"), widget, framework.TestCRD("example.com", "Gadget", "v1")}
}

// TestSoak runs randomized operations and faults against the invariant
// checker. SOAK_SEED replays a schedule (the seed is logged at the start),
// SOAK_DURATION sets how long operations run (default 2 minutes),
// SOAK_WORKSPACES how many workspaces bind at the start (default 8),
// SOAK_PARTITIONED (any value) runs the first agent as two partitions
// (see soakPartitions). The log of every operation and fault is written to
// the test's artifacts (soak-ops.log).
func TestSoak(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SOAK_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		framework.Must(t, err, "parse SOAK_SEED")
		seed = s
	}
	duration := 2 * time.Minute
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		framework.Must(t, err, "parse SOAK_DURATION")
		duration = d
	}
	workspaces := soakWorkspaces
	if v := os.Getenv("SOAK_WORKSPACES"); v != "" {
		n, err := strconv.Atoi(v)
		framework.Must(t, err, "parse SOAK_WORKSPACES")
		workspaces = n
	}
	partitioned := os.Getenv("SOAK_PARTITIONED") != "" && os.Getenv("SOAK_PARTITIONED") != "0"
	replay := fmt.Sprintf("make soak SEED=%d DURATION=%s", seed, duration)
	if partitioned {
		replay += " PARTITIONED=1"
	}
	t.Logf("soak seed %d, duration %s, %d workspaces, partitioned %v (replay: %s)", seed, duration, workspaces, partitioned, replay)

	t.Setenv(framework.EnvServiceAudit, "true") // who wrote what, for the analysis of a violation
	k := framework.StartShardedKcp(t)
	f := framework.NewFixture(t, k)
	for _, crd := range soakCRDs() {
		f.Service.InstallCRD(t, crd)
	}
	for _, pr := range soakPRs() {
		framework.Must(t, f.Service.Client.Create(t.Context(), pr), "create PublishedResource %s", pr.Name)
	}
	// The replicas select the PublishedResources by a label (the
	// administrator deselects one by removing it), sweep every few seconds
	// and keep the namespaces they created until the final phase (see
	// finalPhase).
	args := f.AgentArgs("--enable-leader-election=true", "--published-resource-selector="+soakAgentLabel+"=yes",
		"--state-sweep-interval=5s", "--delete-created-namespaces=false")
	replicas := startFirstAgent(t, f, k, args, partitioned)
	second := startSecondAgent(t, f)
	for _, pr := range soakPRs() {
		f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)
	}
	exp, err := getExport(t.Context(), f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	w := &soakWorld{f: f, k: k, claims: exp.Spec.PermissionClaims, unbound: map[string]bool{}, faults: &faultWindows{},
		partitions: replicas.partitions(), shardOf: map[string]string{}}
	w.faults.begin(causeStop) // any replica may be stopped at any time
	for i := range workspaces {
		w.ws = append(w.ws, w.newWorkspace(t, []string{framework.RootShard, framework.SecondShard}[i%2]))
	}
	for _, pr := range soakPRs() {
		conditions := w.syncReady()
		if pr.Name == soakGadgets.pr {
			conditions = []string{syncagentv1alpha1.ConditionSyncReady} // the second agent's
		}
		for _, c := range conditions {
			f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, c,
				framework.HasCondition(c, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
		}
	}
	if replicas.part != nil {
		replicas.part.learnEndpoints(t)
	}

	log := &opLog{start: time.Now()}
	replicas.start(log)
	t.Cleanup(func() { log.write(t) })

	ctx, stop := context.WithTimeout(t.Context(), duration)
	defer stop()
	var wg sync.WaitGroup
	loop := func(stream uint64, every time.Duration, step func(*rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(seed, stream))
			for {
				sleep(ctx, every/2+time.Duration(rnd.Int64N(int64(every))))
				if ctx.Err() != nil {
					return
				}
				step(rnd)
			}
		}()
	}
	for i := range soakClients {
		c := &soakClient{rnd: rand.New(rand.NewPCG(seed, uint64(i+1))), id: i, w: w, service: f.Service.Client, log: log}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c.step(ctx)
				sleep(ctx, time.Duration(c.rnd.Int64N(int64(soakOpPause))))
			}
		}()
	}
	loop(0, soakFaultEvery, func(rnd *rand.Rand) {
		replicas.fault(rnd, k, f.Service, w.faults, log)
		// Its leader may have lost its Lease to a fault of the service
		// cluster: once it leads again or exited, it is healed.
		second.awaitLeaderOrExit(soakLease + 15*time.Second)
		second.heal(log)
	})
	loop(100, soakAdminEvery, func(rnd *rand.Rand) { w.admin(t, rnd, log) })
	if duration >= soakRotateMin {
		// Both users may act as the agent; a rotation switches the file
		// every replica reads, as a rotated Secret would.
		framework.GrantAgentUser(t, f.Org, f.Export.Name, f.Export.Name, framework.SecondAgentUser)
		toSecondUser := false
		loop(200, soakRotateEvery, func(*rand.Rand) {
			toSecondUser = !toSecondUser
			rotateToken(f, replicas.running(), toSecondUser, log)
		})
	}
	wg.Wait()

	// Quiescence: every change is undone (the administrator's and the
	// faults' second halves ran), two replicas run; then both sides must
	// agree and the PublishedResources say that they sync.
	log.add("quiescence")
	replicas.heal(log)
	second.heal(log)
	quiet := time.Now()
	if replicas.part != nil {
		replicas.part.atHome(t)
	}
	w.convergedBoth(t, log.explain, w.resources())
	log.add("converged after %s", time.Since(quiet).Round(time.Second))
	replicas.oneLeaderRunning(t, firstAgentKinds)
	second.oneLeaderRunning(t, 1)

	// The leader that lived through the run holds no more goroutines than
	// a fresh leader of the same workspaces: it is stopped, the standby
	// takes over, and the run's agent must not be above the new one's
	// count by more than soakGoroutineSlack.
	// Both agents publish into the export; at rest neither writes it (each
	// patch of one used to wake the other, without end).
	atRest := w.exportVersion(t)
	time.Sleep(soakSettle)
	if now := w.exportVersion(t); now != atRest {
		t.Errorf("the APIExport was written while both agents were at rest (resourceVersion %s, %s later %s): the agents fight over it", atRest, soakSettle, now)
	}
	// With partitions, the first partition's leader is compared.
	judged := replicas.sets[0]
	survivor := judged.leader(t)
	before := metricValue(t, survivor, "go_goroutines")
	log.add("leader-handover goroutines=%v rss=%.0fMiB", before, metricValue(t, survivor, "process_resident_memory_bytes")/(1<<20))
	judged.dumpGoroutines(survivor, "goroutines-run-leader.txt")
	survivor.Stop(30 * time.Second)
	replicas.heal(log)
	replicas.oneLeaderRunning(t, firstAgentKinds)
	// The new leader does the same kinds of work in every workspace (a
	// Thing with a related Secret each way: Events, related informers),
	// so that both counts include the structures built lazily per
	// workspace.
	probe := &soakClient{id: -1, w: w, service: f.Service.Client, log: log}
	for _, ws := range w.ws {
		key := types.NamespacedName{Namespace: "default", Name: "handover-probe"}
		framework.Must(t, ws.Client.Create(t.Context(), newObject(kcpThing, key.Namespace, key.Name, map[string]any{"color": "red"})), "create the probe in %s", ws.Path)
		framework.Must(t, probe.createToken(t.Context(), ws.Client, key, "probe"), "create the probe's token in %s", ws.Path)
		framework.WaitFor(t, syncTimeout, "the probe's local copy in "+ws.Path, func(ctx context.Context) (bool, error) {
			err := probe.local(ctx, ws, soakThings, key.Name, func(local *unstructured.Unstructured) error { return probe.setCreds(ctx, local, "probe") })
			return err == nil, err
		})
	}
	w.convergedBoth(t, log.explain, w.resources())
	time.Sleep(soakSettle)
	newLeader := judged.leader(t)
	fresh := metricValue(t, newLeader, "go_goroutines")
	log.add("fresh-leader goroutines=%v rss=%.0fMiB", fresh, metricValue(t, newLeader, "process_resident_memory_bytes")/(1<<20))
	judged.dumpGoroutines(newLeader, "goroutines-fresh-leader.txt")
	if before > fresh*(1+soakGoroutineSlack) {
		t.Errorf("the run's leader held %v goroutines, a fresh leader of the same workspaces %v", before, fresh)
	}

	// The final phase leaves some changes in place: a workspace unbound
	// while no replica ran (its namespace emptied by the service owner),
	// maybe the widgets deselected.
	gone, widgetsLeft := w.finalPhase(t, rand.New(rand.NewPCG(seed, 300)), replicas, log)
	resources := w.resources()
	controllers := firstAgentKinds
	if widgetsLeft {
		controllers--
		for i := range resources {
			if resources[i].Name == soakWidgets.pr {
				resources[i].Released, resources[i].Conditions = true, false
			}
		}
	}
	c, c2 := w.checkers(w.ws, resources)
	// The second agent's namespace is shared: it stays. With partitions
	// the agent deletes no namespace it created (a workspace on another
	// partition's shard looks gone from each).
	c.CreatedNamespaces = !partitioned
	if gone != nil {
		c.Gone = []invariant.Workspace{{Cluster: gone.ClusterName, Client: gone.Client}}
		c2.Gone = c.Gone
	}
	final := time.Now()
	convergedChecked(t, c, log.explain)
	convergedChecked(t, c2, log.explain)
	log.add("final-converged after %s", time.Since(final).Round(time.Second))
	replicas.oneLeaderRunning(t, controllers)
	second.oneLeaderRunning(t, 1)
	if gone != nil {
		// What the namespace rule judged: the emptied namespace is deleted
		// (Terminating: the test bed runs no namespace controller), or
		// with partitions kept.
		ns := &corev1.Namespace{}
		err := f.Service.Client.Get(t.Context(), types.NamespacedName{Name: gone.ClusterName}, ns)
		switch {
		case apierrors.IsNotFound(err):
			log.add("final-namespace ws=%s: never created", gone.ClusterName)
		case err != nil:
			t.Errorf("get the namespace of the unbound workspace: %v", err)
		case partitioned && ns.DeletionTimestamp != nil:
			t.Errorf("namespace %s of the unbound workspace was deleted by a partition's agent", ns.Name)
		case partitioned:
			log.add("final-namespace ws=%s: kept (partitions)", gone.ClusterName)
		case ns.DeletionTimestamp == nil:
			t.Errorf("namespace %s of the unbound workspace is not deleted (labels %v)", ns.Name, ns.Labels)
		default:
			log.add("final-namespace ws=%s: deleted", gone.ClusterName)
		}
	}
	// Every replica's log, the stopped ones' too (at the end, when the
	// last leader has stopped as well).
	t.Cleanup(func() {
		for _, a := range append(replicas.all(), second.all...) {
			a.Stop(30 * time.Second)
			noUnexpectedErrors(t, a, w.faults, log)
		}
		if replicas.part != nil {
			replicas.part.oneWriterEach(t, w, log)
		} else {
			oneWriter(t, f, "syncagent."+f.Export.Name+"-syncagent", log)
		}
		oneWriter(t, f, "syncagent."+soakSecondAgent, log)
	})
	t.Logf("operations and faults: %s", log.summary())
}

// oneWriter checks the service cluster's audit log: no replica of the
// agent with this leader Lease wrote while another held it.
func oneWriter(t *testing.T, f *framework.Fixture, lease string, log *opLog) {
	audit, err := os.Open(filepath.Join(framework.ArtifactsDir(t), "service-audit.log"))
	framework.Must(t, err, "open the audit log")
	defer audit.Close()
	vs, writes, err := invariant.OneWriter(audit, framework.AgentNamespace, lease)
	framework.Must(t, err, "read the audit log")
	log.add("one-writer lease=%s writes=%d violations=%d", lease, writes, len(vs))
	if writes == 0 {
		t.Error("the audit log holds no write of the agent: the one-writer check saw nothing")
	}
	for _, v := range vs {
		t.Errorf("%s", v)
	}
}

const (
	// soakGoroutineSlack is how much the run's leader may be above a
	// fresh leader in goroutines (retries and watches in flight).
	soakGoroutineSlack = 0.1
	// soakSettle lets a new leader's start-up goroutines end.
	soakSettle = 10 * time.Second
)

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
