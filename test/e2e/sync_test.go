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
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// syncTimeout bounds how long one sync step may take.
const syncTimeout = time.Minute

var (
	kcpThing   = schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	localThing = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
)

func newObject(gvk schema.GroupVersionKind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// localCopies lists the local Things copied from one workspace.
func localCopies(ctx context.Context, c ctrlruntimeclient.Client, cluster string) ([]unstructured.Unstructured, error) {
	return localCopiesOf(ctx, c, localThing, cluster)
}

// localCopiesOf lists the local objects of gvk copied from one workspace.
func localCopiesOf(ctx context.Context, c ctrlruntimeclient.Client, gvk schema.GroupVersionKind, cluster string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := c.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-cluster": cluster})
	return list.Items, err
}

// syncSetup installs the CRDs and PublishedResources, starts the agent
// (with extra flags), waits until every PublishedResource is exported, binds
// n consumer workspaces and waits until every enabled PublishedResource syncs.
func syncSetup(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition, prs []*syncagentv1alpha1.PublishedResource, n int, agentFlags ...string) (*framework.Fixture, []*framework.Workspace, *framework.Agent) {
	t.Helper()
	f := framework.NewFixture(t, testKcp)
	for _, crd := range crds {
		f.Service.InstallCRD(t, crd)
	}
	for _, pr := range prs {
		framework.Must(t, f.Service.Client.Create(t.Context(), pr), "create PublishedResource %s", pr.Name)
	}
	agent := framework.StartAgent(t, f.AgentArgs(agentFlags...)...)
	for _, pr := range prs {
		f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)
	}

	exp, err := getExport(t.Context(), f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	var consumers []*framework.Workspace
	for range n {
		consumers = append(consumers, f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims))
	}
	for _, pr := range prs {
		if pr.Spec.Synchronization == nil || pr.Spec.Synchronization.Enabled {
			f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, "SyncReady",
				framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
		}
	}
	return f, consumers, agent
}

// thingsPR publishes example.com Things as kcp.example.com Things.
func thingsPR(mutate ...func(*syncagentv1alpha1.PublishedResourceSpec)) *syncagentv1alpha1.PublishedResource {
	return publishedResource("things", "example.com", "Thing", append([]func(*syncagentv1alpha1.PublishedResourceSpec){func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	}}, mutate...)...)
}

// TestSyncRoundTrip: an object created in kcp appears in the service
// cluster, its status flows back, and deleting it in kcp removes the local
// copy before the finalizer is released. A healthy run logs no ERROR line.
func TestSyncRoundTrip(t *testing.T) {
	t.Parallel()
	f, consumers, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	consumer := consumers[0]
	ctx := t.Context()

	thing := newObject(kcpThing, "default", "my-thing", map[string]any{"color": "blue"})
	framework.Must(t, consumer.Client.Create(ctx, thing), "create Thing in kcp")

	local := waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)
	if local.GetNamespace() != consumer.ClusterName {
		t.Errorf("local copy in namespace %q, want the cluster name %q", local.GetNamespace(), consumer.ClusterName)
	}
	if color, _, _ := unstructured.NestedString(local.Object, "spec", "color"); color != "blue" {
		t.Errorf("local spec.color = %q, want blue", color)
	}
	framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "my-thing"}, thing), "get Thing")
	if !slices.Equal(thing.GetFinalizers(), []string{agentFinalizer(f)}) {
		t.Errorf("kcp object's finalizers %v, want the agent's own %s only", thing.GetFinalizers(), agentFinalizer(f))
	}

	// Status set on the service side appears in kcp.
	reportStatus(t, f.Service.Client, &local, consumer, thing)

	// A spec change in kcp reaches the copy.
	framework.Must(t, unstructured.SetNestedField(thing.Object, "red", "spec", "color"), "set color")
	framework.Must(t, consumer.Client.Update(ctx, thing), "update Thing")
	framework.WaitFor(t, syncTimeout, "the spec change locally", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		if err != nil || len(items) != 1 {
			return false, err
		}
		color, _, _ := unstructured.NestedString(items[0].Object, "spec", "color")
		return color == "red", nil
	})
	framework.WaitFor(t, syncTimeout, "ObjectSynced on the kcp object", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, consumer, "default", "my-thing")["ObjectSynced"], nil
	})

	// Deleting in kcp removes the copy, then the object.
	framework.Must(t, consumer.Client.Delete(ctx, thing), "delete Thing")
	framework.WaitFor(t, syncTimeout, "the kcp object and its copy to be gone", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		if err != nil || len(items) != 0 {
			return false, err
		}
		err = consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "my-thing"}, thing)
		return ctrlruntimeclient.IgnoreNotFound(err) == nil && err != nil, nil
	})
	agent.NoErrors(t)

	// What the metrics say of the round trip (docs/metrics.md).
	body := scrape(t, agent)
	if !strings.Contains(body, `sync_agent_objects_synced{published_resource="things"}`) {
		t.Fatalf("the agent's metrics lack the things PublishedResource's gauges:\n%s", body)
	}
	pr := `published_resource="things"`
	for _, tc := range []struct {
		what     string
		got      float64
		min, max float64
	}{
		{"local copies created", sumSamples(body, "sync_agent_sync_operations_total", pr, `operation="create"`, `result="success"`), 1, 1},
		{"local copies updated", sumSamples(body, "sync_agent_sync_operations_total", pr, `operation="update"`, `result="success"`), 1, 100},
		{"statuses written to kcp", sumSamples(body, "sync_agent_sync_operations_total", pr, `operation="status"`, `result="success"`), 1, 100},
		{"local copies deleted", sumSamples(body, "sync_agent_sync_operations_total", pr, `operation="delete"`, `result="success"`), 1, 1},
		{"finalizer writes in kcp", sumSamples(body, "sync_agent_sync_operations_total", pr, `operation="metadata"`, `result="success"`), 2, 100},
		{"state writes", sumSamples(body, "sync_agent_sync_operations_total", pr, `operation="state"`, `result="success"`), 2, 100},
		{"failed writes", sumSamples(body, "sync_agent_sync_operations_total", pr, `result="error"`), 0, 0},
		{"failed passes", sumSamples(body, "sync_agent_sync_errors_total", pr), 0, 0},
		{"timed passes down", sumSamples(body, "sync_agent_sync_latency_seconds_count", pr, `direction="down"`), 1, 100},
		{"local copies now", sumSamples(body, "sync_agent_objects_synced", pr), 0, 0},
		{"workspaces engaged", sumSamples(body, "sync_agent_workspaces_engaged"), 1, 1},
		{"running controllers", sumSamples(body, "sync_agent_sync_controllers_by_state", `state="running"`), 1, 1},
		{"build info", sumSamples(body, "sync_agent_build_info"), 1, 1},
		{"Ready, with the condition's reason", sumSamples(body, "sync_agent_published_resource_ready", pr, `reason="Ready"`), 1, 1},
	} {
		if tc.got < tc.min || tc.got > tc.max {
			t.Errorf("metrics: %s = %v, want %v to %v", tc.what, tc.got, tc.min, tc.max)
		}
	}

	// A deleted PublishedResource takes its series with it: no dashboard
	// or alert goes on showing it.
	framework.Must(t, f.Service.Client.Delete(ctx, thingsPR()), "delete PublishedResource things")
	framework.WaitFor(t, syncTimeout, "the series of the deleted PublishedResource to go", func(context.Context) (bool, error) {
		body := scrape(t, agent)
		return strings.Contains(body, "sync_agent_build_info") && !strings.Contains(body, pr), nil
	})
	agent.NoErrors(t)
}

// TestDemoScenario: what `make demo` sets up (the consumer bound before the
// agent starts, the demo's CRD, PublishedResource and Thing) syncs, and the
// agent logs no ERROR line, the first thing a new user reads.
func TestDemoScenario(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, framework.DefaultClaims())
	f.Service.CreateFromFile(t, "../../hack/demo/crd.yaml", &apiextensionsv1.CustomResourceDefinition{})
	f.Service.CreateFromFile(t, "../../hack/demo/publishedresource.yaml", &syncagentv1alpha1.PublishedResource{})
	agent := framework.StartAgent(t, f.AgentArgs("--log-format=Console")...)
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))

	raw, err := os.ReadFile("../../hack/demo/thing.yaml")
	framework.Must(t, err, "read thing.yaml")
	thing := &unstructured.Unstructured{}
	framework.Must(t, yaml.Unmarshal(raw, &thing.Object), "parse thing.yaml")
	// The consumer bound the export before it had the schema: kubectl
	// would find the new type on its next discovery; so does this client.
	framework.WaitFor(t, syncTimeout, "the demo Thing to be created in kcp", func(ctx context.Context) (bool, error) {
		err := consumer.Client.Create(ctx, thing.DeepCopy())
		return err == nil, ctrlruntimeclient.IgnoreNotFound(ignoreNoMatch(err))
	})
	framework.WaitFor(t, syncTimeout, "the demo Thing's local copy", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "demo.example.com", Version: "v1", Kind: "ThingList"})
		err := f.Service.Client.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-cluster": consumer.ClusterName})
		return err == nil && len(list.Items) == 1, err
	})
	agent.NoErrors(t)
}

// waitOnlyCopy waits until the objects of one workspace have exactly one
// local copy and returns it.
func waitOnlyCopy(t *testing.T, c ctrlruntimeclient.Client, cluster string) unstructured.Unstructured {
	t.Helper()
	var local unstructured.Unstructured
	framework.WaitFor(t, syncTimeout, "the local copy", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, c, cluster)
		if err != nil || len(items) != 1 {
			return false, err
		}
		local = items[0]
		return true, nil
	})
	return local
}

// reportStatus sets status.phase Ready on the local copy, as the service
// would, and waits until the kcp object (updated in place) shows it.
func reportStatus(t *testing.T, svc ctrlruntimeclient.Client, local *unstructured.Unstructured, ws *framework.Workspace, remote *unstructured.Unstructured) {
	t.Helper()
	framework.Must(t, unstructured.SetNestedField(local.Object, "Ready", "status", "phase"), "set status")
	framework.Must(t, svc.Status().Update(t.Context(), local), "update local status")
	framework.WaitFor(t, syncTimeout, "the status in kcp", func(ctx context.Context) (bool, error) {
		if err := ws.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(remote), remote); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(remote.Object, "status", "phase")
		return phase == "Ready", nil
	})
}

func controllerutilContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ignoreNoMatch drops the error of a client whose discovery does not know
// the type yet.
func ignoreNoMatch(err error) error {
	if apimeta.IsNoMatchError(err) {
		return nil
	}
	return err
}

// TestLabelRemovalConverges: a consumer removes the only label of their
// object (kubectl label thing x team-), then the only annotation; each
// removal reaches the local copy, an operator's label on the copy
// survives, and the object keeps syncing (a spec change still arrives).
func TestLabelRemovalConverges(t *testing.T) {
	t.Parallel()
	f, consumers, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	consumer, svc := consumers[0], f.Service.Client
	ctx := t.Context()
	thing := newObject(kcpThing, "default", "labelled", map[string]any{"color": "blue"})
	thing.SetLabels(map[string]string{"team": "a"})
	thing.SetAnnotations(map[string]string{"note": "n"})
	framework.Must(t, consumer.Client.Create(ctx, thing), "create Thing")
	local := waitOnlyCopy(t, svc, consumer.ClusterName)
	local.SetLabels(withEntries(local.GetLabels(), map[string]string{"operator": "yes"}))
	framework.Must(t, svc.Update(ctx, &local), "label the local copy as an operator would")

	waitLocal := func(what string, ok func(l *unstructured.Unstructured) bool) {
		t.Helper()
		framework.WaitFor(t, syncTimeout, what, func(ctx context.Context) (bool, error) {
			items, err := localCopies(ctx, svc, consumer.ClusterName)
			return err == nil && len(items) == 1 && ok(&items[0]), err
		})
	}
	update := func(mutate func(*unstructured.Unstructured)) {
		t.Helper()
		framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "labelled"}, thing), "get Thing")
		mutate(thing)
		framework.Must(t, consumer.Client.Update(ctx, thing), "update Thing")
	}
	update(func(o *unstructured.Unstructured) { o.SetLabels(nil) })
	waitLocal("the label removed locally, the operator's kept", func(l *unstructured.Unstructured) bool {
		return l.GetLabels()["team"] == "" && l.GetLabels()["operator"] == "yes"
	})
	update(func(o *unstructured.Unstructured) { o.SetAnnotations(nil) })
	waitLocal("the annotation removed locally", func(l *unstructured.Unstructured) bool {
		return l.GetAnnotations()["note"] == "" && l.GetLabels()["operator"] == "yes"
	})
	update(func(o *unstructured.Unstructured) {
		framework.Must(t, unstructured.SetNestedField(o.Object, "red", "spec", "color"), "set color")
	})
	waitLocal("a later spec change locally", func(l *unstructured.Unstructured) bool {
		color, _, _ := unstructured.NestedString(l.Object, "spec", "color")
		return color == "red"
	})
	agent.NoErrors(t)
}

// withEntries returns a copy of m with add's entries.
func withEntries(m, add map[string]string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, add)
	return out
}
