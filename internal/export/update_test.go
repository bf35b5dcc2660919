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

package export

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// storedExport is an APIExport as a kcp 0.32 stores it after an
// administrator added a virtual resource and a claim with a defaultSelector:
// both are fields kcp 0.28's types do not have.
const storedExport = `{
  "apiVersion": "apis.kcp.io/v1alpha2",
  "kind": "APIExport",
  "metadata": {"name": "example.io", "resourceVersion": "42",
    "annotations": {"syncagent.kcp.io/agent-name": "agent", "admin": "note",
      "apis.v1alpha2.kcp.io/v1alpha1-permission-claims": "[{\"resource\":\"events\",\"all\":true}]"}},
  "spec": {
    "identity": {"secretRef": {"name": "example.io", "namespace": "kcp-system"}},
    "resources": [
      {"group": "admin.io", "name": "widgets", "schema": "v1.widgets.admin.io",
       "storage": {"virtual": {"identityHash": "abc", "reference": {"apiGroup": "x.io", "kind": "Slice", "name": "s"}}}}
    ],
    "permissionClaims": [
      {"group": "", "resource": "configmaps", "verbs": ["get", "list"], "identityHash": "",
       "defaultSelector": {"matchLabels": {"team": "a"}}},
      {"group": "", "resource": "events", "verbs": ["*"], "identityHash": ""}
    ],
    "futureField": {"kept": true}
  }
}`

func decode(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// apply applies an update's patch to the stored object, as the API server does.
func apply(t *testing.T, current *unstructured.Unstructured, u Update) map[string]any {
	t.Helper()
	orig, err := json.Marshal(current.Object)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := jsonpatch.MergePatch(orig, u.Patch)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(patched, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readyPR(schemaName string) syncagentv1alpha1.PublishedResource {
	pr := syncagentv1alpha1.PublishedResource{}
	pr.Status.ResourceSchemaName = schemaName
	return pr
}

func TestComputeUpdateKeepsFieldsOfANewerKcp(t *testing.T) {
	current := decode(t, storedExport)
	u, err := ComputeUpdate(current, []syncagentv1alpha1.PublishedResource{readyPR("v9.things.example.io")}, Publisher{AgentName: "agent", Lease: "syncagent.agent"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Patch == nil {
		t.Fatal("no patch, want the new schema added")
	}
	if diff := cmp.Diff([]string{"v9.things.example.io"}, u.Added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	got := apply(t, current, u)
	want := decode(t, storedExport).Object
	spec := want["spec"].(map[string]any)
	// Sorted by resource.group: things.example.io before widgets.admin.io.
	spec["resources"] = []any{
		map[string]any{"group": "example.io", "name": "things", "schema": "v9.things.example.io", "storage": map[string]any{"crd": map[string]any{}}},
		spec["resources"].([]any)[0],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored export after the patch (-want +got):\n%s", diff)
	}

	var patch map[string]any
	if err := json.Unmarshal(u.Patch, &patch); err != nil {
		t.Fatal(err)
	}
	if rv := patch["metadata"].(map[string]any)["resourceVersion"]; rv != "42" {
		t.Errorf("patch's resourceVersion = %v, want 42 (the update must conflict when the export changed)", rv)
	}
	if _, ok := patch["spec"].(map[string]any)["permissionClaims"]; ok {
		t.Errorf("patch writes spec.permissionClaims, which did not change: %s", u.Patch)
	}
}

func TestComputeUpdateWritesOnlyWhatChanges(t *testing.T) {
	current := decode(t, storedExport)
	u, err := ComputeUpdate(current, nil, Publisher{AgentName: "agent", Lease: "syncagent.agent"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Patch != nil {
		t.Errorf("patch %s for an export that has all it needs", u.Patch)
	}

	// The same claims in another order are not rewritten.
	claims, _, _ := unstructured.NestedSlice(current.Object, "spec", "permissionClaims")
	reordered := decode(t, storedExport)
	if err := unstructured.SetNestedSlice(reordered.Object, []any{claims[1], claims[0]}, "spec", "permissionClaims"); err != nil {
		t.Fatal(err)
	}
	if u, err = ComputeUpdate(reordered, nil, Publisher{AgentName: "agent", Lease: "syncagent.agent"}); err != nil || u.Patch != nil {
		t.Errorf("patch %s (error %v) for an export whose claims are only in another order", u.Patch, err)
	}

	// Another agent that publishes into the same export leaves the
	// annotation to the first (two agents setting it in turn would wake
	// each other without end); an export without it gets it.
	if u, err = ComputeUpdate(current, nil, Publisher{AgentName: "other-agent", Lease: "syncagent.other-agent"}); err != nil || u.Patch != nil {
		t.Errorf("patch %s (error %v) by a second agent of the export", u.Patch, err)
	}
	unnamed := current.DeepCopy()
	unstructured.RemoveNestedField(unnamed.Object, "metadata", "annotations", keys.AgentName)
	u, err = ComputeUpdate(unnamed, nil, Publisher{AgentName: "other-agent", Lease: "syncagent.other-agent"})
	if err != nil {
		t.Fatal(err)
	}
	var patch map[string]any
	if err := json.Unmarshal(u.Patch, &patch); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metadata": map[string]any{"resourceVersion": "42", "annotations": map[string]any{keys.AgentName: "other-agent"}}}
	if diff := cmp.Diff(want, patch); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}

func TestComputeUpdateAddsClaimsBesideAnAdministratorsSelector(t *testing.T) {
	current := decode(t, storedExport)
	pr := readyPR("v9.things.example.io")
	pr.Spec.Related = []syncagentv1alpha1.RelatedResourceSpec{{Kind: "Secret", Origin: "kcp"}}
	u, err := ComputeUpdate(current, []syncagentv1alpha1.PublishedResource{pr}, Publisher{AgentName: "agent", Lease: "syncagent.agent"})
	if err != nil {
		t.Fatal(err)
	}
	got := apply(t, current, u)
	claims, _, _ := unstructured.NestedSlice(got, "spec", "permissionClaims")
	var names []string
	for _, c := range claims {
		names = append(names, c.(map[string]any)["resource"].(string))
	}
	if diff := cmp.Diff([]string{"configmaps", "events", "namespaces", "secrets"}, names); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if sel, _, _ := unstructured.NestedMap(claims[0].(map[string]any), "defaultSelector"); sel == nil {
		t.Errorf("the administrator's defaultSelector is gone: %v", claims[0])
	}
	if diff := cmp.Diff([]Claim{{Resource: "namespaces"}, {Resource: "secrets"}}, u.AddedClaims); diff != "" {
		t.Errorf("added claims (-want +got):\n%s", diff)
	}
}

// TestComputeUpdatePublisher: the agent of a partition records itself as
// its name's publisher in an export that records none, in the patch that
// carries the resourceVersion; an agent of the same name whose Lease the
// record does not name gets a NotPublisherError and no patch, whether it
// claims or not; the recorded one goes on without writing the record
// again; an agent of another name is not concerned by the record.
func TestComputeUpdatePublisher(t *testing.T) {
	current := decode(t, storedExport)
	eu := Publisher{AgentName: "agent", Lease: "syncagent.agent.eu", Claim: true}
	u, err := ComputeUpdate(current, nil, eu)
	if err != nil {
		t.Fatal(err)
	}
	var patch map[string]any
	if err := json.Unmarshal(u.Patch, &patch); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metadata": map[string]any{"resourceVersion": "42", "annotations": map[string]any{keys.PublisherOf("agent"): "syncagent.agent.eu"}}}
	if diff := cmp.Diff(want, patch); diff != "" {
		t.Errorf("claiming patch (-want +got):\n%s", diff)
	}

	claimed := decode(t, storedExport)
	annotations := claimed.GetAnnotations()
	annotations[keys.PublisherOf("agent")] = "syncagent.agent.eu"
	claimed.SetAnnotations(annotations)
	if u, err := ComputeUpdate(claimed, nil, eu); err != nil || u.Patch != nil {
		t.Errorf("the recorded publisher: patch %s, error %v; want neither", u.Patch, err)
	}
	for _, other := range []Publisher{
		{AgentName: "agent", Lease: "syncagent.agent.us", Claim: true},
		{AgentName: "agent", Lease: "syncagent.agent"},
	} {
		u, err := ComputeUpdate(claimed, []syncagentv1alpha1.PublishedResource{readyPR("v9.things.example.io")}, other)
		var np *NotPublisherError
		if !errors.As(err, &np) || np.Publisher != "syncagent.agent.eu" || u.Patch != nil {
			t.Errorf("%s: patch %s, error %v; want a NotPublisherError naming syncagent.agent.eu", other.Lease, u.Patch, err)
		}
	}
	if _, err := ComputeUpdate(claimed, nil, Publisher{AgentName: "other-agent", Lease: "syncagent.other-agent"}); err != nil {
		t.Errorf("an agent of another name: %v", err)
	}
}
