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
	"net/http"
	"strings"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestWithdrawnResourceKeepsState: an administrator withdraws the published
// resource from the export while a consumer's object lives (the virtual
// workspace then answers 404 for the whole resource in a workspace that is
// still bound) and the agent starts meanwhile. The state sweep must not
// take the missing resource for a missing object: the state Secret stays,
// and once the resource is back a change in kcp is merged onto the copy
// without losing a field the service set (without its state the agent
// would have no merge base and overwrite the whole spec). A 404 of the
// whole resource that reaches the sweep's live read (a stale mapping) is
// TestSweepReadsLive's.
func TestWithdrawnResourceKeepsState(t *testing.T) {
	t.Parallel()
	sweep := "--state-sweep-interval=2s"
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1, sweep)
	consumer := ws[0]
	ctx := t.Context()
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "x", map[string]any{"color": "blue"})), "create Thing")
	local := waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)
	framework.Must(t, f.Service.Client.Patch(ctx, &local, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"v1":"service"}}`))),
		"set a field on the copy in the service cluster")
	if n := stateCount(t, f); n != 1 {
		t.Fatalf("state Secrets: %d, want 1", n)
	}

	// Withdrawn while the agent is down, so that it starts with nothing of
	// the resource in its caches; the agent must not put it back.
	agent.Stop(30 * time.Second)
	framework.Must(t, f.Org.Client.Patch(ctx, f.Export.DeepCopy(), ctrlruntimeclient.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/resources"}]`))),
		"withdraw the resource from the export")
	agent = framework.StartAgent(t, f.AgentArgs(sweep, "--disabled-controllers=apiexport")...)

	// The precondition: the virtual workspace no longer serves the
	// resource in the still-bound workspace.
	vw := virtualWorkspaceURL(t, f) + "/clusters/" + consumer.ClusterName + "/apis/kcp.example.com/v1/namespaces/default/things/x"
	framework.WaitFor(t, syncTimeout, "the virtual workspace to answer 404 for the resource", func(ctx context.Context) (bool, error) {
		return vwStatus(ctx, t, f, vw) == http.StatusNotFound, nil
	})
	sweeps := strings.Count(agent.Logs(), "State sweep done")
	framework.WaitFor(t, syncTimeout, "three state sweeps while the resource is withdrawn", func(context.Context) (bool, error) {
		return strings.Count(agent.Logs(), "State sweep done") >= sweeps+3, nil
	})
	if n := stateCount(t, f); n != 1 {
		t.Fatalf("state Secrets after the resource was withdrawn: %d, want the living object's one kept", n)
	}

	agent.Stop(30 * time.Second)
	agent = framework.StartAgent(t, f.AgentArgs(sweep)...)
	framework.WaitFor(t, syncTimeout, "the virtual workspace to serve the resource again", func(ctx context.Context) (bool, error) {
		return vwStatus(ctx, t, f, vw) == http.StatusOK, nil
	})
	thing := newObject(kcpThing, "default", "x", nil)
	framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "x"}, thing), "get Thing")
	framework.Must(t, consumer.Client.Patch(ctx, thing, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"green"}}`))), "change the Thing in kcp")
	framework.WaitFor(t, syncTimeout, "the change on the copy", func(ctx context.Context) (bool, error) {
		copies, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		if err != nil || len(copies) != 1 {
			return false, err
		}
		color, _, _ := unstructured.NestedString(copies[0].Object, "spec", "color")
		return color == "green", nil
	})
	copies, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
	framework.Must(t, err, "list copies")
	if v, _, _ := unstructured.NestedString(copies[0].Object, "spec", "v1"); v != "service" {
		t.Errorf("the service's spec.v1 on the copy = %q, want %q kept by the merge", v, "service")
	}
	agent.NoErrors(t)
}

func stateCount(t *testing.T, f *framework.Fixture) int {
	t.Helper()
	secrets, err := stateSecrets(t.Context(), f.Service.Client)
	framework.Must(t, err, "list state Secrets")
	return len(secrets)
}

// virtualWorkspaceURL is the export's only endpoint.
func virtualWorkspaceURL(t *testing.T, f *framework.Fixture) string {
	t.Helper()
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{}
	framework.WaitFor(t, syncTimeout, "an endpoint in the endpoint slice", func(ctx context.Context) (bool, error) {
		if err := f.Org.Client.Get(ctx, types.NamespacedName{Name: f.Export.Name}, slice); err != nil {
			return false, err
		}
		return len(slice.Status.APIExportEndpoints) == 1, nil
	})
	return slice.Status.APIExportEndpoints[0].URL
}

// vwStatus is the HTTP status of a GET of url as the agent's user.
func vwStatus(ctx context.Context, t *testing.T, f *framework.Fixture, url string) int {
	t.Helper()
	cfg := f.Kcp.AgentConfig("")
	transport, err := rest.TransportFor(cfg)
	framework.Must(t, err, "transport")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	framework.Must(t, err, "request")
	resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
