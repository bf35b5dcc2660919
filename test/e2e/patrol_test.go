//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// patrolFlags starts the patroller every few seconds.
const patrolFlags = "--patrol-interval=4s"

// TestPatrolRepairsDrift: with the agent stopped, a local copy's
// kcp-owned field is edited (the event path's three-way merge never
// reverts that), another copy is deleted, and a copy-shaped orphan with
// the agent's labels is created for a kcp object that does not exist.
// Started with a short --patrol-interval, the agent repairs all three and
// its metrics count what the patroller found and repaired. A state Secret
// deleted while the agent runs (nothing watches it) is found and restored
// by a later pass. With --patrol-mode=report the same drift is counted
// and nothing is written.
func TestPatrolRepairsDrift(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1, "--patrol-interval=0")
	ctx := t.Context()
	cluster := ws[0].ClusterName
	for _, name := range []string{"edited", "deleted", "stateless"} {
		framework.Must(t, ws[0].Client.Create(ctx, newObject(kcpThing, "default", name, map[string]any{"color": "blue"})), "create Thing %s", name)
	}
	framework.WaitFor(t, syncTimeout, "three local copies", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, cluster)
		return len(items) == 3, err
	})
	copyOf := func(name string) (*unstructured.Unstructured, error) {
		items, err := localCopies(ctx, f.Service.Client, cluster)
		if err != nil {
			return nil, err
		}
		for i := range items {
			if r, ok := objmeta.FromLocal(&items[i]); ok && r.Name == name {
				return &items[i], nil
			}
		}
		return nil, nil
	}
	tamper := func() {
		t.Helper()
		cp, err := copyOf("edited")
		framework.Must(t, err, "find the copy of edited")
		cp.Object["spec"] = map[string]any{"color": "tampered"}
		framework.Must(t, f.Service.Client.Update(ctx, cp), "edit the copy's kcp-owned field")
	}
	ghost := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "ghost"}
	orphanName := "orphan-" + framework.RandomName("x")
	makeOrphan := func() {
		t.Helper()
		cp, err := copyOf("stateless")
		framework.Must(t, err, "find a copy to clone")
		orphan := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"color": "blue"}}}
		orphan.SetGroupVersionKind(localThing)
		orphan.SetNamespace(cp.GetNamespace())
		orphan.SetName(orphanName)
		orphan.SetLabels(ghost.Labels(cp.GetLabels()["syncagent.kcp.io/agent-name"]))
		orphan.SetAnnotations(ghost.Annotations())
		framework.Must(t, f.Service.Client.Create(ctx, orphan), "create a copy-shaped orphan")
	}
	orphanExists := func(ctx context.Context) (bool, error) {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(localThing)
		cp, err := copyOf("stateless")
		if err != nil || cp == nil {
			return false, err
		}
		err = f.Service.Client.Get(ctx, types.NamespacedName{Namespace: cp.GetNamespace(), Name: orphanName}, o)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	colorOfEdited := func(ctx context.Context) (string, error) {
		cp, err := copyOf("edited")
		if err != nil || cp == nil {
			return "", err
		}
		color, _, _ := unstructured.NestedString(cp.Object, "spec", "color")
		return color, nil
	}

	agent.Stop(30 * time.Second)
	tamper()
	deleted, err := copyOf("deleted")
	framework.Must(t, err, "find the copy of deleted")
	framework.Must(t, f.Service.Client.Delete(ctx, deleted), "delete a copy")
	makeOrphan()

	agent = framework.StartAgent(t, f.AgentArgs(patrolFlags)...)
	framework.WaitFor(t, syncTimeout, "the edited field repaired, the deleted copy back, the orphan gone", func(ctx context.Context) (bool, error) {
		color, err := colorOfEdited(ctx)
		if err != nil || color != "blue" {
			return false, err
		}
		back, err := copyOf("deleted")
		if err != nil || back == nil {
			return false, err
		}
		exists, err := orphanExists(ctx)
		return !exists, err
	})
	m := patrolMetrics(t, agent)
	for _, kind := range []string{"copy-differs", "orphan-copy"} {
		if m.found[kind] < 1 || m.repaired[kind] < 1 {
			t.Errorf("%s: found %v, repaired %v; want both at least 1", kind, m.found[kind], m.repaired[kind])
		}
	}
	framework.WaitFor(t, syncTimeout, "a PatrolDrift Event on the PublishedResource", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "things")["PatrolDrift"], nil
	})

	// Nothing watches the state Secrets: a deleted one is the patrol's.
	p := state.Primary{Remote: objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "stateless"}, APIVersion: kcpThing.GroupVersion().String(), Kind: kcpThing.Kind}
	secret := &corev1.Secret{}
	secret.SetNamespace(framework.AgentNamespace)
	secret.SetName(state.SecretName(p))
	framework.Must(t, f.Service.Client.Delete(ctx, secret), "delete the state Secret of stateless")
	framework.WaitFor(t, syncTimeout, "the state Secret restored and counted", func(ctx context.Context) (bool, error) {
		err := f.Service.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(secret), &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && patrolMetrics(t, agent).repaired["state-missing"] >= 1, err
	})
	agent.NoErrors(t)

	// Report mode: counted, nothing written.
	agent.Stop(30 * time.Second)
	tamper()
	makeOrphan()
	agent = framework.StartAgent(t, f.AgentArgs(patrolFlags, "--patrol-mode=report")...)
	framework.WaitFor(t, syncTimeout, "the report of two passes", func(ctx context.Context) (bool, error) {
		m := patrolMetrics(t, agent)
		return m.runs >= 2 && m.found["copy-differs"] >= 1 && m.found["orphan-copy"] >= 1, nil
	})
	if color, err := colorOfEdited(ctx); err != nil || color != "tampered" {
		t.Errorf("report mode: the edited copy's color = %q (%v), want it left as tampered", color, err)
	}
	if exists, err := orphanExists(ctx); err != nil || !exists {
		t.Errorf("report mode: the orphan exists = %v (%v), want it left alone", exists, err)
	}
	if m := patrolMetrics(t, agent); len(m.repaired) != 0 {
		t.Errorf("report mode: repaired %v, want nothing", m.repaired)
	}
	agent.NoErrors(t)
}

// patrolSnapshot is what an agent's patrol metrics say.
type patrolSnapshot struct {
	runs            float64
	found, repaired map[string]float64
}

var patrolSample = regexp.MustCompile(`(?m)^sync_agent_patrol_(runs|drift_found|repaired)_total\{([^}]*)\} (\S+)$`)
var kindLabel = regexp.MustCompile(`kind="([^"]*)"`)

// patrolMetrics reads the things PublishedResource's patrol metrics.
func patrolMetrics(t *testing.T, a *framework.Agent) patrolSnapshot {
	t.Helper()
	s := patrolSnapshot{found: map[string]float64{}, repaired: map[string]float64{}}
	_, body, err := framework.Get(t.Context(), "http://"+a.MetricsAddress+"/metrics")
	if err != nil {
		return s
	}
	for _, m := range patrolSample.FindAllStringSubmatch(body, -1) {
		if !regexp.MustCompile(`published_resource="things"`).MatchString(m[2]) {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatal(fmt.Errorf("metric value %q: %w", m[3], err))
		}
		kind := ""
		if k := kindLabel.FindStringSubmatch(m[2]); k != nil {
			kind = k[1]
		}
		switch m[1] {
		case "runs":
			s.runs = v
		case "drift_found":
			s.found[kind] = v
		case "repaired":
			s.repaired[kind] = v
		}
	}
	return s
}
