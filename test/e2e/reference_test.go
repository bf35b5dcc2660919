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
	"strings"
	"testing"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// referenceArgs is the command line with which the reference's harnesses
// and manifests start the agent: values as separate arguments, the legacy
// --apiexport-ref alone, no --agent-name, a capitalised log format, leader
// election spelled out as off, and both listeners disabled with "0".
func referenceArgs(f *framework.Fixture) []string {
	return []string{
		"--kcp-kubeconfig", f.KcpKubeconfig,
		"--kubeconfig", f.Service.Kubeconfig,
		"--namespace", framework.AgentNamespace,
		"--apiexport-ref", f.Export.Name,
		"--log-format", "Console",
		"--enable-leader-election=false",
		"--health-address", "0",
		"--metrics-address", "0",
	}
}

// v1alpha1Claims reads the export's claims as a v1alpha1 client sees them.
func v1alpha1Claims(ctx context.Context, f *framework.Fixture) ([]kcpapisv1alpha1.PermissionClaim, error) {
	exp := &kcpapisv1alpha1.APIExport{}
	err := f.Org.Client.Get(ctx, types.NamespacedName{Name: f.Export.Name}, exp)
	return exp.Spec.PermissionClaims, err
}

// waitV1alpha1Claims waits until the export lists want (group/resource)
// through v1alpha1, then checks that every claim reads as an all-objects
// claim there and grants all verbs through v1alpha2, and returns the
// v1alpha1 claims.
func waitV1alpha1Claims(t *testing.T, f *framework.Fixture, want ...string) []kcpapisv1alpha1.PermissionClaim {
	t.Helper()
	var claims []kcpapisv1alpha1.PermissionClaim
	framework.WaitFor(t, schemaTimeout, "claims "+strings.Join(want, ", ")+" in the export", func(ctx context.Context) (bool, error) {
		var err error
		if claims, err = v1alpha1Claims(ctx, f); err != nil {
			return false, err
		}
		for _, w := range want {
			if !slices.ContainsFunc(claims, func(c kcpapisv1alpha1.PermissionClaim) bool {
				return schema.GroupResource{Group: c.Group, Resource: c.Resource}.String() == w
			}) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, c := range claims {
		if !c.All || len(c.ResourceSelector) > 0 {
			t.Errorf("v1alpha1 claim %+v is not {group, resource, all: true}", c)
		}
	}
	exp, err := getExport(t.Context(), f.Org, f.Export.Name)
	framework.Must(t, err, "get export through v1alpha2")
	for _, c := range exp.Spec.PermissionClaims {
		if !slices.Equal(c.Verbs, []string{"*"}) {
			t.Errorf("v1alpha2 claim %+v does not grant all verbs", c)
		}
	}
	return claims
}

// TestReferenceHarness starts an agent built from main exactly as the
// reference's harnesses start it and plays a reference-style scenario:
// an admin's claim written through v1alpha1, publish, claims read back
// through both API versions (fresh publish, then related resources added),
// a consumer that binds through v1alpha1 with the claims copied from the
// v1alpha1 export, sync, a related ConfigMap, status, delete.
func TestReferenceHarness(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	// The admin prepared the export through v1alpha1 with one claim of
	// their own (replacing the fixture's claims).
	exp := &kcpapisv1alpha1.APIExport{}
	framework.Must(t, f.Org.Client.Get(ctx, types.NamespacedName{Name: f.Export.Name}, exp), "get export through v1alpha1")
	exp.Spec.PermissionClaims = []kcpapisv1alpha1.PermissionClaim{{GroupResource: kcpapisv1alpha1.GroupResource{Resource: "secrets"}, All: true}}
	framework.Must(t, f.Org.Client.Update(ctx, exp), "write the admin's claim through v1alpha1")

	f.Service.InstallCRD(t, openThingCRD())
	pr := thingsPR()
	framework.Must(t, f.Service.Client.Create(ctx, pr), "create PublishedResource")

	agent := framework.StartAgent(t, referenceArgs(f)...)
	f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)
	if agent.Exited() {
		t.Fatalf("the agent exited (code %d); log:\n%s", agent.ExitCode(), agent.Logs())
	}
	// (a) a fresh publish: events is ours, secrets the admin's.
	waitV1alpha1Claims(t, f, "events", "secrets")

	// (b) related resources added: namespaces and configmaps are claimed.
	framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Name: pr.Name}, pr), "get PublishedResource")
	pr.Spec.Related = []syncagentv1alpha1.RelatedResourceSpec{{
		Identifier: "settings", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Kind: syncagentv1alpha1.RelatedResourceKindConfigMap,
		Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
			Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.settings"},
		}},
	}}
	framework.Must(t, f.Service.Client.Update(ctx, pr), "add a related resource")
	claims := waitV1alpha1Claims(t, f, "configmaps", "events", "namespaces", "secrets")
	f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)

	// A consumer binds through v1alpha1, accepting the claims as the v1alpha1
	// export lists them.
	consumer := f.Kcp.CreateWorkspace(t, f.Org.Path, framework.RandomName("consumer"), "universal")
	binding := &kcpapisv1alpha1.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: f.Export.Name},
		Spec: kcpapisv1alpha1.APIBindingSpec{
			Reference: kcpapisv1alpha1.BindingReference{Export: &kcpapisv1alpha1.ExportBindingReference{Path: f.Org.Path, Name: f.Export.Name}},
		},
	}
	for _, c := range claims {
		binding.Spec.PermissionClaims = append(binding.Spec.PermissionClaims, kcpapisv1alpha1.AcceptablePermissionClaim{PermissionClaim: c, State: kcpapisv1alpha1.ClaimAccepted})
	}
	framework.Must(t, consumer.Client.Create(ctx, binding), "create the v1alpha1 APIBinding with the export's claims")
	framework.WaitBound(t, consumer, binding.Name)
	f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))

	// Sync with a related ConfigMap.
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-settings"}, Data: map[string]string{"size": "small"}}
	framework.Must(t, consumer.Client.Create(ctx, settings), "create the related ConfigMap in kcp")
	thing := newObject(kcpThing, "default", "db", map[string]any{"color": "blue", "settings": "db-settings"})
	framework.Must(t, consumer.Client.Create(ctx, thing), "create Thing in kcp")

	local := waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)
	if got := local.GetLabels()["syncagent.kcp.io/agent-name"]; got != f.Export.Name+"-syncagent" {
		t.Errorf("agent label = %q, want the default <apiexport-ref>-syncagent", got)
	}
	localSettings := &corev1.ConfigMap{}
	framework.WaitFor(t, syncTimeout, "the related ConfigMap on the service cluster", func(ctx context.Context) (bool, error) {
		err := f.Service.Client.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: "db-settings"}, localSettings)
		return err == nil && localSettings.Data["size"] == "small", ctrlruntimeclient.IgnoreNotFound(err)
	})

	reportStatus(t, f.Service.Client, &local, consumer, thing)

	// Delete: the copy, the related copy and the finalizers go.
	framework.Must(t, consumer.Client.Delete(ctx, thing), "delete Thing")
	waitGone(t, consumer.Client, newObject(kcpThing, "default", "db", nil), "the kcp object")
	waitGone(t, f.Service.Client, &local, "the local copy")
	waitGone(t, f.Service.Client, localSettings, "the related copy")
	waitReleased(t, f, consumer, "db-settings")
	if agent.Exited() {
		t.Errorf("the agent exited (code %d)", agent.ExitCode())
	}
}
