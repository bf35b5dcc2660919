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

package syncmanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/claims"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// claimsBinding is a binding of workspace ws that accepts the export's
// secrets claim with verbs, or rejects it.
func claimsBinding(ws string, verbs []any, accepted bool) runtime.Object {
	state := "Accepted"
	if !accepted {
		state = "Rejected"
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"permissionClaims": []any{
			map[string]any{"group": "", "resource": "secrets", "verbs": verbs, "selector": map[string]any{"matchAll": true}, "state": state},
		}},
		"status": map[string]any{
			"exportPermissionClaims": []any{map[string]any{"group": "", "resource": "secrets", "verbs": []any{"get", "list", "watch", "create", "update"}}},
			"conditions":             []any{map[string]any{"type": "PermissionClaimsValid", "status": "True"}},
		},
	}}
	u.SetGroupVersionKind(apiBindingsV1alpha2.GroupVersion().WithKind("APIBinding"))
	u.SetName("export-in-" + ws) // the fake server keys by name alone
	u.SetAnnotations(map[string]string{"kcp.io/cluster": ws})
	return u
}

// TestClaimsReport: a check counts the bindings by state, records a Warning
// on the PublishedResources whose related objects use the affected type
// (only there), once per finding, again when the finding changes, and a
// check that cannot list an endpoint changes nothing.
func TestClaimsReport(t *testing.T) {
	all := []any{"get", "list", "watch", "create", "update"}
	withSecrets := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "with-secrets"}, Spec: syncagentv1alpha1.PublishedResourceSpec{
		Related: []syncagentv1alpha1.RelatedResourceSpec{{Identifier: "creds", Origin: syncagentv1alpha1.RelatedResourceOriginService, Kind: syncagentv1alpha1.RelatedResourceKindSecret}}}}
	withConfigMaps := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "with-configmaps"}, Spec: syncagentv1alpha1.PublishedResourceSpec{
		Related: []syncagentv1alpha1.RelatedResourceSpec{{Identifier: "cfg", Origin: syncagentv1alpha1.RelatedResourceOriginService, Kind: syncagentv1alpha1.RelatedResourceKindConfigMap}}}}
	plain := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	s := runtime.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	service := fake.NewClientBuilder().WithScheme(s).WithObjects(withSecrets, withConfigMaps, plain).Build()

	var bindings []runtime.Object
	down := false
	clients := func(string, string) (dynamic.Interface, error) {
		if down {
			return nil, errors.New("connection refused")
		}
		return fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{apiBindingsV1alpha2: "APIBindingList"}, bindings...), nil
	}
	f := newFleet(logr.Discard(), nil, nil, 0)
	f.providers["https://shard-a"] = &endpoint{}
	for _, name := range []string{"with-configmaps", "plain"} {
		f.controllers[name] = &running{}
	}
	recorder := record.NewFakeRecorder(100)
	report := &claimsReport{fleet: f, clients: clients, client: service, events: recorder, log: logr.Discard()}
	defer metrics.APIBindingClaims.Reset()

	many := []runtime.Object{claimsBinding("ws-a", all, true)}
	for _, ws := range []string{"ws-c", "ws-d", "ws-e", "ws-f", "ws-g"} {
		many = append(many, claimsBinding(ws, all, false))
	}
	for _, step := range []struct {
		name     string
		bindings []runtime.Object
		start    string // a PublishedResource whose controller starts before the check
		down     bool
		complete bool
		events   []string
		gauge    map[string]float64
	}{
		{name: "all granted", bindings: []runtime.Object{claimsBinding("ws-a", all, true)}, complete: true,
			gauge: map[string]float64{"valid": 1, "mismatch": 0}},
		{name: "ws-b accepts fewer verbs, but nothing running needs Secrets: no Warning",
			bindings: []runtime.Object{claimsBinding("ws-a", all, true), claimsBinding("ws-b", []any{"get"}, true)}, complete: true,
			gauge: map[string]float64{"valid": 1, "mismatch": 1}},
		{name: "the PublishedResource using Secrets starts: told, only it",
			bindings: []runtime.Object{claimsBinding("ws-a", all, true), claimsBinding("ws-b", []any{"get"}, true)}, start: "with-secrets", complete: true,
			events: []string{"Warning PermissionClaimsMismatch workspace ws-b, APIBinding export-in-ws-b: secrets: verbs [get] accepted"},
			gauge:  map[string]float64{"valid": 1, "mismatch": 1}},
		{name: "the same again: no Event", bindings: []runtime.Object{claimsBinding("ws-a", all, true), claimsBinding("ws-b", []any{"get"}, true)},
			complete: true, gauge: map[string]float64{"valid": 1, "mismatch": 1}},
		{name: "an endpoint cannot be listed: nothing changes", down: true, gauge: map[string]float64{"valid": 1, "mismatch": 1}},
		{name: "ws-b rejects the claim: a new Warning", bindings: []runtime.Object{claimsBinding("ws-a", all, true), claimsBinding("ws-b", all, false)},
			complete: true, events: []string{"Warning PermissionClaimsNotAccepted workspace ws-b, APIBinding export-in-ws-b: secrets: rejected"},
			gauge: map[string]float64{"valid": 1, "mismatch": 0, "not-accepted": 1}},
		{name: "ws-b grants it again", bindings: []runtime.Object{claimsBinding("ws-a", all, true), claimsBinding("ws-b", all, true)}, complete: true,
			gauge: map[string]float64{"valid": 2, "not-accepted": 0}},
		{name: "rejected again: told again", bindings: []runtime.Object{claimsBinding("ws-b", all, false)}, complete: true,
			events: []string{"Warning PermissionClaimsNotAccepted workspace ws-b"},
			gauge:  map[string]float64{"valid": 0, "not-accepted": 1}},
		{name: "five workspaces reject it at once: three Warnings and one that counts the rest", bindings: many, complete: true,
			events: []string{"Warning PermissionClaimsNotAccepted workspace ws-c", "Warning PermissionClaimsNotAccepted workspace ws-d",
				"Warning PermissionClaimsNotAccepted workspace ws-e", "Warning PermissionClaimsNotAccepted 2 more workspaces"},
			gauge: map[string]float64{"valid": 1, "not-accepted": 5}},
	} {
		bindings, down = step.bindings, step.down
		if step.start != "" {
			f.controllers[step.start] = &running{}
		}
		if err := report.check(context.Background()); (err == nil) != step.complete {
			t.Errorf("%s: check error %v, want complete = %v", step.name, err, step.complete)
		}
		var got []string
		for len(recorder.Events) > 0 {
			got = append(got, <-recorder.Events)
		}
		if len(got) != len(step.events) {
			t.Errorf("%s: Events %q, want %d", step.name, got, len(step.events))
		}
		for i := range min(len(got), len(step.events)) {
			if !strings.HasPrefix(got[i], step.events[i]) {
				t.Errorf("%s: Event %q, want it to start with %q", step.name, got[i], step.events[i])
			}
		}
		for state, want := range step.gauge {
			if v := testutil.ToFloat64(metrics.APIBindingClaims.WithLabelValues(state)); v != want {
				t.Errorf("%s: sync_agent_apibindings{claims=%q} = %v, want %v", step.name, state, v, want)
			}
		}
	}
}

// TestNeedsAny: a PublishedResource needs the claims of its related types
// (with their identity) and the agent's own claims.
func TestNeedsAny(t *testing.T) {
	pr := &syncagentv1alpha1.PublishedResource{Spec: syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{
		{Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Kind: syncagentv1alpha1.RelatedResourceKindConfigMap}}}}
	for _, tc := range []struct {
		affected []claims.Claim
		want     bool
	}{
		{affected: []claims.Claim{{Resource: "configmaps"}}, want: true},
		{affected: []claims.Claim{{Resource: "namespaces"}}, want: true},
		{affected: []claims.Claim{{Resource: "events"}}, want: true},
		{affected: []claims.Claim{{Resource: "secrets"}}, want: false},
		{affected: []claims.Claim{{Resource: "configmaps", IdentityHash: "another-export"}}, want: false},
		{affected: nil, want: false},
	} {
		if got := newNeeding(pr).needsAny(tc.affected); got != tc.want {
			t.Errorf("needsAny(%v) = %v, want %v", tc.affected, got, tc.want)
		}
	}
	if newNeeding(&syncagentv1alpha1.PublishedResource{}).needsAny([]claims.Claim{{Resource: "secrets"}, {Resource: "namespaces"}}) {
		t.Error("a PublishedResource without related objects needs the secrets or namespaces claim")
	}
}
