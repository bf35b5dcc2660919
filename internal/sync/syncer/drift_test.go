package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestSyncer_driftAndRepair: what Drift finds after a change behind the
// agent's back, whether the event path's pass repairs it, and that a
// Repair pass always does (after which Drift finds nothing and a second
// Repair pass writes nothing).
func TestSyncer_driftAndRepair(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, e *relatedEnv)
		want   []string
		// eventPathRepairs: a pass without Repair repairs it too.
		eventPathRepairs bool
		// repaired, if set, checks the outcome of the Repair passes.
		repaired func(t *testing.T, e *relatedEnv)
	}{
		{name: "nothing changed", change: func(*testing.T, *relatedEnv) {}, eventPathRepairs: true},
		{name: "a kcp-owned field of the copy edited", want: []string{DriftCopyDiffers}, change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			local.Object["spec"].(map[string]any)["color"] = "edited"
			local.Object["spec"].(map[string]any)["serviceOnly"] = "x"
			mustUpdate(t, e.service, local)
		}, repaired: func(t *testing.T, e *relatedEnv) {
			want := map[string]any{"color": "blue", "configName": "app-config", "serviceOnly": "x"}
			if diff := cmp.Diff(want, e.localCopy(t).Object["spec"]); diff != "" {
				t.Errorf("repaired spec (-want +got):\n%s", diff)
			}
		}},
		{name: "a service-only field set on the copy", change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			local.Object["spec"].(map[string]any)["serviceOnly"] = "x"
			mustUpdate(t, e.service, local)
		}, eventPathRepairs: true},
		{name: "a sync label removed from the copy", want: []string{DriftCopyDiffers}, change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			labels := local.GetLabels()
			delete(labels, "syncagent.kcp.io/agent-name")
			local.SetLabels(labels)
			mustUpdate(t, e.service, local)
		}, eventPathRepairs: true},
		{name: "the state Secret deleted", want: []string{DriftStateMissing}, change: func(t *testing.T, e *relatedEnv) {
			var secrets corev1.SecretList
			if err := e.service.List(t.Context(), &secrets, ctrlruntimeclient.InNamespace("agent-ns")); err != nil {
				t.Fatal(err)
			}
			for i := range secrets.Items {
				if _, related := secrets.Items[i].Labels["syncagent.kcp.io/related-identifier"]; !related {
					if err := e.service.Delete(t.Context(), &secrets.Items[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
		}, eventPathRepairs: true},
		{name: "the copy deleted", want: []string{DriftMissingCopy}, change: func(t *testing.T, e *relatedEnv) {
			if err := e.service.Delete(t.Context(), e.localCopy(t)); err != nil {
				t.Fatal(err)
			}
		}, eventPathRepairs: true},
		{name: "the copy's status changed", want: []string{DriftStatusBehind}, change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			local.Object["status"] = map[string]any{"phase": "Ready"}
			if err := e.service.Status().Update(t.Context(), local); err != nil {
				t.Fatal(err)
			}
		}, eventPathRepairs: true},
		{name: "the finalizer removed in kcp", want: []string{DriftNotAccepted}, change: func(t *testing.T, e *relatedEnv) {
			obj := e.getRemote(t, "default", "foo")
			controllerutil.RemoveFinalizer(obj, finalizer)
			mustUpdate(t, e.kcp, obj)
		}, eventPathRepairs: true},
		{name: "a related copy deleted", want: []string{DriftRelatedMissing}, change: func(t *testing.T, e *relatedEnv) {
			if err := e.service.Delete(t.Context(), mustGet(t, e.service, configMapGVK, cluster, "app-config")); err != nil {
				t.Fatal(err)
			}
		}, eventPathRepairs: true},
		{name: "a related copy edited", want: []string{DriftRelatedDiffers}, change: func(t *testing.T, e *relatedEnv) {
			cp := mustGet(t, e.service, configMapGVK, cluster, "app-config")
			cp.Object["data"] = map[string]any{"key": "edited"}
			mustUpdate(t, e.service, cp)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newSynced := func(t *testing.T) *relatedEnv {
				e := newRelatedEnv(t, relatedEnvOptions{
					rels:       []syncagentv1alpha1.RelatedResourceSpec{configEntry()},
					kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", map[string]string{"key": "value"})},
				})
				e.createPrimary(t, map[string]any{"color": "blue", "configName": "app-config"}, nil)
				e.mustConverge(t)
				tc.change(t, e)
				return e
			}
			e := newSynced(t)
			if diff := cmp.Diff(tc.want, e.drift(t)); diff != "" {
				t.Fatalf("drift (-want +got):\n%s", diff)
			}

			e.mustConverge(t)
			if got := e.drift(t) == nil; got != tc.eventPathRepairs {
				t.Errorf("the event path's pass repairs it: %v, want %v (drift left: %v)", got, tc.eventPathRepairs, e.drift(t))
			}

			e = newSynced(t)
			e.syncer.Repair = true
			e.mustConverge(t)
			if d := e.drift(t); d != nil {
				t.Errorf("drift after a Repair pass: %v", d)
			}
			if tc.repaired != nil {
				tc.repaired(t, e)
			}
			e.assertSteady(t)
		})
	}
}

func (e *relatedEnv) drift(t *testing.T) []string {
	t.Helper()
	d, err := e.syncer.Drift(t.Context(), Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustUpdate(t *testing.T, c ctrlruntimeclient.Client, obj ctrlruntimeclient.Object) {
	t.Helper()
	if err := c.Update(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}
