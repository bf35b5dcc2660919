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

//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

func stateSecrets(ctx context.Context, c ctrlruntimeclient.Client) ([]corev1.Secret, error) {
	var list corev1.SecretList
	err := c.List(ctx, &list, ctrlruntimeclient.InNamespace(framework.AgentNamespace), ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/object-state": "true"})
	return list.Items, err
}

// TestSyncOrphanedStateSweep: a kcp object that vanishes while the agent is
// down, without its finalizer being processed, leaves a state Secret; the
// copy and the state go once the object is confirmed gone.
func TestSyncOrphanedStateSweep(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1, "--state-sweep-interval=2s")
	ctx := t.Context()

	for _, name := range []string{"vanishing", "staying"} {
		framework.Must(t, ws[0].Client.Create(ctx, newObject(kcpThing, "default", name, map[string]any{"color": "x"})), "create Thing")
	}
	framework.WaitFor(t, syncTimeout, "two state Secrets", func(ctx context.Context) (bool, error) {
		secrets, err := stateSecrets(ctx, f.Service.Client)
		return len(secrets) == 2, err
	})

	agent.Stop(30 * time.Second)
	obj := newObject(kcpThing, "default", "vanishing", nil)
	framework.Must(t, ws[0].Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "vanishing"}, obj), "get Thing")
	obj.SetFinalizers(nil)
	framework.Must(t, ws[0].Client.Update(ctx, obj), "remove the finalizer behind the agent's back")
	framework.Must(t, ws[0].Client.Delete(ctx, obj), "delete Thing")

	framework.StartAgent(t, f.AgentArgs("--state-sweep-interval=2s")...)
	// The copy's event at the start, or the sweep, which hands the object
	// to its sync when the copy is still there, brings the pass that
	// deletes the copy, then the state. (Which of the two comes first is
	// a race here; TestSweepHandsOverVanishedObjectsWithACopy covers the
	// sweep's part alone.)
	framework.WaitFor(t, syncTimeout, "the orphaned state Secret and the vanished object's copy to go", func(ctx context.Context) (bool, error) {
		secrets, err := stateSecrets(ctx, f.Service.Client)
		if err != nil {
			return false, err
		}
		names, err := copyNames(ctx, f.Service.Client, ws[0].ClusterName)
		return len(secrets) == 1 && slices.Equal(names, []string{"staying"}), err
	})
	time.Sleep(5 * time.Second)
	if secrets, err := stateSecrets(ctx, f.Service.Client); err != nil || len(secrets) != 1 {
		t.Errorf("state Secrets = %d (%v), want the living object's one kept", len(secrets), err)
	}
	if names, err := copyNames(ctx, f.Service.Client, ws[0].ClusterName); err != nil || !slices.Equal(names, []string{"staying"}) {
		t.Errorf("local copies of the kcp objects %v (%v), want the living object's one kept", names, err)
	}
}

// copyNames returns the names of the kcp objects whose local Things of a
// workspace exist, sorted.
func copyNames(ctx context.Context, c ctrlruntimeclient.Client, cluster string) ([]string, error) {
	copies, err := localCopies(ctx, c, cluster)
	var names []string
	for _, cp := range copies {
		names = append(names, cp.GetAnnotations()["syncagent.kcp.io/remote-object-name"])
	}
	slices.Sort(names)
	return names, err
}
