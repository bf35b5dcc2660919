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
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// The administrator's changes that take PublishedResources away from the
// agent (issue 30): deselection and re-selection, and what the final phase
// leaves in place.

// soakAgentLabel selects the soak's PublishedResources for its agents
// (--published-resource-selector): without it, one is deselected.
const soakAgentLabel = "soak-agent"

// selectPR labels a PublishedResource for the soak's agents, or removes
// the label.
func (w *soakWorld) selectPR(ctx context.Context, name string, selected bool) error {
	return poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		pr := &syncagentv1alpha1.PublishedResource{}
		if err := w.f.Service.Client.Get(ctx, types.NamespacedName{Name: name}, pr); err != nil {
			return false, err
		}
		if pr.Labels == nil {
			pr.Labels = map[string]string{}
		}
		if selected {
			pr.Labels[soakAgentLabel] = "yes"
		} else {
			delete(pr.Labels, soakAgentLabel)
		}
		err := w.f.Service.Client.Update(ctx, pr)
		return err == nil, err
	})
}

// waitReleased waits until the agent released a PublishedResource it no
// longer selects: its release finalizer is gone (its objects lost the
// agent's finalizer first).
func (w *soakWorld) waitReleased(ctx context.Context, name string) error {
	return poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		pr := &syncagentv1alpha1.PublishedResource{}
		err := w.f.Service.Client.Get(ctx, types.NamespacedName{Name: name}, pr)
		return err == nil && !slices.ContainsFunc(w.releaseFinalizers(), func(f string) bool { return slices.Contains(pr.Finalizers, f) }), err
	})
}

// releaseFinalizers are the first agent's release finalizers: one, or
// one per partition.
func (w *soakWorld) releaseFinalizers() []string {
	agent := w.f.Export.Name + "-syncagent"
	if len(w.partitions) == 0 {
		return []string{keys.ReleaseFinalizer(agent)}
	}
	var out []string
	for _, p := range w.partitions {
		out = append(out, keys.ReleaseFinalizerIn(agent, p))
	}
	return out
}

// syncReady is the first agent's SyncReady condition types: one, or one
// per partition.
func (w *soakWorld) syncReady() []string {
	if len(w.partitions) == 0 {
		return []string{syncagentv1alpha1.ConditionSyncReady}
	}
	var out []string
	for _, p := range w.partitions {
		out = append(out, syncagentv1alpha1.ConditionSyncReady+"."+p)
	}
	return out
}

// widgetsAway opens a window in which the widgets PublishedResource does
// not sync: deleted, or deselected. Deletions still pending (say, while no
// replica leads) are released, not cleaned up, and so are those in the
// window: their copies stay. It returns the window's index.
func (w *soakWorld) widgetsAway(ctx context.Context, deselect bool, result func(string, error)) int {
	var conflict *soakConflict
	if !deselect {
		// Placed while widgets still syncs (outside the window, so that
		// the widgets deleted meanwhile are still cleaned up).
		end := w.faults.begin(causeConflict)
		defer end()
		var err error
		conflict, err = w.placeConflict(ctx)
		if placed := conflict; placed != nil { // conflict itself is cleared below when placing failed
			defer func() {
				result("admin-conflict-cleanup ws="+placed.ws.ClusterName+" "+placed.name, w.removeConflict(ctx, placed))
			}()
		}
		switch {
		case err != nil:
			result("admin-conflict-placed", err)
			conflict = nil
		case conflict == nil:
			result("admin-conflict-none (no workspace bound)", nil)
		default:
			result("admin-conflict-placed ws="+conflict.ws.ClusterName+" "+conflict.name, nil)
		}
	}
	w.mu.Lock()
	w.gone = append(w.gone, [2]time.Time{time.Now()})
	window := len(w.gone) - 1
	w.mu.Unlock()
	result("admin-pending-widget-deletions", retryUnavailable(ctx, func() error { return w.keepPendingWidgets(ctx) }))
	if deselect {
		err := w.selectPR(ctx, "widgets", false)
		if err == nil {
			err = w.waitReleased(ctx, "widgets")
		}
		result("admin-pr-deselect widgets", err)
		return window
	}
	result("admin-pr-delete widgets", w.deletePR(ctx, "widgets"))
	if conflict != nil {
		result("admin-conflict-released ws="+conflict.ws.ClusterName+" "+conflict.name, w.conflictReleased(ctx, conflict))
	}
	return window
}

// soakConflict is a widget whose copy's name another service's Widget
// holds on the service cluster.
type soakConflict struct {
	ws            *framework.Workspace
	name, foreign string
	// foreignVersion is the resourceVersion of the other service's Widget
	// as created: nothing of the agent's may write it.
	foreignVersion string
}

// soakForeignAgent is the agent label of the other service's Widget: not
// one of the soak's agents, so neither may take it over.
const soakForeignAgent = "another-service"

// placeConflict creates, before the widgets PublishedResource is deleted, a
// widget whose local name another service's Widget already holds, and
// waits until the agent accepted it (its finalizer) and refused to place it
// (an ObjectConflict Event in the workspace): the object has neither a copy
// nor state, and its release must still happen. nil if no workspace is
// bound.
func (w *soakWorld) placeConflict(ctx context.Context) (*soakConflict, error) {
	bound := w.bound()
	w.mu.Lock()
	n := len(w.gone) // tells the conflicts apart
	w.mu.Unlock()
	if len(bound) == 0 {
		return nil, nil
	}
	c := &soakConflict{ws: bound[n%len(bound)], name: fmt.Sprintf("conflict-%d", n)}
	c.foreign = c.ws.ClusterName + "-" + c.name // the widgets' naming
	foreign := newObject(soakWidgets.local, "", c.foreign, map[string]any{"color": "foreign"})
	foreign.SetLabels(map[string]string{keys.AgentName: soakForeignAgent})
	if err := retryUnavailable(ctx, func() error {
		created := foreign.DeepCopy() // a failed Create must not leave its half-filled answer in foreign
		err := w.f.Service.Client.Create(ctx, created)
		if apierrors.IsAlreadyExists(err) { // an answer lost: created before
			return w.f.Service.Client.Get(ctx, types.NamespacedName{Name: c.foreign}, foreign)
		}
		if err == nil {
			foreign = created
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("failed to create the other service's Widget %s: %w", c.foreign, err)
	}
	c.foreignVersion = foreign.GetResourceVersion()
	if err := retryUnavailable(ctx, func() error {
		return ctrlruntimeclient.IgnoreAlreadyExists(c.ws.Client.Create(ctx, newObject(soakWidgets.kcp, "", c.name, map[string]any{"color": "red"})))
	}); err != nil {
		return c, fmt.Errorf("failed to create widget %s: %w", c.name, err)
	}
	return c, poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		o := newObject(soakWidgets.kcp, "", c.name, nil)
		if err := c.ws.Client.Get(ctx, types.NamespacedName{Name: c.name}, o); err != nil || !slices.Contains(o.GetFinalizers(), agentFinalizer(w.f)) {
			return false, err
		}
		var events corev1.EventList
		if err := c.ws.Client.List(ctx, &events, ctrlruntimeclient.InNamespace("default"), ctrlruntimeclient.MatchingFields{"involvedObject.name": c.name}); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == c.name && e.Reason == "ObjectConflict"
		}), nil
	})
}

// conflictReleased checks, once the widgets PublishedResource is gone, that
// the widget in conflict lost the agent's finalizer and goes when the
// consumer deletes it, and that the other service's Widget is untouched.
func (w *soakWorld) conflictReleased(ctx context.Context, c *soakConflict) error {
	o := newObject(soakWidgets.kcp, "", c.name, nil)
	if err := retryUnavailable(ctx, func() error { return c.ws.Client.Get(ctx, types.NamespacedName{Name: c.name}, o) }); err != nil {
		return fmt.Errorf("failed to get widget %s: %w", c.name, err)
	}
	if fins := o.GetFinalizers(); slices.Contains(fins, agentFinalizer(w.f)) || slices.Contains(fins, keys.CleanupFinalizer) {
		return fmt.Errorf("widget %s in conflict keeps the agent's finalizer after its PublishedResource was deleted: %v", c.name, fins)
	}
	if err := retryUnavailable(ctx, func() error { return ctrlruntimeclient.IgnoreNotFound(c.ws.Client.Delete(ctx, o)) }); err != nil {
		return fmt.Errorf("failed to delete widget %s: %w", c.name, err)
	}
	if err := poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		err := c.ws.Client.Get(ctx, types.NamespacedName{Name: c.name}, newObject(soakWidgets.kcp, "", c.name, nil))
		return apierrors.IsNotFound(err), ctrlruntimeclient.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("widget %s in conflict is not gone after its deletion: %w", c.name, err)
	}
	foreign := newObject(soakWidgets.local, "", c.foreign, nil)
	if err := retryUnavailable(ctx, func() error { return w.f.Service.Client.Get(ctx, types.NamespacedName{Name: c.foreign}, foreign) }); err != nil {
		return fmt.Errorf("the other service's Widget %s: %w", c.foreign, err)
	}
	if foreign.GetResourceVersion() != c.foreignVersion {
		return fmt.Errorf("the other service's Widget %s was written (resourceVersion %s, created as %s): labels %v", c.foreign, foreign.GetResourceVersion(), c.foreignVersion, foreign.GetLabels())
	}
	return nil
}

// removeConflict deletes the widget and the other service's Widget, so
// that a failed check leaves nothing that fails the later ones too.
func (w *soakWorld) removeConflict(ctx context.Context, c *soakConflict) error {
	if err := retryUnavailable(ctx, func() error {
		return ctrlruntimeclient.IgnoreNotFound(c.ws.Client.Delete(ctx, newObject(soakWidgets.kcp, "", c.name, nil)))
	}); err != nil {
		return err
	}
	return retryUnavailable(ctx, func() error {
		return ctrlruntimeclient.IgnoreNotFound(w.f.Service.Client.Delete(ctx, newObject(soakWidgets.local, "", c.foreign, nil)))
	})
}

// widgetsBack ends the window: the widgets PublishedResource is selected
// or created again, and syncs; the window ends once the controller has put
// the finalizer back on every live widget (a deletion before that is not
// cleaned up).
func (w *soakWorld) widgetsBack(ctx context.Context, window int, deselected bool, result func(string, error)) {
	var err error
	op := "admin-pr-recreate widgets"
	if deselected {
		op = "admin-pr-reselect widgets"
		err = w.selectPR(ctx, "widgets", true)
		if err == nil {
			// Its conditions stayed as they were while it was deselected:
			// the agent's release finalizers say it took it up again.
			err = poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
				pr := &syncagentv1alpha1.PublishedResource{}
				err := w.f.Service.Client.Get(ctx, types.NamespacedName{Name: "widgets"}, pr)
				return err == nil && !slices.ContainsFunc(w.releaseFinalizers(), func(f string) bool { return !slices.Contains(pr.Finalizers, f) }), err
			})
		}
	} else {
		err = retryUnavailable(ctx, func() error {
			err := w.f.Service.Client.Create(ctx, soakPRs()[1])
			if apierrors.IsAlreadyExists(err) { // created before the server's answer was lost
				return nil
			}
			return err
		})
	}
	if err == nil {
		err = poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
			pr := &syncagentv1alpha1.PublishedResource{}
			err := w.f.Service.Client.Get(ctx, types.NamespacedName{Name: "widgets"}, pr)
			return err == nil && !slices.ContainsFunc(w.syncReady(), func(c string) bool {
				return !framework.HasCondition(c, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning)(pr)
			}), err
		})
	}
	if err == nil {
		err = poll(ctx, soakAdminTimeout, w.widgetsGuarded)
	}
	w.mu.Lock()
	w.gone[window][1] = time.Now()
	w.mu.Unlock()
	result(op, err)
}

// excludeRed leaves the Things labelled team=red out of the things
// PublishedResource for a while (they keep their copies, related Secrets
// and our finalizer, and a consumer's deletion of them or of their related
// Secrets is still processed), then selects every Thing again.
func (w *soakWorld) excludeRed(ctx context.Context, pause func(), result func(string, error)) {
	notRed := &syncagentv1alpha1.ResourceFilter{Resource: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"red"}},
	}}}
	result("admin-pr-exclude-red things", w.updatePR(ctx, "things", func(s *syncagentv1alpha1.PublishedResourceSpec) { s.Filter = notRed }))
	pause()
	result("admin-pr-include-all things", w.updatePR(ctx, "things", func(s *syncagentv1alpha1.PublishedResourceSpec) { s.Filter = nil }))
}

// finalPhase runs after the operations and the checks of quiescence: one
// workspace is unbound while no replica runs (kcp deletes its objects,
// whose finalizers wait for the agent; once it is back they go, and the
// namespace the agent created for it once the service owner removed its
// own Secrets there), and, by the seed, the widgets PublishedResource is
// left deselected. The replicas start again with the deletion of created
// namespaces on (off during the run: the test bed has no namespace
// controller, so a deleted namespace stays Terminating, and a workspace
// unbound and bound again during the run could not sync into it again).
// It returns the unbound workspace (nil if none could be) and whether the
// widgets were left deselected.
func (w *soakWorld) finalPhase(t *testing.T, rnd *rand.Rand, first *firstAgent, log *opLog) (*framework.Workspace, bool) {
	ctx := t.Context()
	result := func(op string, err error) {
		if err != nil {
			t.Errorf("final phase: %s: %v", op, err)
		}
		log.add("%s: %s", op, resultOf(err))
	}
	end := w.faults.begin(causeUnbind)
	defer end()
	for _, replicas := range first.sets {
		replicas.stopAll(log)
		replicas.args = append(slices.DeleteFunc(replicas.args, func(a string) bool { return a == "--delete-created-namespaces=false" }), "--delete-created-namespaces=true")
	}
	gone := w.unbindOne(ctx, rnd, result)
	// One after the other, as during the run: two replicas started at the
	// same moment race for the free Lease, and client-go logs the loser's
	// conflict at ERROR.
	for _, replicas := range first.sets {
		replicas.start(log)
		replicas.awaitLeaderOrExit(2 * soakLease)
		replicas.heal(log)
	}
	if gone != nil {
		binding := &kcpapisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: w.f.Export.Name}}
		result("final-unbound-while-down wait ws="+gone.ClusterName, poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
			err := gone.Client.Get(ctx, types.NamespacedName{Name: binding.Name}, binding)
			return apierrors.IsNotFound(err), ctrlruntimeclient.IgnoreNotFound(err)
		}))
		// The service owner removes its own Secrets (the credentials, not
		// the agent's related copies) next to the workspace's copies: the
		// namespace is then empty, and the agent must delete it.
		notCopies, err := labels.Parse("!" + soakTokenLabel)
		if err == nil {
			err = retryUnavailable(ctx, func() error {
				return w.f.Service.Client.DeleteAllOf(ctx, &corev1.Secret{}, ctrlruntimeclient.InNamespace(gone.ClusterName), ctrlruntimeclient.MatchingLabelsSelector{Selector: notCopies})
			})
		}
		result("final-owner-cleans-up ws="+gone.ClusterName, err)
	}
	if rnd.IntN(2) == 0 {
		return gone, false
	}
	w.widgetsAway(ctx, true, result) // the window stays open: deletions from now on keep their copies
	return gone, true
}

// unbindOne deletes the binding of a workspace while no replica runs,
// waits until kcp began to delete its objects (so that their deletion
// waits for the agent), and takes the workspace out of those the checker
// expects bound; nil if every workspace is unbound.
func (w *soakWorld) unbindOne(ctx context.Context, rnd *rand.Rand, result func(string, error)) *framework.Workspace {
	w.mu.Lock()
	var candidates []int
	for i, ws := range w.ws {
		if !w.unbound[ws.ClusterName] {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		w.mu.Unlock()
		result("final-unbind-while-down: every workspace is unbound", errors.New("no workspace to unbind"))
		return nil
	}
	i := candidates[rnd.IntN(len(candidates))]
	ws := w.ws[i]
	w.ws = slices.Delete(w.ws, i, i+1)
	w.mu.Unlock()
	binding := &kcpapisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: w.f.Export.Name}}
	result("final-unbind-while-down ws="+ws.ClusterName, retryUnavailable(ctx, func() error { return ctrlruntimeclient.IgnoreNotFound(ws.Client.Delete(ctx, binding)) }))
	result("final-deletion-begun ws="+ws.ClusterName, poll(ctx, soakAdminTimeout, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kcpThing.GroupVersion().WithKind("ThingList"))
		if err := ws.Client.List(ctx, list); err != nil {
			return meta.IsNoMatchError(err), ctrlruntimeclient.IgnoreNotFound(err)
		}
		for _, o := range list.Items {
			if o.GetDeletionTimestamp() == nil {
				return false, nil
			}
		}
		return true, nil
	}))
	return ws
}

// stopAll stops every replica, the leader last (stopped first, it would
// hand the lead to a standby that is stopped while it starts).
func (r *replicaSet) stopAll(log *opLog) {
	r.mu.Lock()
	agents := r.agents
	r.agents = nil
	r.mu.Unlock()
	slices.SortStableFunc(agents, func(a, b *framework.Agent) int {
		la, lb := isLeader(r.t, a), isLeader(r.t, b)
		switch {
		case la == lb:
			return 0
		case lb:
			return -1
		}
		return 1
	})
	for _, a := range agents {
		a.Stop(30 * time.Second)
	}
	log.add("replicas-stopped")
}

// resultOf is how an operation's error is logged.
func resultOf(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}
