//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestSyncTakesOverFromReference plays a switch from the reference agent: a
// kcp object with the reference's finalizer, its local copy without our
// agent label but with a field only the service side set, and the
// reference's state Secret. After the switch a kcp change is merged against
// that state, so the service-side field survives, and the copy gets our
// agent label; nothing is re-created.
func TestSyncTakesOverFromReference(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	ctx := t.Context()
	agent.Stop(30 * time.Second)
	cluster := ws[0].ClusterName

	// What the reference left behind.
	remote := newObject(kcpThing, "default", "migrated", map[string]any{"color": "blue"})
	remote.SetFinalizers([]string{"syncagent.kcp.io/cleanup"})
	framework.Must(t, ws[0].Client.Create(ctx, remote), "create the kcp object")

	r := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "migrated"}
	referenceLabels := r.Labels("ignored")
	delete(referenceLabels, "syncagent.kcp.io/agent-name")
	f.Service.CreateNamespace(t, cluster)
	local := newObject(localThing, cluster, sha3short("default")+"-"+sha3short("migrated"), map[string]any{"color": "blue", "v1": "by-operator"})
	local.SetLabels(referenceLabels)
	local.SetAnnotations(r.Annotations())
	framework.Must(t, f.Service.Client.Create(ctx, local), "create the local copy")

	p := state.Primary{Remote: r, APIVersion: "kcp.example.com/v1", Kind: "Thing"}
	stateLabels := map[string]string{"syncagent.kcp.io/object-state": "true"}
	for k, v := range referenceLabels {
		stateLabels[k] = v
	}
	framework.Must(t, f.Service.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.AgentNamespace, Name: state.SecretName(p), Labels: stateLabels},
		Data: map[string][]byte{state.LegacyKey(cluster, "default", "migrated"): []byte(
			`{"apiVersion":"kcp.example.com/v1","kind":"Thing","metadata":{"creationTimestamp":null,"name":"migrated","namespace":"default"},"spec":{"color":"blue"}}`)},
	}), "create the reference's state Secret")

	framework.StartAgent(t, f.AgentArgs()...).WaitReady(t, agentReadyTimeout)
	framework.Must(t, ws[0].Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "migrated"}, remote), "get the kcp object")
	framework.Must(t, unstructured.SetNestedField(remote.Object, "red", "spec", "color"), "set color")
	framework.Must(t, ws[0].Client.Update(ctx, remote), "update the kcp object")

	framework.WaitFor(t, syncTimeout, "the kcp change merged into the copy", func(ctx context.Context) (bool, error) {
		if err := f.Service.Client.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}, local); err != nil {
			return false, err
		}
		color, _, _ := unstructured.NestedString(local.Object, "spec", "color")
		return color == "red", nil
	})
	// spec.v1 is in the CRD schema (framework.TestCRD) but never set in kcp.
	if operatorField, _, _ := unstructured.NestedString(local.Object, "spec", "v1"); operatorField != "by-operator" {
		t.Errorf("the service-side field was overwritten (spec.v1 = %q): the reference's state was not used", operatorField)
	}
	framework.WaitFor(t, syncTimeout, "our agent label on the copy", func(ctx context.Context) (bool, error) {
		if err := f.Service.Client.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}, local); err != nil {
			return false, err
		}
		return local.GetLabels()["syncagent.kcp.io/agent-name"] == f.Export.Name+"-syncagent", nil
	})
	items, err := localCopies(ctx, f.Service.Client, cluster)
	framework.Must(t, err, "list local copies")
	if len(items) != 1 || items[0].GetUID() != local.GetUID() {
		t.Errorf("local copies = %d; the existing copy must be kept, not re-created", len(items))
	}
}
