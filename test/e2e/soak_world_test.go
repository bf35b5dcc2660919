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
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
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
