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

	"github.com/google/go-cmp/cmp"
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
	remote, local := referenceLeftovers(t, f.Service, ws[0], "migrated")
	cluster := ws[0].ClusterName

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
	// The reference's finalizer is replaced by the agent's own; deleting
	// the object then deletes the copy and leaves no finalizer.
	framework.Must(t, ws[0].Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "migrated"}, remote), "get the kcp object")
	if want := []string{agentFinalizer(f)}; !slices.Equal(remote.GetFinalizers(), want) {
		t.Errorf("finalizers of the taken-over object %v, want %v", remote.GetFinalizers(), want)
	}
	framework.Must(t, ws[0].Client.Delete(ctx, remote), "delete the kcp object")
	waitGone(t, f.Service.Client, local, "the copy of the deleted object")
	waitGone(t, ws[0].Client, remote, "the deleted kcp object")
}

// TestSyncAdoptionKeepsLocalSpec: a local object that a service owner
// created before the kcp object (no sync labels, a differing spec that names
// service-side Secrets, an operator's label) is adopted as the reference
// adopts: it gets the sync labels, its spec is kept, and from then on exactly
// the fields that change in kcp arrive. docs/sync.md, "Adoption".
func TestSyncAdoptionKeepsLocalSpec(t *testing.T) {
	t.Parallel()
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()},
		[]*syncagentv1alpha1.PublishedResource{thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Naming = &syncagentv1alpha1.ResourceNaming{Namespace: "prepared", Name: "pre-{{ .Object.metadata.name }}"}
		})}, 1)
	ctx := t.Context()

	f.Service.CreateNamespace(t, "prepared")
	local := newObject(localThing, "prepared", "pre-db", map[string]any{"color": "green", "size": "S", "items": []any{"svc-secret-a", "svc-secret-b"}})
	local.SetLabels(map[string]string{"team": "ops"})
	framework.Must(t, f.Service.Client.Create(ctx, local), "pre-create the local object")

	remote := newObject(kcpThing, "default", "db", map[string]any{"color": "blue", "size": "S"})
	framework.Must(t, ws[0].Client.Create(ctx, remote), "create the kcp object")
	framework.WaitFor(t, syncTimeout, "the adoption", func(ctx context.Context) (bool, error) {
		if err := f.Service.Client.Get(ctx, types.NamespacedName{Namespace: "prepared", Name: "pre-db"}, local); err != nil {
			return false, err
		}
		return local.GetLabels()["syncagent.kcp.io/remote-object-cluster"] == ws[0].ClusterName, nil
	})
	framework.WaitFor(t, syncTimeout, "ObjectPlaced on the kcp object", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, ws[0], "default", "db")["ObjectPlaced"], nil
	})
	// Give a wrong implementation time to overwrite: a few requeues pass.
	time.Sleep(5 * time.Second)
	framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Namespace: "prepared", Name: "pre-db"}, local), "get the local object")
	want := map[string]any{"color": "green", "size": "S", "items": []any{"svc-secret-a", "svc-secret-b"}}
	if diff := cmp.Diff(want, local.Object["spec"]); diff != "" {
		t.Errorf("adoption changed the local spec (-want +got):\n%s", diff)
	}
	if local.GetLabels()["team"] != "ops" {
		t.Errorf("the operator's label is gone: %v", local.GetLabels())
	}

	// A kcp change of one field arrives, and only that field.
	framework.Must(t, ws[0].Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "db"}, remote), "get the kcp object")
	framework.Must(t, unstructured.SetNestedField(remote.Object, "L", "spec", "size"), "set size")
	framework.Must(t, ws[0].Client.Update(ctx, remote), "update the kcp object")
	framework.WaitFor(t, syncTimeout, "the kcp change in the local object", func(ctx context.Context) (bool, error) {
		if err := f.Service.Client.Get(ctx, types.NamespacedName{Namespace: "prepared", Name: "pre-db"}, local); err != nil {
			return false, err
		}
		size, _, _ := unstructured.NestedString(local.Object, "spec", "size")
		return size == "L", nil
	})
	want["size"] = "L"
	if diff := cmp.Diff(want, local.Object["spec"]); diff != "" {
		t.Errorf("local spec after the kcp change (-want +got):\n%s", diff)
	}
	framework.WaitFor(t, syncTimeout, "ObjectSynced on the kcp object", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, ws[0], "default", "db")["ObjectSynced"], nil
	})
}

// referenceLeftovers creates what the reference agent leaves behind for one
// synced Thing: the kcp object with the reference's finalizer, its local
// copy without our agent label but with a field only the service side set
// (spec.v1, in framework.TestCRD's schema), and the reference's state
// Secret, which knows spec.color only.
func referenceLeftovers(t *testing.T, svc *framework.ServiceCluster, ws *framework.Workspace, name string) (remote, local *unstructured.Unstructured) {
	t.Helper()
	ctx := t.Context()
	cluster := ws.ClusterName
	remote = newObject(kcpThing, "default", name, map[string]any{"color": "blue"})
	remote.SetFinalizers([]string{"syncagent.kcp.io/cleanup"})
	framework.Must(t, ws.Client.Create(ctx, remote), "create the kcp object")

	r := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: name}
	referenceLabels := r.Labels("ignored")
	delete(referenceLabels, "syncagent.kcp.io/agent-name")
	svc.CreateNamespace(t, cluster)
	local = newObject(localThing, cluster, sha3short("default")+"-"+sha3short(name), map[string]any{"color": "blue", "v1": "by-operator"})
	local.SetLabels(referenceLabels)
	local.SetAnnotations(r.Annotations())
	framework.Must(t, svc.Client.Create(ctx, local), "create the local copy")

	p := state.Primary{Remote: r, APIVersion: "kcp.example.com/v1", Kind: "Thing"}
	stateLabels := map[string]string{"syncagent.kcp.io/object-state": "true"}
	for k, v := range referenceLabels {
		stateLabels[k] = v
	}
	framework.Must(t, svc.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.AgentNamespace, Name: state.SecretName(p), Labels: stateLabels},
		Data: map[string][]byte{state.LegacyKey(cluster, "default", name): []byte(
			`{"apiVersion":"kcp.example.com/v1","kind":"Thing","metadata":{"creationTimestamp":null,"name":"` + name + `","namespace":"default"},"spec":{"color":"blue"}}`)},
	}), "create the reference's state Secret")
	return remote, local
}
