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
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

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

// soakWorld is what the clients and the administrator share: the
// workspaces, and what the checker must know of their history.
type soakWorld struct {
	f      *framework.Fixture
	k      *framework.Kcp
	claims []kcpapisv1alpha2.PermissionClaim

	mu      sync.Mutex
	ws      []*framework.Workspace
	unbound map[string]bool // cluster names of workspaces without their binding
	// gone are the windows in which the widgets PublishedResource did not
	// exist (end zero: not back yet); deletes are the widget deletions.
	gone    [][2]time.Time
	deletes []soakDelete
	// partitions are the first agent's (nil: unpartitioned); shardOf is
	// the shard of every workspace created, by cluster name.
	partitions []string
	shardOf    map[string]string
	// operator is what the operator last set on a local copy (by UID,
	// with the resourceVersion of that write).
	operator map[types.UID]soakOperator
	// faults are the windows in which errors of a cause are expected.
	faults *faultWindows
}

type soakDelete struct {
	key invariant.Key
	at  time.Time
}

type soakOperator struct {
	resourceVersion int64
	value           string
}

// newWorkspace creates a workspace on a shard and binds the export.
func (w *soakWorld) newWorkspace(t *testing.T, shard string) *framework.Workspace {
	ws := w.k.CreateWorkspaceOnShard(t, w.f.Org.Path, framework.RandomName("consumer"), "universal", shard)
	w.mu.Lock()
	w.shardOf[ws.ClusterName] = shard
	w.mu.Unlock()
	framework.Must(t, w.bind(t.Context(), ws), "bind the export in %s", ws.Path)
	return ws
}

// shards is the shard of every workspace created, by cluster name.
func (w *soakWorld) shards() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.shardOf)
}

// bind creates the workspace's APIBinding with every claim accepted and
// waits until the workspace serves every bound resource.
func (w *soakWorld) bind(ctx context.Context, ws *framework.Workspace) error {
	binding := &kcpapisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: w.f.Export.Name},
		Spec: kcpapisv1alpha2.APIBindingSpec{
			Reference: kcpapisv1alpha2.BindingReference{Export: &kcpapisv1alpha2.ExportBindingReference{Path: w.f.Org.Path, Name: w.f.Export.Name}},
		},
	}
	for _, c := range w.claims {
		binding.Spec.PermissionClaims = append(binding.Spec.PermissionClaims, kcpapisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: kcpapisv1alpha2.ScopedPermissionClaim{PermissionClaim: c, Selector: kcpapisv1alpha2.PermissionClaimSelector{MatchAll: true}},
			State:                 kcpapisv1alpha2.ClaimAccepted,
		})
	}
	// A binding still being deleted (an unbind that outlasted its wait)
	// is waited for: kcp would remove it after this bind "succeeded" (seen
	// in a 30-minute run of seed 43: the workspace stayed unbound).
	err := poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		b := &kcpapisv1alpha2.APIBinding{}
		err := ws.Client.Get(ctx, types.NamespacedName{Name: binding.Name}, b)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && b.DeletionTimestamp == nil, err
	})
	if err != nil {
		return fmt.Errorf("the APIBinding being deleted did not go: %w", err)
	}
	err = poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		err := ws.Client.Create(ctx, binding.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), err
	})
	if err != nil {
		return fmt.Errorf("failed to create the APIBinding: %w", err)
	}
	return poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		b := &kcpapisv1alpha2.APIBinding{}
		if err := ws.Client.Get(ctx, types.NamespacedName{Name: binding.Name}, b); err != nil || b.Status.Phase != kcpapisv1alpha2.APIBindingPhaseBound {
			return false, err
		}
		for _, k := range soakKinds {
			if _, err := ws.Client.RESTMapper().RESTMapping(k.kcp.GroupKind(), k.kcp.Version); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// pick returns a random workspace.
func (w *soakWorld) pick(rnd *rand.Rand) *framework.Workspace {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ws[rnd.IntN(len(w.ws))]
}

// deleted records a widget deletion that was issued at at.
func (w *soakWorld) deleted(key invariant.Key, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deletes = append(w.deletes, soakDelete{key, at})
}

func (w *soakWorld) operatorSet(cp *unstructured.Unstructured, value string) {
	rv, err := strconv.ParseInt(cp.GetResourceVersion(), 10, 64)
	if err != nil {
		return // not from the kube-apiserver we know: nothing to expect
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.operator == nil {
		w.operator = map[types.UID]soakOperator{}
	}
	if old, ok := w.operator[cp.GetUID()]; !ok || old.resourceVersion < rv {
		w.operator[cp.GetUID()] = soakOperator{rv, value}
	}
}

// kept are the widgets deleted while their PublishedResource was gone or
// deselected, or whose deletion was still pending when it went: their
// copies stay.
func (w *soakWorld) kept() map[invariant.Key]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[invariant.Key]bool{}
	for _, d := range w.deletes {
		for _, g := range w.gone {
			if !d.at.Before(g[0]) && (g[1].IsZero() || d.at.Before(g[1])) {
				out[d.key] = true
			}
		}
	}
	return out
}

// resources is what the PublishedResources promise, for the checker.
func (w *soakWorld) resources() []invariant.Resource {
	service := func(cp *unstructured.Unstructured) (map[string]string, map[string]any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		op, ok := w.operator[cp.GetUID()]
		if !ok {
			return nil, nil
		}
		return map[string]string{soakOperatorLabel: op.value}, map[string]any{"v1": op.value}
	}
	base := func(k soakKind) invariant.Resource {
		return invariant.Resource{Name: k.pr, Kcp: k.kcp, Local: k.local, KcpNamespaced: k.namespace != "", Status: true,
			ServiceOnly: []string{"v1"}, CopiedLabels: []string{"team"}, Service: service, Conditions: true}
	}
	things := base(soakThings)
	things.Related = []invariant.RelatedSecret{{Suffix: "-token", Label: soakTokenLabel}, {Suffix: "-creds", Origin: invariant.OriginService}}
	things.Spec = func(kcp map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range kcp {
			out[k] = v
		}
		if c, ok := out["color"].(string); ok {
			out["color"] = "dark-" + c
		}
		return out
	}
	widgets := base(soakWidgets)
	widgets.Kept = w.kept()
	gadgets := base(soakGadgets)
	gadgets.Selected = func(o *unstructured.Unstructured) bool { return o.GetLabels()[soakSelectLabel] == "yes" }
	gadgets.Related = []invariant.RelatedSecret{{Suffix: "-token", Label: soakTokenLabel}} // the Thing's
	return []invariant.Resource{things, widgets, gadgets}
}

// admin makes one administrator change and undoes it: a PublishedResource
// disabled and enabled again, changed (a filter that selects every object,
// or one that leaves the red Things out) and changed back, deleted and
// re-created or deselected and selected again (widgets); a workspace
// unbound and bound again; a new workspace bound. The undo runs even when
// the run ends meanwhile, so that quiescence finds the configuration of
// the start (finalPhase then leaves some changes in place).
func (w *soakWorld) admin(t *testing.T, rnd *rand.Rand, log *opLog) {
	ctx := t.Context()
	pause := func() { time.Sleep(time.Duration(2+rnd.IntN(7)) * time.Second) }
	k := soakKinds[rnd.IntN(len(soakKinds))]
	result := func(op string, err error) {
		if err != nil {
			t.Errorf("administrator: %s: %v", op, err)
			log.add("%s: error: %v", op, err)
			return
		}
		log.add("%s: ok", op)
	}
	switch n := rnd.IntN(100); {
	case n < 30:
		op := "admin-pr-disable " + k.pr
		result(op, w.updatePR(ctx, k.pr, func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Synchronization = &syncagentv1alpha1.SynchronizationSpec{Enabled: false}
		}))
		pause()
		result("admin-pr-enable "+k.pr, w.updatePR(ctx, k.pr, func(s *syncagentv1alpha1.PublishedResourceSpec) { s.Synchronization = nil }))
	case n < 50:
		if k == soakGadgets {
			k = soakThings // its filter is part of what the checker expects
		}
		if k == soakThings && rnd.IntN(2) == 0 {
			w.excludeRed(ctx, pause, result)
			return
		}
		everything := &syncagentv1alpha1.ResourceFilter{Resource: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "soak-never", Operator: metav1.LabelSelectorOpDoesNotExist},
		}}}
		result("admin-pr-update "+k.pr, w.updatePR(ctx, k.pr, func(s *syncagentv1alpha1.PublishedResourceSpec) { s.Filter = everything }))
		pause()
		result("admin-pr-restore "+k.pr, w.updatePR(ctx, k.pr, func(s *syncagentv1alpha1.PublishedResourceSpec) { s.Filter = nil }))
	case n < 65:
		// Deleted and created again, or deselected and selected again.
		deselect := rnd.IntN(2) == 0
		window := w.widgetsAway(ctx, deselect, result)
		pause()
		w.widgetsBack(ctx, window, deselect, result)
	case n < 85:
		ws := w.pick(rnd)
		w.mu.Lock()
		busy := w.unbound[ws.ClusterName]
		w.unbound[ws.ClusterName] = true
		w.mu.Unlock()
		if busy {
			return
		}
		binding := &kcpapisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: w.f.Export.Name}}
		end := w.faults.begin(causeUnbind)
		defer end()
		err := retryUnavailable(ctx, func() error { return ctrlruntimeclient.IgnoreNotFound(ws.Client.Delete(ctx, binding)) })
		if err == nil {
			err = poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
				err := ws.Client.Get(ctx, types.NamespacedName{Name: binding.Name}, binding)
				return apierrors.IsNotFound(err), ctrlruntimeclient.IgnoreNotFound(err)
			})
		}
		result("admin-unbind ws="+ws.ClusterName, err)
		pause()
		result("admin-bind ws="+ws.ClusterName, w.bind(ctx, ws))
		w.mu.Lock()
		delete(w.unbound, ws.ClusterName)
		w.mu.Unlock()
	default:
		w.mu.Lock()
		n := len(w.ws)
		w.mu.Unlock()
		if n >= soakWorkspaces+soakNewWorkspaces {
			return
		}
		shard := []string{framework.RootShard, framework.SecondShard}[rnd.IntN(2)]
		// Not while the second shard is down (a fault): wait for it.
		w.faults.shard.RLock()
		ws := w.newWorkspace(t, shard)
		w.faults.shard.RUnlock()
		w.mu.Lock()
		w.ws = append(w.ws, ws)
		w.mu.Unlock()
		log.add("admin-new-workspace ws=%s shard=%s: ok", ws.ClusterName, shard)
	}
}

// keepPendingWidgets adds the widgets whose deletion is pending to the
// kept ones.
func (w *soakWorld) keepPendingWidgets(ctx context.Context) error {
	for _, ws := range w.bound() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(soakWidgets.kcp.GroupVersion().WithKind("WidgetList"))
		if err := ws.Client.List(ctx, list); err != nil && !meta.IsNoMatchError(err) {
			return err
		}
		for _, o := range list.Items {
			if o.GetDeletionTimestamp() != nil {
				w.deleted(invariant.Key{Cluster: ws.ClusterName, Name: o.GetName()}, time.Now())
			}
		}
	}
	return nil
}

// bound returns the workspaces that bind the export now.
func (w *soakWorld) bound() []*framework.Workspace {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*framework.Workspace
	for _, ws := range w.ws {
		if !w.unbound[ws.ClusterName] {
			out = append(out, ws)
		}
	}
	return out
}

// widgetsGuarded reports whether every live widget of the bound workspaces
// carries the agent's finalizer.
func (w *soakWorld) widgetsGuarded(ctx context.Context) (bool, error) {
	for _, ws := range w.bound() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(soakWidgets.kcp.GroupVersion().WithKind("WidgetList"))
		if err := ws.Client.List(ctx, list); err != nil {
			return false, err
		}
		for _, o := range list.Items {
			if o.GetDeletionTimestamp() == nil && !slices.Contains(o.GetFinalizers(), agentFinalizer(w.f)) {
				return false, nil
			}
		}
	}
	return true, nil
}

// updatePR changes a PublishedResource's spec, reading it again on a
// conflict (the agent writes its status and finalizer).
func (w *soakWorld) updatePR(ctx context.Context, name string, mutate func(*syncagentv1alpha1.PublishedResourceSpec)) error {
	return poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		pr := &syncagentv1alpha1.PublishedResource{}
		if err := w.f.Service.Client.Get(ctx, types.NamespacedName{Name: name}, pr); err != nil {
			return false, err
		}
		mutate(&pr.Spec)
		err := w.f.Service.Client.Update(ctx, pr)
		return err == nil, err
	})
}

// deletePR deletes a PublishedResource and waits until it is gone (the
// agent releases its objects first).
func (w *soakWorld) deletePR(ctx context.Context, name string) error {
	pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := retryUnavailable(ctx, func() error { return ctrlruntimeclient.IgnoreNotFound(w.f.Service.Client.Delete(ctx, pr)) }); err != nil {
		return err
	}
	return poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		err := w.f.Service.Client.Get(ctx, types.NamespacedName{Name: name}, pr)
		return apierrors.IsNotFound(err), ctrlruntimeclient.IgnoreNotFound(err)
	})
}

// retryUnavailable runs op again while it fails because a server is down
// or restarting (a fault of the soak), for up to soakAdminTimeout: an
// administrator tries again.
func retryUnavailable(ctx context.Context, op func() error) error {
	var last error
	err := poll(ctx, soakAdminTimeout, func(context.Context) (bool, error) {
		last = op()
		return !unavailable(last), nil
	})
	if last != nil {
		return last
	}
	return err
}

// unavailable tells whether err says that a server is down or restarting.
// The administrator may do everything: a refusal only comes from a kcp
// shard whose authorizer has not caught up after its restart.
func unavailable(err error) bool {
	if err == nil {
		return false
	}
	return apierrors.IsForbidden(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsUnexpectedServerError(err) || utilnet.IsConnectionRefused(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// opLog records every operation and fault with its time.
type opLog struct {
	start  time.Time
	mu     sync.Mutex
	lines  []string
	counts map[string]int
}

func (l *opLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	l.lines = append(l.lines, fmt.Sprintf("%8.3fs %s", time.Since(l.start).Seconds(), line))
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[strings.TrimSuffix(strings.Fields(line)[0], ":")]++
}

// soakExplainLines bounds the history printed per violation.
const soakExplainLines = 30

// explain lists the operations on a violation's kcp object (by workspace
// and name) and every fault and administrator change, the latest last.
func (l *opLog) explain(v invariant.Violation) string {
	cluster, rest, ok := strings.Cut(strings.Fields(v.Object)[0], "|")
	if !ok {
		return "" // a service-side object: grep the operation log for its name
	}
	name := rest[strings.LastIndex(rest, "/")+1:]
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		fields := strings.Fields(line)
		touched := strings.Contains(line, "ws="+cluster) && slices.Contains(fields, name)
		if touched || strings.Contains(line, " fault-") || strings.Contains(line, " admin-") {
			out = append(out, line)
		}
	}
	if len(out) > soakExplainLines {
		out = out[len(out)-soakExplainLines:]
	}
	return "\n    history (operations on it, faults, administrator):\n      " + strings.Join(out, "\n      ")
}

func (l *opLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, v := range l.counts {
		out = append(out, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func (l *opLog) write(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	path := filepath.Join(framework.ArtifactsDir(t), "soak-ops.log")
	if err := os.WriteFile(path, []byte(strings.Join(l.lines, "\n")+"\n"), 0o644); err != nil {
		t.Logf("failed to write the operation log: %v", err)
		return
	}
	t.Logf("operation log: %s", path)
}

// soakClient is one consumer or service operator doing random operations.
type soakClient struct {
	rnd     *rand.Rand
	id      int
	w       *soakWorld
	service ctrlruntimeclient.Client
	log     *opLog
}

var soakColors = []string{"red", "green", "blue", "black"}

// step does one random operation on a random kind (things most often);
// failures a user would see as normal (not found, already exists,
// conflicts, a kind not served while the workspace is unbound) are logged
// as such.
func (c *soakClient) step(ctx context.Context) {
	ws := c.w.pick(c.rnd)
	k := soakKinds[[]int{0, 0, 0, 1, 2}[c.rnd.IntN(5)]]
	name := fmt.Sprintf("obj-%d", c.rnd.IntN(soakObjects))
	key := types.NamespacedName{Namespace: k.namespace, Name: name}
	color := soakColors[c.rnd.IntN(len(soakColors))]
	setLabel := func(label, value string) func(*unstructured.Unstructured) error {
		return func(o *unstructured.Unstructured) error {
			labels := o.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			if value == "" {
				delete(labels, label)
			} else {
				labels[label] = value
			}
			o.SetLabels(labels)
			return nil
		}
	}
	var op string
	var err error
	switch n := c.rnd.IntN(100); {
	case n < 22:
		op = "create"
		obj := newObject(k.kcp, k.namespace, name, map[string]any{"color": color})
		if k == soakGadgets && c.rnd.IntN(10) < 7 {
			obj.SetLabels(map[string]string{soakSelectLabel: "yes"})
		}
		err = ws.Client.Create(ctx, obj)
	case n < 35:
		op = "update-spec"
		err = c.update(ctx, ws.Client, k, key, func(o *unstructured.Unstructured) error {
			return unstructured.SetNestedField(o.Object, color, "spec", "color")
		})
	case n < 41:
		op = "add-label"
		err = c.update(ctx, ws.Client, k, key, setLabel("team", color))
	case n < 45:
		op = "remove-label"
		err = c.update(ctx, ws.Client, k, key, setLabel("team", ""))
	case n < 48 && k == soakGadgets:
		op = "select"
		err = c.update(ctx, ws.Client, k, key, setLabel(soakSelectLabel, "yes"))
	case n < 51 && k == soakGadgets:
		op = "deselect"
		err = c.update(ctx, ws.Client, k, key, setLabel(soakSelectLabel, ""))
	case n < 58:
		op = "delete"
		at := time.Now()
		err = ws.Client.Delete(ctx, newObject(k.kcp, k.namespace, name, nil))
		if k == soakWidgets && err == nil {
			c.w.deleted(invariant.Key{Cluster: ws.ClusterName, Name: name}, at)
		}
	case n < 64 && k == soakThings:
		op = "related-create"
		err = c.createToken(ctx, ws.Client, key, color)
	case n < 69 && k == soakThings:
		op = "related-update"
		token := &corev1.Secret{}
		if err = ws.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name + "-token"}, token); err == nil {
			token.Data = map[string][]byte{"token": []byte(color)}
			err = ws.Client.Update(ctx, token)
		}
	case n < 72 && k == soakThings:
		op = "related-delete"
		err = ws.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-token"}})
	case n < 76 && k == soakThings:
		op = "service-related-set"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error { return c.setCreds(ctx, local, color) })
	case n < 78 && k == soakThings:
		op = "service-related-delete"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error {
			return c.service.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: local.GetNamespace(), Name: local.GetName() + "-creds"}})
		})
	case n < 88:
		op = "local-status"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error {
			if err := unstructured.SetNestedField(local.Object, color, "status", "phase"); err != nil {
				return err
			}
			return c.service.Status().Update(ctx, local)
		})
	case n < 96:
		op = "local-operator"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error {
			labels := local.GetLabels()
			labels[soakOperatorLabel] = color
			local.SetLabels(labels)
			if err := unstructured.SetNestedField(local.Object, color, "spec", "v1"); err != nil {
				return err
			}
			if err := c.service.Update(ctx, local); err != nil {
				return err
			}
			c.w.operatorSet(local, color)
			return nil
		})
	default:
		op = "local-delete"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error { return c.service.Delete(ctx, local) })
	}
	result := "ok"
	switch {
	case err == nil:
	case apierrors.IsNotFound(err), apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		result = string(apierrors.ReasonForError(err))
	case meta.IsNoMatchError(err):
		result = "NoMatch"
	case ctx.Err() != nil:
		result = "cut off by the end of the run"
	default:
		result = "error: " + err.Error()
	}
	c.log.add("%s client=%d ws=%s %s %s color=%s: %s", op, c.id, ws.ClusterName, k.pr, name, color, result)
}

// createToken creates the related Secret of a primary, owned by it (the
// entry watches by owner).
func (c *soakClient) createToken(ctx context.Context, cl ctrlruntimeclient.Client, key types.NamespacedName, value string) error {
	owner := newObject(kcpThing, key.Namespace, key.Name, nil)
	if err := cl.Get(ctx, key, owner); err != nil {
		return err
	}
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-token", Labels: map[string]string{soakTokenLabel: "yes"}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: kcpThing.GroupVersion().String(), Kind: kcpThing.Kind, Name: owner.GetName(), UID: owner.GetUID(),
		}}},
		Data: map[string][]byte{"token": []byte(value)},
	}
	return cl.Create(ctx, token)
}

// setCreds creates or changes the service-origin Secret next to a local
// copy, owned by it (the entry watches by owner).
func (c *soakClient) setCreds(ctx context.Context, local *unstructured.Unstructured, value string) error {
	creds := &corev1.Secret{}
	err := c.service.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName() + "-creds"}, creds)
	if err == nil {
		creds.Data = map[string][]byte{"password": []byte(value)}
		return c.service.Update(ctx, creds)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	creds = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: local.GetNamespace(), Name: local.GetName() + "-creds", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: localThing.GroupVersion().String(), Kind: localThing.Kind, Name: local.GetName(), UID: local.GetUID(),
		}}},
		Data: map[string][]byte{"password": []byte(value)},
	}
	return c.service.Create(ctx, creds)
}

func (c *soakClient) update(ctx context.Context, cl ctrlruntimeclient.Client, k soakKind, key types.NamespacedName, change func(*unstructured.Unstructured) error) error {
	o := newObject(k.kcp, key.Namespace, key.Name, nil)
	if err := cl.Get(ctx, key, o); err != nil {
		return err
	}
	if err := change(o); err != nil {
		return err
	}
	return cl.Update(ctx, o)
}

// local changes the local copy of a workspace's object, if there is one.
func (c *soakClient) local(ctx context.Context, ws *framework.Workspace, k soakKind, name string, change func(*unstructured.Unstructured) error) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.local.GroupVersion().WithKind(k.local.Kind + "List"))
	if err := c.service.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-cluster": ws.ClusterName}); err != nil {
		return err
	}
	for i := range list.Items {
		if list.Items[i].GetAnnotations()["syncagent.kcp.io/remote-object-name"] == name {
			return change(&list.Items[i])
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: k.local.Group, Resource: strings.ToLower(k.local.Kind) + "s"}, name)
}

// replicaSet is an agent's replicas with leader election: two, or size.
type replicaSet struct {
	t      *testing.T
	args   []string
	size   int // 0: two
	mu     sync.Mutex
	agents []*framework.Agent
	// all are every replica started, stopped ones too: their logs are
	// checked as well.
	all   []*framework.Agent
	pprof map[*framework.Agent]string // the /debug/pprof address of each
}

// dumpGoroutines writes a replica's goroutine stacks to the artifacts.
func (r *replicaSet) dumpGoroutines(a *framework.Agent, name string) {
	r.mu.Lock()
	addr := r.pprof[a]
	r.mu.Unlock()
	_, body, err := framework.Get(r.t.Context(), "http://"+addr+"/debug/pprof/goroutine?debug=1")
	if err != nil {
		r.t.Logf("failed to read the goroutines of a replica: %v", err)
		return
	}
	framework.WriteFile(r.t, name, []byte(body))
}

// The kinds of fault. Faults are dealt from a deck that holds each kind
// once, shuffled by the seed: each deck of five faults (six with
// partitions: faultMove) covers every kind.
const (
	faultKill = iota
	faultTerm
	faultPause
	faultShard
	faultService
	faultKinds
	// faultMove (partitions only): see soakPartitions.move.
	faultMove = faultKinds
)

// fault injects one fault of a kind and heals it: SIGKILL or SIGTERM of a random
// replica (a new one starts 2–5 s later), SIGSTOP of the leader for longer
// than its lease (then SIGCONT: it must step down; if it exits, a new
// replica starts), the second kcp shard stopped for 5–20 s, or the service
// kube-apiserver killed and started again 3–10 s later (replicas that
// lost the lease and exited are replaced when it is back).
func (r *replicaSet) fault(kind int, rnd *rand.Rand, k *framework.Kcp, svc *framework.ServiceCluster, faults *faultWindows, log *opLog) {
	switch kind {
	case faultKill, faultTerm:
		r.mu.Lock()
		i := rnd.IntN(len(r.agents))
		victim := r.agents[i]
		r.agents = slices.Delete(r.agents, i, i+1)
		r.mu.Unlock()
		leader := isLeader(r.t, victim)
		if kind == faultKill {
			log.add("fault-sigkill replica leader=%v", leader)
			victim.Kill()
		} else {
			log.add("fault-sigterm replica leader=%v", leader)
			victim.Stop(30 * time.Second)
		}
		time.Sleep(time.Duration(2+rnd.IntN(4)) * time.Second)
		r.start(log)
	case faultPause:
		pause := soakLease + time.Duration(5+rnd.IntN(10))*time.Second
		r.mu.Lock()
		agents := slices.Clone(r.agents)
		r.mu.Unlock()
		var victim *framework.Agent
		for _, a := range agents {
			if isLeader(r.t, a) {
				victim = a
			}
		}
		if victim == nil {
			log.add("fault-sigstop-leader: no leader to stop")
			return
		}
		log.add("fault-sigstop-leader for %s", pause)
		defer faults.begin(causePaused)()
		_ = syscall.Kill(-victim.Pid(), syscall.SIGSTOP)
		time.Sleep(pause)
		_ = syscall.Kill(-victim.Pid(), syscall.SIGCONT)
		// It lost the lease: it must stop leading (the manager ends the
		// process); a replacement starts.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = victim.Wait(ctx)
		exited := victim.Exited()
		log.add("fault-sigcont-leader exited=%v code=%d", exited, victim.ExitCode())
		if exited {
			r.mu.Lock()
			r.agents = slices.DeleteFunc(r.agents, func(a *framework.Agent) bool { return a == victim })
			r.mu.Unlock()
			r.start(log)
		}
	case faultShard:
		down := time.Duration(5+rnd.IntN(16)) * time.Second
		log.add("fault-shard-stop %s for %s", framework.SecondShard, down)
		faults.shard.Lock()
		defer faults.shard.Unlock()
		end := faults.begin(causeShard)
		defer end()
		k.StopShard(r.t, framework.SecondShard)
		time.Sleep(down)
		k.StartShard(r.t, framework.SecondShard)
		log.add("fault-shard-started %s", framework.SecondShard)
	case faultService:
		down := time.Duration(3+rnd.IntN(8)) * time.Second
		log.add("fault-service-apiserver-kill for %s", down)
		defer faults.begin(causeService)()
		if err := svc.RestartAPIServer(context.Background(), down); err != nil {
			r.t.Errorf("restart the service kube-apiserver: %v", err)
			log.add("fault-service-apiserver-restart: error: %v", err)
			return
		}
		log.add("fault-service-apiserver-started")
		// The leader may still give up the Lease it could not renew and
		// exit: wait for that (or for a leader) before replacing replicas.
		r.awaitLeaderOrExit(soakLease + 15*time.Second)
		r.heal(log)
	}
}

// rotateToken writes the kcp kubeconfig with the other agent user's token
// and logs how many of the running replicas reloaded it within a minute
// (the old token stays valid: a replica that misses it, paused or
// starting, goes on with the old one).
func rotateToken(f *framework.Fixture, agents []*framework.Agent, second bool, log *opLog) {
	cfg, user := f.Kcp.AgentConfig(f.Org.Path), framework.AgentUser
	if second {
		cfg, user = f.Kcp.SecondAgentConfig(f.Org.Path), framework.SecondAgentUser
	}
	before := map[*framework.Agent]float64{}
	for _, a := range agents {
		before[a], _ = scrapeMetric(context.Background(), a, "sync_agent_kcp_kubeconfig_reloads_total", `result="success"`)
	}
	if err := framework.RewriteKubeconfig(f.KcpKubeconfig, cfg); err != nil {
		log.add("fault-token-rotate user=%s: error: %v", user, err)
		return
	}
	reloaded := 0
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		reloaded = 0
		for _, a := range agents {
			if n, err := scrapeMetric(context.Background(), a, "sync_agent_kcp_kubeconfig_reloads_total", `result="success"`); err == nil && n > before[a] {
				reloaded++
			}
		}
		if reloaded == len(agents) {
			break
		}
		time.Sleep(time.Second)
	}
	log.add("fault-token-rotate user=%s reloaded=%d/%d", user, reloaded, len(agents))
}

// running are the replicas started and not stopped by the soak.
func (r *replicaSet) running() []*framework.Agent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.agents)
}

// start starts a replica (log: nil before the run).
func (r *replicaSet) start(log *opLog) {
	pprof := framework.MustFreeAddress(r.t)
	a := framework.StartAgent(r.t, append(slices.Clone(r.args), "--pprof-address="+pprof)...)
	r.mu.Lock()
	r.agents = append(r.agents, a)
	r.all = append(r.all, a)
	r.pprof[a] = pprof
	r.mu.Unlock()
	if log != nil {
		log.add("replica-started")
	}
}

// awaitLeaderOrExit waits up to d until a live replica leads or one has
// exited.
func (r *replicaSet) awaitLeaderOrExit(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		agents := slices.Clone(r.agents)
		r.mu.Unlock()
		for _, a := range agents {
			if a.Exited() || isLeader(r.t, a) {
				return
			}
		}
		time.Sleep(time.Second)
	}
}

// heal makes sure every replica runs: exited ones are replaced.
func (r *replicaSet) heal(log *opLog) {
	r.mu.Lock()
	r.agents = slices.DeleteFunc(r.agents, func(a *framework.Agent) bool { return a.Exited() })
	missing := cmp.Or(r.size, 2) - len(r.agents)
	r.mu.Unlock()
	for range missing {
		r.start(log)
	}
}

// oneLeaderRunning checks that exactly one replica leads and runs one sync
// controller per PublishedResource, and that the standby runs none.
func (r *replicaSet) oneLeaderRunning(t *testing.T, controllers int) {
	t.Helper()
	framework.WaitFor(t, syncTimeout, "one leader with every sync controller", func(ctx context.Context) (bool, error) {
		leaders := 0
		r.mu.Lock()
		agents := slices.Clone(r.agents)
		r.mu.Unlock()
		for _, a := range agents {
			if a.Exited() {
				return false, fmt.Errorf("a replica exited with code %d", a.ExitCode())
			}
			want := 0.0
			if isLeader(t, a) {
				leaders++
				want = float64(controllers)
			}
			got, err := scrapeMetric(ctx, a, "sync_agent_sync_controllers")
			if err != nil {
				return false, err
			}
			if got != want {
				return false, fmt.Errorf("a replica (leader=%v) runs %v sync controllers, want %v", want > 0, got, want)
			}
		}
		if leaders != 1 {
			return false, fmt.Errorf("%d leaders", leaders)
		}
		return true, nil
	})
}

// leader returns the replica that leads.
func (r *replicaSet) leader(t *testing.T) *framework.Agent {
	t.Helper()
	r.mu.Lock()
	agents := slices.Clone(r.agents)
	r.mu.Unlock()
	for _, a := range agents {
		if isLeader(t, a) {
			return a
		}
	}
	t.Fatal("no replica leads")
	return nil
}

// soakExpectedErrors are the ERROR lines a replica may log because of what
// the soak does on purpose, each only within the windows of its cause (a
// shard stopped until soakRecovery after its restart; a workspace unbound
// until soakRecovery after it is bound again). Anything else fails the soak.
var soakExpectedErrors = []struct {
	cause   string
	pattern *regexp.Regexp
}{
	// The shard is down: watches, Event writes and requests to its virtual
	// workspace fail (client-go's reflectors and event recorders log at
	// ERROR) or are cut. After its restart, its virtual workspace answers
	// "API export not found" and refuses with "access denied" until its
	// caches have the APIExport and the permissions again, and refuses
	// Event patches that carry the claim label kcp put on them; until
	// its virtual workspace serves the export's types again, requests
	// for them (Events included) get a 404 that names no object, and a
	// workspace cache's informer of a type may not sync within a pass.
	// A virtual workspace's authorization request to the other shard can
	// be reset by it while the restarted shard catches up (seen once in CI:
	// "error authorizing RBAC in API export … stream error … INTERNAL_ERROR;
	// received from peer"), which fails a watch.
	// A request the stopping shard took but did not answer comes back as
	// kcp's timeout (seen in a 30-minute run: "failed to add the
	// finalizer: the server was unable to return a response in the time
	// allotted"), and a wildcard watch of the endpoint's cache is cut off
	// when its connection is made again ("Failed to watch … context
	// canceled"). A request in flight on the front-proxy's connection to
	// the stopping or starting shard can be reset the same way (seen in a
	// 30-minute run: "failed to add the finalizer: Get … stream error …
	// INTERNAL_ERROR; received from peer"), and while the restarted
	// virtual workspace does not serve the types yet, the client's REST
	// mapper finds no kind for them (seen in a 30-minute run: "failed to
	// update the status in kcp: no matches for kind \"Gadget\""). The
	// discovery of a stopped or starting shard's virtual workspace may
	// get an answer without a readable message ("unknown"), which fails
	// the release of a deselected PublishedResource until the shard is
	// back (seen in a 30-minute run), and a status update whose client
	// asks the shard's discovery ("failed to get server groups: unknown",
	// seen in a 30-minute run).
	{causeShard, regexp.MustCompile(`connect: connection refused|stream error: stream ID \d+; INTERNAL_ERROR; received from peer|no matches for kind \\"\w+\\" in version|http2: server sent GOAWAY|http2: client connection lost|unexpected EOF|API export not found|access denied|claimed\.internal\.apis\.kcp\.io/[^:]*: Forbidden: must not be set|the server could not find the requested resource|failed waiting for \*v1\.\w+ Informer to sync|malformed header: missing HTTP content-type|the server was unable to return a response in the time allotted|Failed to watch\t.*/clusters/%2A/.*context canceled"\}$|Failed to release the objects of a PublishedResource this agent no longer selects\t.*failed to discover the endpoint's API groups \(\w*\): unknown"\}$|failed to update the status in kcp: failed to get server groups: unknown"\}$`)},
	// The workspace is unbound: its claims are gone (Events may not be
	// written), the bound resources are no longer served, and passes of
	// its objects still queued are denied by the virtual workspace.
	{causeUnbind, regexp.MustCompile(`cannot (create|patch) resource \\"events\\"|the server could not find the requested resource|access denied`)},
	// A widget is placed in ObjectConflict before widgets is deleted: its
	// passes fail, and controller-runtime logs each at ERROR.
	{causeConflict, regexp.MustCompile(`Reconciler error\t\{"publishedresource": "widgets", .*"request": \{"name":"conflict-\d+"[^}]*\}.*"error": "[^"]*the local object belongs to someone else: Widget [^"]*-conflict-\d+"\}$`)},
	// A leader stops (SIGTERM, or SIGCONT after it lost the lease):
	// controller-runtime reports the end of leading at ERROR although it
	// is the expected outcome.
	// A controller stops (a PublishedResource disabled, changed or
	// deleted, the lead lost) while a response is read: client-go logs
	// the cut-off read at ERROR; a replica shutting down logs its cut
	// watches and the Events its broadcaster can no longer send, and its
	// elector the Lease read or update its stop cut off (before the
	// request, in its rate limiter, or in flight: "Put …: context
	// canceled", seen in CI); a watch cut off in flight says "Get …:
	// context canceled" (seen in a 30-minute run). The elector of a
	// stopping replica whose Lease another replica updated meanwhile
	// cannot release it (seen in a 30-minute run: "Failed to release
	// lock: … the object has been modified").
	{causeStop, regexp.MustCompile(`error received after stop sequence was engaged\t\{"error": "leader election lost"\}|error retrieving resource lock [^ ]*: .*context canceled$|Unexpected error when reading response body\t.*"error": "context canceled"\}$|Unable to write event \(broadcaster is shut down\)|Failed to watch\t.*"error": "(client rate limiter Wait returned an error: |Get \\"[^"]*\\": )context canceled"\}$|Failed to release lock: Operation cannot be fulfilled on leases\.coordination\.k8s\.io "[^"]*": the object has been modified|Failed to update lock optimistically: .*context canceled, falling back to slow path$`)},
	// The service kube-apiserver restarts: requests fail or are cut (a
	// request written into a connection the killed server closed fails
	// with a broken pipe), the leader cannot renew the Lease and stops
	// leading (client-go's elector also reports a renewal its rate limiter
	// would not start before the deadline).
	{causeService, regexp.MustCompile(`connect: connection refused|connection reset by peer|write: broken pipe|http2: server sent GOAWAY|http2: client connection lost|unexpected EOF|failed to renew lease|context deadline exceeded|would exceed context deadline|the server is currently unable to handle the request|refusing to write: the leader Lease is not renewed|error retrieving resource lock|Agent failed\t\{"error": "manager failed: leader election lost"\}`)},
	// A leader resumed after it lost the lease: its write fence refuses
	// the writes of the passes it had in hand (quietly: requeued) until it
	// exits; client-go's elector finds its request deadline passed, before
	// the request or while it read the answer.
	{causePaused, regexp.MustCompile(`refusing to write: the leader Lease is not renewed|error retrieving resource lock|would exceed context deadline|Unexpected error when reading response body\t\{"error": "context deadline exceeded"\}$|Agent failed\t\{"error": "manager failed: leader election lost"\}`)},
}

const (
	causeShard  = "shard stopped and restarted"
	causeUnbind = "workspace unbound"
	// causeConflict: see placeConflict.
	causeConflict = "widget in ObjectConflict"
	causeStop     = "replica stopped"
	causePaused   = "leader paused beyond its lease"
	causeService  = "service kube-apiserver restarted"
	// soakRecovery and soakServiceRecovery: see recovery.
	soakRecovery        = 75 * time.Second
	soakServiceRecovery = 25 * time.Second
)

// recovery is how long after a fault's end its errors may still be logged:
// the agent reconnects to a kcp endpoint with a backoff of up to a minute;
// the service cluster's clients retry within seconds.
func recovery(cause string) time.Duration {
	if cause == causeService {
		return soakServiceRecovery
	}
	return soakRecovery
}

// faultWindows records when each cause of expected errors was active.
type faultWindows struct {
	mu      sync.Mutex
	windows map[string][][2]time.Time
	// shard is held by the shard fault while the second shard is down
	// and by the administrator while it creates a workspace.
	shard sync.RWMutex
}

// begin records the start of a cause and returns the function that ends it.
func (f *faultWindows) begin(cause string) (end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.windows == nil {
		f.windows = map[string][][2]time.Time{}
	}
	f.windows[cause] = append(f.windows[cause], [2]time.Time{time.Now()})
	i := len(f.windows[cause]) - 1
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.windows[cause][i][1] = time.Now().Add(recovery(cause))
	}
}

func (f *faultWindows) active(cause string, at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.windows[cause] {
		if !at.Before(w[0]) && (w[1].IsZero() || at.Before(w[1])) {
			return true
		}
	}
	return false
}

// noUnexpectedErrors fails the test if a replica logged an ERROR line that
// no fault of the soak explains; the explained ones are counted in the log.
func noUnexpectedErrors(t *testing.T, a *framework.Agent, faults *faultWindows, log *opLog) {
	t.Helper()
	counts := map[string]int{}
	var unexpected []string
lines:
	for _, l := range a.ErrorLines() {
		at, err := time.Parse(time.RFC3339Nano, strings.SplitN(l, "\t", 2)[0])
		for _, e := range soakExpectedErrors {
			if err == nil && e.pattern.MatchString(l) && faults.active(e.cause, at) {
				counts[e.cause]++
				continue lines
			}
		}
		unexpected = append(unexpected, l)
	}
	for _, cause := range slices.Sorted(maps.Keys(counts)) {
		log.add("expected-errors %s: %d line(s) in %s", cause, counts[cause], filepath.Base(a.LogPath))
	}
	if len(unexpected) > 0 {
		t.Errorf("a replica logged %d unexpected ERROR line(s), the first: %s", len(unexpected), unexpected[0])
	}
}

var leaderMetric = regexp.MustCompile(`(?m)^leader_election_master_status\{[^}]*\} 1$`)

// isLeader reports whether a replica says it holds the Lease.
func isLeader(t *testing.T, a *framework.Agent) bool {
	t.Helper()
	_, body, err := framework.Get(t.Context(), "http://"+a.MetricsAddress+"/metrics")
	return err == nil && leaderMetric.MatchString(body)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
