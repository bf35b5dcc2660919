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

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// bindWithSecretsSelector binds a new consumer workspace to the export,
// accepting the secrets claim only for Secrets that selector matches and
// every other claim for all objects.
func bindWithSecretsSelector(t *testing.T, f *framework.Fixture, claims []kcpapisv1alpha2.PermissionClaim, selector metav1.LabelSelector) *framework.Workspace {
	t.Helper()
	return bindDecidingSecrets(t, f, claims, kcpapisv1alpha2.PermissionClaimSelector{LabelSelector: selector}, kcpapisv1alpha2.ClaimAccepted, nil)
}

// bindDecidingSecrets binds a new consumer workspace to the export, giving
// the secrets claim the state, selector and verbs (nil: the export's), and
// accepting every other claim for all objects.
func bindDecidingSecrets(t *testing.T, f *framework.Fixture, claims []kcpapisv1alpha2.PermissionClaim,
	selector kcpapisv1alpha2.PermissionClaimSelector, state kcpapisv1alpha2.AcceptablePermissionClaimState, verbs []string) *framework.Workspace {
	t.Helper()
	ws := f.Kcp.CreateWorkspace(t, f.Org.Path, framework.RandomName("consumer"), "universal")
	var accepted []kcpapisv1alpha2.AcceptablePermissionClaim
	for _, c := range claims {
		sel, st := kcpapisv1alpha2.PermissionClaimSelector{MatchAll: true}, kcpapisv1alpha2.ClaimAccepted
		if c.Group == "" && c.Resource == "secrets" {
			sel, st = selector, state
			if verbs != nil {
				c.Verbs = verbs
			}
		}
		accepted = append(accepted, kcpapisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: kcpapisv1alpha2.ScopedPermissionClaim{PermissionClaim: c, Selector: sel},
			State:                 st,
		})
	}
	binding := &kcpapisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: f.Export.Name},
		Spec: kcpapisv1alpha2.APIBindingSpec{
			Reference:        kcpapisv1alpha2.BindingReference{Export: &kcpapisv1alpha2.ExportBindingReference{Path: f.Org.Path, Name: f.Export.Name}},
			PermissionClaims: accepted,
		},
	}
	framework.Must(t, ws.Client.Create(t.Context(), binding), "create APIBinding")
	framework.WaitBound(t, ws, binding.Name)
	return ws
}

// TestRelatedOutsideTheClaimSelector: on kcp 0.32 a consumer accepts the
// secrets claim only for Secrets labelled tier=gold, and the service's
// related Secret (origin service) has no such label. kcp refuses to write
// it into the workspace: the consumer's Thing and the PublishedResource get
// a RelatedObjectRefused Warning that says why, the refusal is counted,
// retried with backoff (not in a hot loop), and nothing is lost: the local
// copy syncs, the service Secret is untouched. Once the service owner
// labels the Secret, its copy arrives in the workspace.
func TestRelatedOutsideTheClaimSelector(t *testing.T) {
	t.Parallel()
	framework.RequireKcpMinor(t, 32, "the virtual workspace's check of writes against a claim's label selector")
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		entry := referencedSecret(syncagentv1alpha1.RelatedResourceOriginService)
		entry.Watch = &syncagentv1alpha1.RelatedResourceWatch{ByOwner: &syncagentv1alpha1.RelatedResourceWatchByOwner{}}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{entry}
	})
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service.Client
	f.Service.InstallCRD(t, openThingCRD())
	framework.Must(t, svc.Create(ctx, pr), "create PublishedResource")
	agent := framework.StartAgent(t, f.AgentArgs()...)
	f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	consumer := bindWithSecretsSelector(t, f, exp.Spec.PermissionClaims, metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold"}}},
	})
	f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))

	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "a", map[string]any{"secretName": "creds"})), "create Thing")
	var local string
	framework.WaitFor(t, syncTimeout, "the local copy", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, svc, consumer.ClusterName)
		if err != nil || len(items) != 1 {
			return false, err
		}
		local = items[0].GetName()
		return true, nil
	})
	copyObj := waitLocal(t, svc, localThing, consumer.ClusterName, local)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: consumer.ClusterName, Name: "creds", Labels: map[string]string{"tier": "bronze"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Thing", Name: local, UID: copyObj.GetUID()}}},
		Data: map[string][]byte{"password": []byte("s3cret")},
	}
	framework.Must(t, svc.Create(ctx, secret), "create the service Secret")

	framework.WaitFor(t, syncTimeout, "RelatedObjectRefused on the Thing in kcp and on the PublishedResource", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, consumer, "default", "a")[syncerReasonRefused] && eventReasons(ctx, f, "things")[syncerReasonRefused], nil
	})
	if err := getObject(ctx, consumer.Client, &corev1.Secret{}, "default", "creds"); !apierrors.IsNotFound(err) {
		t.Errorf("the refused Secret in kcp: err = %v, want NotFound", err)
	}

	// Retried with backoff: over 20 s a hot loop would make hundreds of
	// attempts, the backoff (2 s doubling) at most four.
	first := metricValue(t, agent, "sync_agent_sync_errors_total", `reason="`+syncerReasonRefused+`"`)
	if first < 1 {
		t.Errorf("no refusal counted in sync_agent_sync_errors_total{reason=%q}", syncerReasonRefused)
	}
	time.Sleep(20 * time.Second)
	if n := metricValue(t, agent, "sync_agent_sync_errors_total", `reason="`+syncerReasonRefused+`"`) - first; n > 8 {
		t.Errorf("%v refusals counted in 20 s, want a few (retried with backoff)", n)
	}
	got := &corev1.Secret{}
	framework.Must(t, getObject(ctx, svc, got, consumer.ClusterName, "creds"), "get the service Secret")
	if string(got.Data["password"]) != "s3cret" || got.Labels["tier"] != "bronze" {
		t.Errorf("the service Secret changed: labels %v, data %v", got.Labels, got.Data)
	}

	// The service owner gives the Secret the label the consumer asks for.
	got.Labels["tier"] = "gold"
	framework.Must(t, svc.Update(ctx, got), "label the service Secret")
	framework.WaitFor(t, syncTimeout, "the Secret's copy in kcp", func(ctx context.Context) (bool, error) {
		copied := &corev1.Secret{}
		if err := getObject(ctx, consumer.Client, copied, "default", "creds"); err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		return string(copied.Data["password"]) == "s3cret", nil
	})
}

const syncerReasonRefused = "RelatedObjectRefused"
