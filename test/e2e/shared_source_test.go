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
// the other's spec, deleting one deleting the other's copy). Only the
// older PublishedResource syncs; the newer one (whose name sorts first)
// says why and leaves its objects alone. Once the older one is deleted the
// newer one takes over without a restart.
func TestSharedSourceKindSyncsOnce(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	older := thingsPR()
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

	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady=True/Running",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	f.Service.WaitForPublishedResource(t, "gadgets", syncTimeout, "SyncReady=False/SourceConflict",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonSourceConflict))
	framework.WaitFor(t, time.Minute, "a SourceConflict Warning on gadgets", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "gadgets")[syncagentv1alpha1.ReasonSourceConflict], nil
	})

	kcpGadget := schema.GroupVersionKind{Group: "gadgets.example.com", Version: "v1", Kind: "Gadget"}
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpGadget, "default", "same", map[string]any{"color": "gadget"})), "create Gadget")
	thing := newObject(kcpThing, "default", "same", map[string]any{"color": "thing"})
	framework.Must(t, consumer.Client.Create(ctx, thing), "create Thing")
	local := waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)
	// A later change of the Thing arrives, so the agent has seen the
	// Gadget (created first) long before.
	framework.Must(t, consumer.Client.Patch(ctx, thing, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"thing2"}}`))), "patch Thing")
	framework.WaitFor(t, syncTimeout, "the copy follows the Thing", func(ctx context.Context) (bool, error) {
		copies, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		if err != nil || len(copies) != 1 {
			return false, err
		}
		color, _, _ := unstructured.NestedString(copies[0].Object, "spec", "color")
		return color == "thing2" && copies[0].GetName() == local.GetName(), nil
	})
	gadget := newObject(kcpGadget, "default", "same", nil)
	framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "same"}, gadget), "get Gadget")
	if len(gadget.GetFinalizers()) != 0 {
		t.Errorf("the Gadget got finalizers %v from a PublishedResource that must not sync", gadget.GetFinalizers())
	}
	// Deleting the Gadget leaves the Thing's copy alone.
	framework.Must(t, consumer.Client.Delete(ctx, gadget), "delete Gadget")

	// The older one goes: the newer one takes over.
	framework.Must(t, f.Service.Client.Delete(ctx, older), "delete PublishedResource things")
	f.Service.WaitForPublishedResource(t, "gadgets", syncTimeout, "SyncReady=True/Running after things is deleted",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	copies, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
	framework.Must(t, err, "list copies")
	if len(copies) != 1 || copies[0].GetName() != local.GetName() {
		t.Errorf("the Thing's copy did not survive the Gadget's deletion: %d copies", len(copies))
	}
	agent.NoErrors(t)
}
