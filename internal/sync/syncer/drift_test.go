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

package syncer

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestSyncer_drift: what Drift finds after a change behind the agent's
// back, and whether a pass of the sync repairs it: every kind that
// Repairable names, and none of the others (a field changed only on the
// service side survives until it changes in kcp, contract §6.5).
func TestSyncer_drift(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, e *relatedEnv)
		want   []string
		// conflict: the passes end in ErrConflict.
		conflict bool
		// after, if set, is the drift after a pass of the sync (default:
		// the kinds of want that are not Repairable).
		after []string
	}{
		{name: "nothing changed", change: func(*testing.T, *relatedEnv) {}},
		{name: "a kcp-owned field of the copy edited", want: []string{DriftCopyDiffers}, change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			local.Object["spec"].(map[string]any)["color"] = "edited"
			local.Object["spec"].(map[string]any)["serviceOnly"] = "x"
			mustUpdate(t, e.service, local)
		}},
		{name: "a service-only field set on the copy", change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			local.Object["spec"].(map[string]any)["serviceOnly"] = "x"
			mustUpdate(t, e.service, local)
		}},
		{name: "a sync label removed from the copy", want: []string{DriftCopyMetadata}, change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			labels := local.GetLabels()
			delete(labels, "syncagent.kcp.io/agent-name")
			local.SetLabels(labels)
			mustUpdate(t, e.service, local)
		}},
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
		}},
		{name: "the copy deleted", want: []string{DriftMissingCopy}, change: func(t *testing.T, e *relatedEnv) {
			if err := e.service.Delete(t.Context(), e.localCopy(t)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "someone else's object in the copy's place", change: func(t *testing.T, e *relatedEnv) {
			replaceCopy(t, e, nil)
		}, after: []string{DriftCopyDiffers}}, // adopted: its spec is kept (contract §6.4)
		{name: "another agent's object in the copy's place", change: func(t *testing.T, e *relatedEnv) {
			replaceCopy(t, e, map[string]string{"syncagent.kcp.io/agent-name": "another"})
		}, conflict: true}, // refused (ObjectConflict): no repair can change it
		{name: "the copy's status changed", want: []string{DriftStatusBehind}, change: func(t *testing.T, e *relatedEnv) {
			local := e.localCopy(t)
			local.Object["status"] = map[string]any{"phase": "Ready"}
			if err := e.service.Status().Update(t.Context(), local); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the finalizer removed in kcp", want: []string{DriftNotAccepted}, change: func(t *testing.T, e *relatedEnv) {
			obj := e.getRemote(t, "default", "foo")
			controllerutil.RemoveFinalizer(obj, ownFinalizer)
			mustUpdate(t, e.kcp, obj)
		}},
		{name: "a related copy deleted", want: []string{DriftRelatedMissing}, change: func(t *testing.T, e *relatedEnv) {
			if err := e.service.Delete(t.Context(), mustGet(t, e.service, configMapGVK, cluster, "app-config")); err != nil {
				t.Fatal(err)
			}
		}},
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

			converge := func(t *testing.T, e *relatedEnv) {
				t.Helper()
				if _, err := e.converge(t, "default", "foo"); err != nil && !(tc.conflict && errors.Is(err, ErrConflict)) {
					t.Fatal(err)
				}
			}
			converge(t, e)
			left := tc.after
			for _, k := range tc.want {
				if !Repairable(k) {
					left = append(left, k)
				}
			}
			if diff := cmp.Diff(left, e.drift(t)); diff != "" {
				t.Errorf("drift after a pass of the sync (-want the kinds that are not Repairable +got):\n%s", diff)
			}
			if !tc.conflict {
				e.assertSteady(t)
			}
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

// replaceCopy deletes the local copy and puts someone else's object with
// labels in its place.
func replaceCopy(t *testing.T, e *relatedEnv, labels map[string]string) {
	t.Helper()
	local := e.localCopy(t)
	if err := e.service.Delete(t.Context(), local); err != nil {
		t.Fatal(err)
	}
	theirs := typed(localGVK)
	theirs.SetNamespace(local.GetNamespace())
	theirs.SetName(local.GetName())
	theirs.SetLabels(labels)
	theirs.Object["spec"] = map[string]any{"color": "theirs"}
	if err := e.service.Create(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
}

func mustUpdate(t *testing.T, c ctrlruntimeclient.Client, obj ctrlruntimeclient.Object) {
	t.Helper()
	if err := c.Update(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}
