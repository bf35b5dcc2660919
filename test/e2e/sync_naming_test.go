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
	"crypto/sha3"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

func sha3short(s string) string {
	sum := sha3.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:20]
}

// waitLocal waits until the local object exists and returns it.
func waitLocal(t *testing.T, c ctrlruntimeclient.Client, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	framework.WaitFor(t, syncTimeout, "local object "+namespace+"/"+name, func(ctx context.Context) (bool, error) {
		return true, c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
	})
	return obj
}

// TestSyncNaming: objects with the same namespace/name in two workspaces get
// distinct local copies; cluster-scoped kcp objects work with the default
// naming; custom templates and legacy placeholders name copies as configured.
func TestSyncNaming(t *testing.T) {
	t.Parallel()
	global := framework.TestCRD("example.com", "Global", "v1")
	custom := framework.TestCRD("example.com", "Custom", "v1")
	legacy := framework.TestCRD("example.com", "Legacy", "v1")
	prs := []*syncagentv1alpha1.PublishedResource{
		thingsPR(),
		publishedResource("globals", "example.com", "Global", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com", Scope: syncagentv1alpha1.ClusterScoped}
		}),
		publishedResource("customs", "example.com", "Custom", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
			s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name }}-{{ .ClusterName }}", Namespace: "customs"}
		}),
		publishedResource("legacies", "example.com", "Legacy", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
			s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "$remoteNamespace-$remoteName", Namespace: "$remoteClusterName-legacy"}
		}),
	}
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1"), global, custom, legacy}, prs, 2)
	ctx := t.Context()
	svc := f.Service.Client

	for _, w := range ws {
		framework.Must(t, w.Client.Create(ctx, newObject(kcpThing, "default", "same", map[string]any{"color": w.ClusterName})), "create Thing")
	}
	for _, w := range ws {
		local := waitLocal(t, svc, localThing, w.ClusterName, sha3short("default")+"-"+sha3short("same"))
		if color, _, _ := unstructured.NestedString(local.Object, "spec", "color"); color != w.ClusterName {
			t.Errorf("copy for %s has color %q: objects of different workspaces share a copy", w.ClusterName, color)
		}
	}

	w := ws[0]
	framework.Must(t, w.Client.Create(ctx, newObject(schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Global"}, "", "g1", map[string]any{"color": "x"})), "create Global")
	waitLocal(t, svc, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Global"}, w.ClusterName, "a7ffc6f8bf1ed76651c1-"+sha3short("g1"))

	framework.Must(t, w.Client.Create(ctx, newObject(schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Custom"}, "default", "c1", map[string]any{"color": "x"})), "create Custom")
	waitLocal(t, svc, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Custom"}, "customs", "c1-"+w.ClusterName)

	framework.Must(t, w.Client.Create(ctx, newObject(schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Legacy"}, "default", "l1", map[string]any{"color": "x"})), "create Legacy")
	waitLocal(t, svc, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Legacy"}, w.ClusterName+"-legacy", "default-l1")
}

// TestSyncCollision: a naming rule that maps two kcp objects onto one local
// object does not let the second take it over: Warning ObjectConflict in the
// consumer's workspace, the conflicts metric counts it, the first object's
// copy is untouched. A deleted local copy is re-created. Deleting the
// PublishedResource releases both kcp objects, the one in conflict (never
// synced, no state) too.
func TestSyncCollision(t *testing.T) {
	t.Parallel()
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "fixed", Namespace: "shared"}
		})}, 2)
	ctx := t.Context()

	framework.Must(t, ws[0].Client.Create(ctx, newObject(kcpThing, "default", "first", map[string]any{"color": "first"})), "create first")
	local := waitLocal(t, f.Service.Client, localThing, "shared", "fixed")

	second := newObject(kcpThing, "default", "second", map[string]any{"color": "second"})
	framework.Must(t, ws[1].Client.Create(ctx, second), "create second")
	framework.WaitFor(t, syncTimeout, "ObjectConflict in the second workspace", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, ws[1], "default", "second")["ObjectConflict"], nil
	})
	framework.WaitFor(t, syncTimeout, "ReconcilingError on the PublishedResource", func(ctx context.Context) (bool, error) {
		return eventReasons(ctx, f, "things")["ReconcilingError"], nil
	})
	framework.WaitFor(t, syncTimeout, "the conflicts metric", func(ctx context.Context) (bool, error) {
		_, body, err := framework.Get(ctx, "http://"+agent.MetricsAddress+"/metrics")
		return strings.Contains(body, `sync_agent_object_conflicts_total{published_resource="things"}`), err
	})
	framework.Must(t, f.Service.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(local), local), "get local copy")
	if color, _, _ := unstructured.NestedString(local.Object, "spec", "color"); color != "first" || local.GetLabels()["syncagent.kcp.io/remote-object-cluster"] != ws[0].ClusterName {
		t.Errorf("the first object's copy was taken over: color %q, labels %v", color, local.GetLabels())
	}

	// Someone deletes the copy: it comes back for its kcp object.
	uid := local.GetUID()
	framework.Must(t, f.Service.Client.Delete(ctx, local), "delete local copy")
	framework.WaitFor(t, syncTimeout, "the copy to be re-created", func(ctx context.Context) (bool, error) {
		again := &unstructured.Unstructured{}
		again.SetGroupVersionKind(localThing)
		if err := f.Service.Client.Get(ctx, types.NamespacedName{Namespace: "shared", Name: "fixed"}, again); err != nil {
			return false, ctrlruntimeclient.IgnoreNotFound(err)
		}
		return again.GetUID() != uid, nil
	})

	// The PublishedResource goes: both objects are released, the one in
	// ObjectConflict too, which the agent accepted but never synced (no
	// state): a consumer can then delete it.
	framework.Must(t, ws[1].Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "second"}, second), "get second")
	if !slices.Contains(second.GetFinalizers(), agentFinalizer(f)) {
		t.Fatalf("the object in conflict lacks the agent's finalizer: %v", second.GetFinalizers())
	}
	pr := &syncagentv1alpha1.PublishedResource{}
	framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Name: "things"}, pr), "get the PublishedResource")
	framework.Must(t, f.Service.Client.Delete(ctx, pr), "delete the PublishedResource")
	waitGone(t, f.Service.Client, pr, "the PublishedResource")
	for i, name := range []string{"first", "second"} {
		obj := newObject(kcpThing, "default", name, nil)
		framework.Must(t, ws[i].Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, obj), "get %s", name)
		if len(obj.GetFinalizers()) != 0 {
			t.Errorf("%s kept the finalizers %v after its PublishedResource went", name, obj.GetFinalizers())
		}
	}
	framework.Must(t, ws[1].Client.Delete(ctx, second), "delete second")
	waitGone(t, ws[1].Client, second, "second")
}

// TestSyncEventLevelWarning: with --event-level=warning a consumer sees the
// agent's Warning Events on kcp objects and none of its Normal ones. The
// collision of TestSyncCollision gives the second object a Warning
// (ObjectConflict) after its Normal ObjectAccepted would have been
// recorded; one workspace's Events are written in order, so the Warning's
// arrival proves the Normal one was dropped, not late.
func TestSyncEventLevelWarning(t *testing.T) {
	t.Parallel()
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "fixed", Namespace: "shared"}
		})}, 2, "--event-level=warning")
	ctx := t.Context()

	framework.Must(t, ws[0].Client.Create(ctx, newObject(kcpThing, "default", "first", map[string]any{"color": "first"})), "create first")
	waitLocal(t, f.Service.Client, localThing, "shared", "fixed")
	framework.Must(t, ws[1].Client.Create(ctx, newObject(kcpThing, "default", "second", map[string]any{"color": "second"})), "create second")
	framework.WaitFor(t, syncTimeout, "ObjectConflict in the second workspace", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, ws[1], "default", "second")["ObjectConflict"], nil
	})
	for _, c := range []struct {
		ws   *framework.Workspace
		name string
	}{{ws[1], "second"}, {ws[0], "first"}} {
		reasons := namespacedEventReasons(ctx, c.ws, "default", c.name)
		for _, normal := range []string{"ObjectAccepted", "ObjectPlaced"} {
			if reasons[normal] {
				t.Errorf("Normal Event %s on %s with --event-level=warning (reasons: %v)", normal, c.name, reasons)
			}
		}
	}
}

// namespacedEventReasons returns the reasons of Events about an object in a
// kcp workspace.
func namespacedEventReasons(ctx context.Context, ws *framework.Workspace, namespace, name string) map[string]bool {
	var events corev1.EventList
	reasons := map[string]bool{}
	if err := ws.Client.List(ctx, &events, ctrlruntimeclient.InNamespace(namespace)); err != nil {
		return reasons
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name {
			reasons[e.Reason] = true
		}
	}
	return reasons
}

// namespacedEventMessages returns the messages of the Events with reason
// about the object namespace/name of a workspace.
func namespacedEventMessages(ctx context.Context, ws *framework.Workspace, namespace, name, reason string) []string {
	return eventMessages(ctx, ws.Client, namespace, name, reason)
}
