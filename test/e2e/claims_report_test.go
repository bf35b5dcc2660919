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
	"strings"
	"testing"
	"time"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// claimsReportTimeout: the leader reads the bindings once a minute.
const claimsReportTimeout = 3 * time.Minute

// prEventMessages returns the messages of the PublishedResource's Events
// with reason.
func prEventMessages(ctx context.Context, f *framework.Fixture, name, reason string) []string {
	var events corev1.EventList
	if err := f.Service.Client.List(ctx, &events, ctrlruntimeclient.InNamespace("default")); err != nil {
		return nil
	}
	var messages []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PublishedResource" && e.InvolvedObject.Name == name && e.Reason == reason {
			messages = append(messages, e.Message)
		}
	}
	return messages
}

// TestClaimsMismatchIsShown: consumers whose APIBinding grants less than
// the export claims for a PublishedResource's related Secrets are shown to
// the service owner, where they look: one consumer rejects the secrets
// claim, one accepts it for named verbs where the export asks for "*"
// (kcp then grants none; any kcp), another (kcp 0.31 and newer) accepts it with another
// selector than the default selector an administrator gave the export's
// claim, which kcp 0.32 reports on the binding as PermissionClaimsMismatch.
// The PublishedResource gets a Warning for each, naming the workspace and
// what differs, a PublishedResource without related objects gets none, and
// sync_agent_apibindings counts the bindings by state. A consumer that
// grants everything is counted as valid and reported nowhere.
func TestClaimsMismatchIsShown(t *testing.T) {
	t.Parallel()
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{referencedSecret(syncagentv1alpha1.RelatedResourceOriginService)}
	})
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service.Client
	f.Service.InstallCRD(t, openThingCRD())
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Gadget", "v1"))
	plain := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})
	framework.Must(t, svc.Create(ctx, pr), "create PublishedResource")
	framework.Must(t, svc.Create(ctx, plain), "create the PublishedResource without related objects")
	agent := framework.StartAgent(t, f.AgentArgs()...)
	f.Service.WaitForPublishedResource(t, pr.Name, schemaTimeout, "ExportReady", exportReady)
	f.Service.WaitForPublishedResource(t, plain.Name, schemaTimeout, "ExportReady", exportReady)

	minor, minorErr := framework.KcpMinor()
	framework.Must(t, minorErr, "the test bed's kcp version")
	withSelector := minor >= 31 // a claim's defaultSelector
	if withSelector {
		// The administrator narrows the export's secrets claim by default.
		framework.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			exp, err := getRawExport(ctx, f.Org, f.Export.Name)
			if err != nil {
				return err
			}
			list, _, _ := unstructured.NestedSlice(exp.Object, "spec", "permissionClaims")
			for _, c := range list {
				if m, ok := c.(map[string]any); ok && m["group"] == "" && m["resource"] == "secrets" {
					m["defaultSelector"] = map[string]any{"matchLabels": map[string]any{"tier": "gold"}}
				}
			}
			if err := unstructured.SetNestedSlice(exp.Object, list, "spec", "permissionClaims"); err != nil {
				return err
			}
			return f.Org.Client.Update(ctx, exp)
		}), "give the export's secrets claim a default selector")
	}
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")

	all := kcpapisv1alpha2.PermissionClaimSelector{MatchAll: true}
	asked := all
	if withSelector {
		asked = kcpapisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}
	}
	rejecting := bindDecidingSecrets(t, f, exp.Spec.PermissionClaims, all, kcpapisv1alpha2.ClaimRejected, nil)
	granting := bindDecidingSecrets(t, f, exp.Spec.PermissionClaims, asked, kcpapisv1alpha2.ClaimAccepted, nil)
	// The export claims Secrets for "*"; kcp grants the verbs both sides
	// name as strings, so this consumer grants the agent none.
	fewerVerbs := bindDecidingSecrets(t, f, exp.Spec.PermissionClaims, asked, kcpapisv1alpha2.ClaimAccepted, []string{"get", "list", "watch"})
	want := map[string]float64{"not-accepted": 1, "mismatch": 1, "invalid": 0, "valid": 1}
	var other *framework.Workspace
	if withSelector {
		other = bindDecidingSecrets(t, f, exp.Spec.PermissionClaims, kcpapisv1alpha2.PermissionClaimSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}}}, kcpapisv1alpha2.ClaimAccepted, nil)
		want["mismatch"] = 2
	}

	framework.WaitFor(t, claimsReportTimeout, "a PermissionClaimsNotAccepted Warning naming the rejecting workspace", func(ctx context.Context) (bool, error) {
		for _, m := range prEventMessages(ctx, f, pr.Name, "PermissionClaimsNotAccepted") {
			if strings.Contains(m, rejecting.ClusterName) && strings.Contains(m, "secrets: rejected") {
				return true, nil
			}
		}
		return false, nil
	})
	framework.WaitFor(t, claimsReportTimeout, "a PermissionClaimsMismatch Warning naming the workspace that grants no verb", func(ctx context.Context) (bool, error) {
		for _, m := range prEventMessages(ctx, f, pr.Name, "PermissionClaimsMismatch") {
			if strings.Contains(m, fewerVerbs.ClusterName) && strings.Contains(m, "kcp lets the service use []") {
				return true, nil
			}
		}
		return false, nil
	})
	if withSelector {
		framework.WaitFor(t, claimsReportTimeout, "a PermissionClaimsMismatch Warning naming the workspace with another selector", func(ctx context.Context) (bool, error) {
			for _, m := range prEventMessages(ctx, f, pr.Name, "PermissionClaimsMismatch") {
				if strings.Contains(m, other.ClusterName) && strings.Contains(m, "selector") {
					return true, nil
				}
			}
			return false, nil
		})
	}
	framework.WaitFor(t, claimsReportTimeout, "sync_agent_apibindings by state", func(ctx context.Context) (bool, error) {
		for state, n := range want {
			v, err := scrapeMetric(ctx, agent, "sync_agent_apibindings", `claims="`+state+`"`)
			if err != nil || v != n {
				return false, err
			}
		}
		return true, nil
	})
	for _, reason := range []string{"PermissionClaimsNotAccepted", "PermissionClaimsMismatch", "PermissionClaimsInvalid"} {
		if got := prEventMessages(ctx, f, plain.Name, reason); len(got) > 0 {
			t.Errorf("the PublishedResource without related objects got %s: %q", reason, got)
		}
		for _, m := range prEventMessages(ctx, f, pr.Name, reason) {
			if strings.Contains(m, granting.ClusterName) {
				t.Errorf("the consumer that grants every claim is reported: %s %q", reason, m)
			}
		}
	}
}
