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

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	eventsv1 "k8s.io/api/events/v1"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// v1Event returns the events.k8s.io/v1 Event with reason about the named
// object in namespace, nil if there is none.
func v1Event(ctx context.Context, c ctrlruntimeclient.Client, namespace, name, reason string) (*eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, ctrlruntimeclient.InNamespace(namespace)); err != nil {
		return nil, err
	}
	for i, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// TestEventsThroughTheEventsAPI: the agent writes its Events through
// events.k8s.io/v1, as kubectl get events.v1.events.k8s.io shows them
// (reporting controller and instance set, no legacy source): in the
// service cluster (the PublishedResource's), and in a consumer's
// workspace whose binding accepts the export's claim on
// events.events.k8s.io. A consumer that grants only the events claim
// still gets its Events (through whichever API its kcp lets the agent
// use; kubectl get events shows them alike).
func TestEventsThroughTheEventsAPI(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service
	svc.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, svc.Client.Create(ctx, thingsPR()), "create PublishedResource things")
	agent := framework.StartAgent(t, f.AgentArgs()...)
	svc.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)

	// The service cluster: the PublishedResource's Events.
	framework.WaitFor(t, syncTimeout, "a PublishedResource Event in events.k8s.io/v1", func(ctx context.Context) (bool, error) {
		var list eventsv1.EventList
		if err := svc.Client.List(ctx, &list, ctrlruntimeclient.InNamespace("default")); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "PublishedResource" && e.Regarding.Name == "things" {
				if e.ReportingController == "" || e.ReportingInstance == "" || e.Action == "" || e.EventTime.IsZero() || e.DeprecatedSource.Component != "" {
					t.Fatalf("Event %s not written through events.k8s.io/v1: %+v", e.Name, e)
				}
				return true, nil
			}
		}
		return false, nil
	})

	// The administrator adds the claim the newer API needs.
	framework.Must(t, appendToExport(ctx, f.Org, f.Export.Name, map[string]map[string]any{
		"permissionClaims": {"group": "events.k8s.io", "resource": "events", "verbs": []any{"*"}},
	}), "claim events.events.k8s.io")
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	if !hasClaim(exp, "events.k8s.io", "events") {
		t.Fatalf("the export lost the administrator's claim: %+v", exp.Spec.PermissionClaims)
	}
	newer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	var coreOnly []kcpapisv1alpha2.PermissionClaim
	for _, c := range exp.Spec.PermissionClaims {
		if c.Group != "events.k8s.io" {
			coreOnly = append(coreOnly, c)
		}
	}
	older := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, coreOnly)

	for _, w := range []*framework.Workspace{newer, older} {
		framework.Must(t, w.Client.Create(ctx, newObject(kcpThing, "default", "x", map[string]any{"color": "x"})), "create Thing")
		waitOnlyCopy(t, svc.Client, w.ClusterName)
	}
	framework.WaitFor(t, syncTimeout, "ObjectAccepted through events.k8s.io/v1 in the workspace that accepted the claim", func(ctx context.Context) (bool, error) {
		e, err := v1Event(ctx, newer.Client, "default", "x", "ObjectAccepted")
		if err != nil || e == nil {
			return false, err
		}
		if e.ReportingController != "syncagent-sync" || e.ReportingInstance == "" || e.Action != "ObjectAccepted" || e.DeprecatedSource.Component != "" {
			t.Fatalf("Event %+v, want it written through events.k8s.io/v1 by syncagent-sync", e)
		}
		return true, nil
	})
	// Where the consumer did not accept that claim, kcp decides which API
	// the agent may use (kcp 0.32.2 takes events.k8s.io/v1 through the
	// events claim alone); either way kubectl get events shows the Event.
	framework.WaitFor(t, syncTimeout, "ObjectAccepted in the workspace that did not", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, older, "default", "x")["ObjectAccepted"], nil
	})
	agent.NoErrors(t)
}
