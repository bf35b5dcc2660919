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

	"github.com/google/go-cmp/cmp"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// getRawExport reads the APIExport unstructured: every field the server
// stores, also those kcp 0.28's types do not know.
func getRawExport(ctx context.Context, ws *framework.Workspace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kcpapisv1alpha2.SchemeGroupVersion.WithKind("APIExport"))
	return u, ws.Client.Get(ctx, types.NamespacedName{Name: name}, u)
}

// appendToExport adds entries to spec.<field> lists of the APIExport as an
// administrator would with kubectl edit: read, append, write (kcp's
// controllers may write the export meanwhile: retried).
func appendToExport(ctx context.Context, ws *framework.Workspace, name string, entries map[string]map[string]any) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		exp, err := getRawExport(ctx, ws, name)
		if err != nil {
			return err
		}
		for field, entry := range entries {
			list, _, _ := unstructured.NestedSlice(exp.Object, "spec", field)
			if err := unstructured.SetNestedSlice(exp.Object, append(list, entry), "spec", field); err != nil {
				return err
			}
		}
		return ws.Client.Update(ctx, exp)
	})
}

// rawEntry returns the entry of spec.<field> whose key fields match.
func rawEntry(u *unstructured.Unstructured, field string, match map[string]string) map[string]any {
	list, _, _ := unstructured.NestedSlice(u.Object, "spec", field)
	for _, e := range list {
		m, _ := e.(map[string]any)
		ok := true
		for k, v := range match {
			if m[k] != v {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// TestExportKeepsFieldsOfANewerKcp: on kcp 0.31 and newer an administrator
// adds a virtual resource (spec.resources[].storage.virtual, kcp ≥ 0.29)
// and a claim with a defaultSelector (kcp ≥ 0.31) to the APIExport; the
// agent then publishes a new PublishedResource. Its schema enters the
// export, and both administrator entries stay exactly as written (the agent
// of kcp 0.28's types wrote them back without those fields: kcp refused
// the virtual resource without its storage, so the schema never entered).
func TestExportKeepsFieldsOfANewerKcp(t *testing.T) {
	t.Parallel()
	framework.RequireKcpMinor(t, 31, "a permission claim's defaultSelector")
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	exp, err := getRawExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	identity, _, _ := unstructured.NestedString(exp.Object, "status", "identityHash")
	if identity == "" {
		t.Fatalf("the export has no identity hash yet: %v", exp.Object["status"])
	}
	virtual := map[string]any{
		"group": "virtual.example.com", "name": "widgets", "schema": "v1.widgets.virtual.example.com",
		"storage": map[string]any{"virtual": map[string]any{
			"reference":    map[string]any{"apiGroup": "apis.kcp.io", "kind": "APIExportEndpointSlice", "name": f.Export.Name},
			"identityHash": identity,
		}},
	}
	claim := map[string]any{
		"group": "", "resource": "configmaps", "verbs": []any{"get", "list"}, "identityHash": "",
		"defaultSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}},
	}
	framework.Must(t, appendToExport(ctx, f.Org, f.Export.Name, map[string]map[string]any{"resources": virtual, "permissionClaims": claim}),
		"add the administrator's entries to the export")

	// What the server stored is what the agent must keep.
	exp, err = getRawExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	wantVirtual := rawEntry(exp, "resources", map[string]string{"name": "widgets"})
	wantClaim := rawEntry(exp, "permissionClaims", map[string]string{"resource": "configmaps"})
	if v, _, _ := unstructured.NestedMap(wantVirtual, "storage", "virtual"); v == nil || wantClaim["defaultSelector"] == nil {
		t.Fatalf("kcp did not store the administrator's fields: %v, %v", wantVirtual, wantClaim)
	}

	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	pr := publishedResource("things", "example.com", "Thing", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	framework.Must(t, f.Service.Client.Create(ctx, pr), "create PublishedResource")
	framework.StartAgent(t, f.AgentArgs()...)

	pr = f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)
	exp, err = getRawExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	if rawEntry(exp, "resources", map[string]string{"schema": pr.Status.ResourceSchemaName}) == nil {
		t.Errorf("export resources lack the schema %s: %v", pr.Status.ResourceSchemaName, exp.Object["spec"])
	}
	if diff := cmp.Diff(wantVirtual, rawEntry(exp, "resources", map[string]string{"name": "widgets"})); diff != "" {
		t.Errorf("the administrator's virtual resource changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantClaim, rawEntry(exp, "permissionClaims", map[string]string{"resource": "configmaps"})); diff != "" {
		t.Errorf("the administrator's claim changed (-want +got):\n%s", diff)
	}
}
