//go:build e2e && soak

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// The soak's shape (issue 14, first part): W workspaces, a pool of object
// names per workspace, P clients doing seeded random operations for
// SOAK_DURATION while a seeded fault schedule kills and restarts the two
// agent replicas; then quiescence and the invariant checker.
const (
	soakWorkspaces = 4
	soakObjects    = 12 // names per workspace
	soakClients    = 4
	// soakOpPause bounds the pause between two operations of a client.
	soakOpPause = 300 * time.Millisecond
	// soakFaultEvery is the mean time between two faults.
	soakFaultEvery = 15 * time.Second
)

// TestSoak runs randomized operations and faults against the invariant
// checker. SOAK_SEED replays a schedule (the seed is logged at the start),
// SOAK_DURATION sets how long operations run (default 2 minutes). The log
// of every operation and fault is written to the test's artifacts
// (soak-ops.log).
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
	t.Logf("soak seed %d, duration %s (replay: make soak SEED=%d DURATION=%s)", seed, duration, seed, duration)

	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Mutation = &syncagentv1alpha1.ResourceMutationSpec{Spec: []syncagentv1alpha1.ResourceMutation{
			{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: "spec.color", Pattern: "^(.*)$", Replacement: "dark-$1"}},
		}}
		token := relatedSecret("token", syncagentv1alpha1.RelatedResourceOriginKcp, "{{ .Object.metadata.name }}-token")
		token.Watch = &syncagentv1alpha1.RelatedResourceWatch{ByOwner: &syncagentv1alpha1.RelatedResourceWatchByOwner{}}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{token}
	})
	leader := "--enable-leader-election=true"
	f, ws, first := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{pr}, soakWorkspaces, leader)
	log := &opLog{start: time.Now()}
	replicas := &replicaSet{t: t, args: f.AgentArgs(leader), agents: []*framework.Agent{first, framework.StartAgent(t, f.AgentArgs(leader)...)}}
	t.Cleanup(func() { log.write(t) })

	ctx, stop := context.WithTimeout(t.Context(), duration)
	defer stop()
	var wg sync.WaitGroup
	for i := range soakClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &soakClient{rnd: rand.New(rand.NewPCG(seed, uint64(i+1))), id: i, ws: ws, service: f.Service.Client, log: log}
			for ctx.Err() == nil {
				c.step(ctx)
				sleep(ctx, time.Duration(c.rnd.Int64N(int64(soakOpPause))))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rnd := rand.New(rand.NewPCG(seed, 0))
		for {
			sleep(ctx, soakFaultEvery/2+time.Duration(rnd.Int64N(int64(soakFaultEvery))))
			if ctx.Err() != nil {
				return
			}
			replicas.fault(rnd, log)
		}
	}()
	wg.Wait()

	// Quiescence: both replicas run, then both sides must agree.
	log.add("quiescence")
	replicas.heal(log)
	resource := thingsResource
	resource.Related = []invariant.RelatedSecret{{Suffix: "-token"}}
	resource.Spec = func(kcp map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range kcp {
			out[k] = v
		}
		if c, ok := out["color"].(string); ok {
			out["color"] = "dark-" + c
		}
		return out
	}
	quiet := time.Now()
	converged(t, f, ws, resource)
	log.add("converged after %s", time.Since(quiet).Round(time.Second))
	for _, a := range replicas.agents {
		a.NoErrors(t)
	}
	t.Logf("operations and faults: %s", log.summary())
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
	l.counts[strings.Fields(line)[0]]++
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
	ws      []*framework.Workspace
	service ctrlruntimeclient.Client
	log     *opLog
}

var soakColors = []string{"red", "green", "blue", "black"}

// step does one random operation; failures a user would see as normal
// (not found, already exists, conflicts) are logged as such.
func (c *soakClient) step(ctx context.Context) {
	w := c.ws[c.rnd.IntN(len(c.ws))]
	name := fmt.Sprintf("obj-%d", c.rnd.IntN(soakObjects))
	key := types.NamespacedName{Namespace: "default", Name: name}
	color := soakColors[c.rnd.IntN(len(soakColors))]
	var op string
	var err error
	switch n := c.rnd.IntN(100); {
	case n < 25:
		op = "create"
		err = w.Client.Create(ctx, newObject(kcpThing, "default", name, map[string]any{"color": color}))
	case n < 40:
		op = "update-spec"
		err = c.update(ctx, w.Client, key, func(o *unstructured.Unstructured) error {
			return unstructured.SetNestedField(o.Object, color, "spec", "color")
		})
	case n < 48:
		op = "add-label"
		err = c.update(ctx, w.Client, key, func(o *unstructured.Unstructured) error {
			labels := o.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels["team"] = color
			o.SetLabels(labels)
			return nil
		})
	case n < 52:
		op = "remove-label"
		err = c.update(ctx, w.Client, key, func(o *unstructured.Unstructured) error {
			labels := o.GetLabels()
			delete(labels, "team")
			o.SetLabels(labels)
			return nil
		})
	case n < 65:
		op = "delete"
		err = w.Client.Delete(ctx, newObject(kcpThing, "default", name, nil))
	case n < 73:
		op = "related-create"
		err = c.createToken(ctx, w.Client, key, color)
	case n < 80:
		op = "related-update"
		token := &corev1.Secret{}
		if err = w.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name + "-token"}, token); err == nil {
			token.Data = map[string][]byte{"token": []byte(color)}
			err = w.Client.Update(ctx, token)
		}
	case n < 85:
		op = "related-delete"
		err = w.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-token"}})
	case n < 95:
		op = "local-status"
		err = c.local(ctx, w, name, func(local *unstructured.Unstructured) error {
			if err := unstructured.SetNestedField(local.Object, color, "status", "phase"); err != nil {
				return err
			}
			return c.service.Status().Update(ctx, local)
		})
	default:
		op = "local-operator-label"
		err = c.local(ctx, w, name, func(local *unstructured.Unstructured) error {
			labels := local.GetLabels()
			labels["operator.example.com/seen"] = color
			local.SetLabels(labels)
			return c.service.Update(ctx, local)
		})
	}
	result := "ok"
	switch {
	case err == nil:
	case apierrors.IsNotFound(err), apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		result = string(apierrors.ReasonForError(err))
	case ctx.Err() != nil:
		result = "cut off by the end of the run"
	default:
		result = "error: " + err.Error()
	}
	c.log.add("%s client=%d ws=%s %s color=%s: %s", op, c.id, w.ClusterName, name, color, result)
}

// createToken creates the related Secret of a primary, owned by it (the
// entry watches by owner).
func (c *soakClient) createToken(ctx context.Context, cl ctrlruntimeclient.Client, key types.NamespacedName, value string) error {
	owner := newObject(kcpThing, key.Namespace, key.Name, nil)
	if err := cl.Get(ctx, key, owner); err != nil {
		return err
	}
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-token", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: kcpThing.GroupVersion().String(), Kind: kcpThing.Kind, Name: owner.GetName(), UID: owner.GetUID(),
		}}},
		Data: map[string][]byte{"token": []byte(value)},
	}
	return cl.Create(ctx, token)
}

func (c *soakClient) update(ctx context.Context, cl ctrlruntimeclient.Client, key types.NamespacedName, change func(*unstructured.Unstructured) error) error {
	o := newObject(kcpThing, key.Namespace, key.Name, nil)
	if err := cl.Get(ctx, key, o); err != nil {
		return err
	}
	if err := change(o); err != nil {
		return err
	}
	return cl.Update(ctx, o)
}

// local changes the local copy of a workspace's object, if there is one.
func (c *soakClient) local(ctx context.Context, w *framework.Workspace, name string, change func(*unstructured.Unstructured) error) error {
	items, err := localCopies(ctx, c.service, w.ClusterName)
	if err != nil {
		return err
	}
	for i := range items {
		if items[i].GetAnnotations()["syncagent.kcp.io/remote-object-name"] == name {
			return change(&items[i])
		}
	}
	return apierrors.NewNotFound(localThing.GroupVersion().WithResource("things").GroupResource(), name)
}

// replicaSet is the two agent replicas with leader election.
type replicaSet struct {
	t      *testing.T
	args   []string
	mu     sync.Mutex
	agents []*framework.Agent
}

// fault kills (SIGKILL) or stops (SIGTERM) a random replica and starts a
// new one after a pause, so that one replica always runs or comes back.
func (r *replicaSet) fault(rnd *rand.Rand, log *opLog) {
	r.mu.Lock()
	i := rnd.IntN(len(r.agents))
	victim := r.agents[i]
	r.agents = slices.Delete(r.agents, i, i+1)
	r.mu.Unlock()
	leader := isLeader(r.t, victim)
	if rnd.IntN(2) == 0 {
		log.add("fault-sigkill replica leader=%v", leader)
		victim.Kill()
	} else {
		log.add("fault-sigterm replica leader=%v", leader)
		victim.Stop(30 * time.Second)
	}
	time.Sleep(time.Duration(2+rnd.IntN(4)) * time.Second)
	r.start(log)
}

func (r *replicaSet) start(log *opLog) {
	a := framework.StartAgent(r.t, r.args...)
	r.mu.Lock()
	r.agents = append(r.agents, a)
	r.mu.Unlock()
	log.add("replica-started")
}

// heal makes sure two replicas run.
func (r *replicaSet) heal(log *opLog) {
	r.mu.Lock()
	missing := 2 - len(r.agents)
	r.mu.Unlock()
	for range missing {
		r.start(log)
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
