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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// referenceRecheckTimeout bounds the wait for an unresolved reference to be
// checked again after the object it names appears (the re-check backs off
// from 2 s, doubling).
const referenceRecheckTimeout = 3 * time.Minute

// TestReferences: Things name Gadgets in spec.gadgetRef.name and the
// service names a Gadget's copy in status.gadgetName. In workspace A the
// copy of a Thing names the local copy of A's Gadget, and the status gives
// back the kcp name; a Thing naming a Gadget that does not exist keeps the
// name as written (ReferenceUnresolved) until the Gadget is created. In
// workspace B a Thing names "blue" too, which exists only in A: its copy
// keeps "blue", and a status naming A's Gadget's copy never reaches B.
func TestReferences(t *testing.T) {
	t.Parallel()
	gadgetKind := schema.GroupKind{Group: "kcp.example.com", Kind: "Gadget"}
	things := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.References = []syncagentv1alpha1.ResourceReference{
			{Path: "spec.gadgetRef.name", Group: gadgetKind.Group, Kind: gadgetKind.Kind},
			{Path: "status.gadgetName", Group: gadgetKind.Group, Kind: gadgetKind.Kind},
		}
	})
	gadgets := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: gadgetKind.Group}
	})
	f, consumers, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openCRD("Thing"), openCRD("Gadget")},
		[]*syncagentv1alpha1.PublishedResource{things, gadgets}, 2)
	a, b := consumers[0], consumers[1]
	ctx := t.Context()
	svc := f.Service.Client

	framework.Must(t, a.Client.Create(ctx, newObject(kcpGadget, "default", "blue", map[string]any{"color": "blue"})), "create Gadget blue in A")
	blueCopy := waitCopyOf(t, svc, localGadget, a, "blue")
	ref := func(name string) map[string]any { return map[string]any{"gadgetRef": map[string]any{"name": name}} }
	framework.Must(t, a.Client.Create(ctx, newObject(kcpThing, "default", "uses-blue", ref("blue"))), "create Thing uses-blue in A")
	framework.Must(t, a.Client.Create(ctx, newObject(kcpThing, "default", "uses-ghost", ref("ghost"))), "create Thing uses-ghost in A")
	framework.Must(t, b.Client.Create(ctx, newObject(kcpThing, "default", "uses-blue", ref("blue"))), "create Thing uses-blue in B")

	waitRefName(t, svc, a, "uses-blue", blueCopy.GetName(), syncTimeout)
	waitRefName(t, svc, a, "uses-ghost", "ghost", syncTimeout)
	waitRefName(t, svc, b, "uses-blue", "blue", syncTimeout)
	for _, w := range []*framework.Workspace{a, b} {
		name := map[*framework.Workspace]string{a: "uses-ghost", b: "uses-blue"}[w]
		framework.WaitFor(t, syncTimeout, "ReferenceUnresolved on "+name, func(ctx context.Context) (bool, error) {
			return namespacedEventReasons(ctx, w, "default", name)["ReferenceUnresolved"], nil
		})
	}
	// The kcp objects keep the consumer's names.
	for _, w := range []*framework.Workspace{a, b} {
		thing := newObject(kcpThing, "default", "uses-blue", nil)
		framework.Must(t, w.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(thing), thing), "get Thing uses-blue")
		if got, _, _ := unstructured.NestedString(thing.Object, "spec", "gadgetRef", "name"); got != "blue" {
			t.Errorf("kcp spec.gadgetRef.name of uses-blue in %s = %q, want blue", w.ClusterName, got)
		}
	}

	// The Gadget the reference named appears: the copy follows.
	framework.Must(t, a.Client.Create(ctx, newObject(kcpGadget, "default", "ghost", map[string]any{"color": "grey"})), "create Gadget ghost in A")
	ghostCopy := waitCopyOf(t, svc, localGadget, a, "ghost")
	waitRefName(t, svc, a, "uses-ghost", ghostCopy.GetName(), referenceRecheckTimeout)

	// The service reports A's Gadget's copy by its local name.
	for _, w := range []*framework.Workspace{a, b} {
		local := waitCopyOf(t, svc, localThing, w, "uses-blue")
		framework.Must(t, unstructured.SetNestedField(local.Object, blueCopy.GetName(), "status", "gadgetName"), "set status")
		framework.Must(t, unstructured.SetNestedField(local.Object, "Ready", "status", "phase"), "set status")
		framework.Must(t, svc.Status().Update(ctx, &local), "update the status of uses-blue's copy")
	}
	for _, w := range []*framework.Workspace{a, b} {
		want := map[*framework.Workspace]string{a: "blue", b: ""}[w]
		framework.WaitFor(t, syncTimeout, "the status of uses-blue in "+w.ClusterName, func(ctx context.Context) (bool, error) {
			thing := newObject(kcpThing, "default", "uses-blue", nil)
			if err := w.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(thing), thing); err != nil {
				return false, err
			}
			phase, _, _ := unstructured.NestedString(thing.Object, "status", "phase")
			name, found, _ := unstructured.NestedString(thing.Object, "status", "gadgetName")
			if phase == "Ready" && name != want {
				t.Fatalf("status.gadgetName of uses-blue in %s = %q (found %v), want %q", w.ClusterName, name, found, want)
			}
			return phase == "Ready", nil
		})
	}
	agent.NoErrors(t)
}

// waitCopyOf waits for the local copy (of gvk) of the kcp object
// default/name of workspace w.
func waitCopyOf(t *testing.T, c ctrlruntimeclient.Client, gvk schema.GroupVersionKind, w *framework.Workspace, name string) unstructured.Unstructured {
	t.Helper()
	var found unstructured.Unstructured
	framework.WaitFor(t, syncTimeout, "the local copy of "+name, func(ctx context.Context) (bool, error) {
		items, err := localCopiesOf(ctx, c, gvk, w.ClusterName)
		if err != nil {
			return false, err
		}
		for _, item := range items {
			if item.GetAnnotations()["syncagent.kcp.io/remote-object-name"] == name {
				found = item
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// waitRefName waits until the local copy of the Thing default/name of w
// has spec.gadgetRef.name want.
func waitRefName(t *testing.T, c ctrlruntimeclient.Client, w *framework.Workspace, name, want string, timeout time.Duration) {
	t.Helper()
	framework.WaitFor(t, timeout, "spec.gadgetRef.name "+want+" on the copy of "+name, func(ctx context.Context) (bool, error) {
		local := waitCopyOf(t, c, localThing, w, name)
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(localThing)
		if err := c.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}, cur); err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedString(cur.Object, "spec", "gadgetRef", "name")
		return got == want, nil
	})
}
