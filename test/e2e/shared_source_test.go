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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestSharedSourceKindSyncsOnce: two PublishedResources publish the same
// local kind as two kcp kinds. Local copies do not record the kcp kind, so
// same-named objects of the two would share one copy (each overwriting
// the other's spec, deleting one deleting the other's copy). Only one
// syncs: an enabled one before a disabled one, then the older. The other
// says why, leaves its objects alone, and releases those it synced before
// (their deletions must not hang). When the owner goes, the other takes
// over without a restart.
func TestSharedSourceKindSyncsOnce(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	// "things" is older but disabled at first, so "gadgets" owns the kind.
	older := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Synchronization = &syncagentv1alpha1.SynchronizationSpec{Enabled: false}
	})
	framework.Must(t, f.Service.Client.Create(ctx, older), "create PublishedResource things")
	// Creation timestamps have a resolution of one second.
	time.Sleep(1100 * time.Millisecond)
	newer := publishedResource("gadgets", "example.com", "Thing", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "gadgets.example.com", Kind: "Gadget"}
	})
	framework.Must(t, f.Service.Client.Create(ctx, newer), "create PublishedResource gadgets")
	agent := framework.StartAgent(t, f.AgentArgs()...)
	for _, name := range []string{"things", "gadgets"} {
		f.Service.WaitForPublishedResource(t, name, schemaTimeout, "ExportReady", exportReady)
	}
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	syncReady := func(name string, status metav1.ConditionStatus, reason string) {
		t.Helper()
		f.Service.WaitForPublishedResource(t, name, syncTimeout, "SyncReady="+string(status)+"/"+reason,
			framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, status, reason))
	}
	syncReady("gadgets", metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning)
	syncReady("things", metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict)

	// A Gadget synced by "gadgets" while it owns the kind.
	kcpGadget := schema.GroupVersionKind{Group: "gadgets.example.com", Version: "v1", Kind: "Gadget"}
	early := newObject(kcpGadget, "default", "early", map[string]any{"color": "gadget"})
	framework.Must(t, consumer.Client.Create(ctx, early), "create Gadget early")
	waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)

	// "things" is enabled: older and enabled, it takes over.
	framework.Must(t, f.Service.Client.Patch(ctx, older, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"synchronization":{"enabled":true}}}`))), "enable things")
	syncReady("things", metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning)
	syncReady("gadgets", metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict)
	framework.WaitFor(t, time.Minute, "a SourceConflict Warning on gadgets", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "gadgets")[syncagentv1alpha1.ReasonSourceConflict], nil
	})
	// The Gadget it synced is released: the consumer can delete it.
	framework.Must(t, consumer.Client.Delete(ctx, early), "delete Gadget early")
	waitGone(t, consumer.Client, early, "the released Gadget")

	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpGadget, "default", "same", map[string]any{"color": "gadget"})), "create Gadget")
	thing := newObject(kcpThing, "default", "same", map[string]any{"color": "thing"})
	framework.Must(t, consumer.Client.Create(ctx, thing), "create Thing")
	// A later change of the Thing arrives, so the agent has seen the
	// Gadget (created first) long before.
	framework.Must(t, consumer.Client.Patch(ctx, thing, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"thing2"}}`))), "patch Thing")
	var thingCopy string
	framework.WaitFor(t, syncTimeout, "the Thing's copy follows the Thing", func(ctx context.Context) (bool, error) {
		copies, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		if err != nil {
			return false, err
		}
		for _, c := range copies {
			color, _, _ := unstructured.NestedString(c.Object, "spec", "color")
			if c.GetAnnotations()["syncagent.kcp.io/remote-object-name"] == "same" && color == "thing2" {
				thingCopy = c.GetName()
				return true, nil
			}
		}
		return false, nil
	})
	gadget := newObject(kcpGadget, "default", "same", nil)
	framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "same"}, gadget), "get Gadget")
	if len(gadget.GetFinalizers()) != 0 {
		t.Errorf("the Gadget got finalizers %v from a PublishedResource that must not sync", gadget.GetFinalizers())
	}
	// Deleting the Gadget leaves the Thing's copy alone.
	framework.Must(t, consumer.Client.Delete(ctx, gadget), "delete Gadget")

	// The owner goes: the other one takes over.
	framework.Must(t, f.Service.Client.Delete(ctx, older), "delete PublishedResource things")
	syncReady("gadgets", metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning)
	local := typedObject(localThing)
	framework.Must(t, getObject(ctx, f.Service.Client, local, consumer.ClusterName, thingCopy), "the Thing's copy survived the Gadget's deletion")
	agent.NoErrors(t)
}
