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

package apiexport

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/publisher"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestPublisherGate: an agent of partition us, whose export records the eu
// agent as its name's publisher, writes nothing into the export and no
// condition, closes the gate and says so once (Events on the export and
// the PublishedResource, the gauge). Once the record is removed it claims
// the export in its next write and opens the gate.
func TestPublisherGate(t *testing.T) {
	for _, partition := range []string{"us", ""} {
		t.Run("partition "+partition, func(t *testing.T) { testPublisherGate(t, partition) })
	}
}

// testPublisherGate: see TestPublisherGate. Without a partition the agent
// is refused and says so alike, and after the handover it writes no
// record of its own.
func testPublisherGate(t *testing.T, partition string) {
	ctx := context.Background()
	svcScheme := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(svcScheme); err != nil {
		t.Fatal(err)
	}
	pr := &syncagentv1alpha1.PublishedResource{
		ObjectMeta: metav1.ObjectMeta{Name: "things", Labels: map[string]string{"agent": "things"}},
		Status:     syncagentv1alpha1.PublishedResourceStatus{ResourceSchemaName: "v1.things.kcp.example.com"},
	}
	svc := fake.NewClientBuilder().WithScheme(svcScheme).WithObjects(pr).WithStatusSubresource(pr).Build()
	export := &kcpapisv1alpha2.APIExport{ObjectMeta: metav1.ObjectMeta{Name: "things", Annotations: map[string]string{keys.PublisherOf("things"): "syncagent.things.eu"}}}
	patches := 0
	kcpClient := fake.NewClientBuilder().WithScheme(kcp.NewScheme()).WithObjects(export).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	gate := publisher.NewGate()
	kcpEvents, prEvents := record.NewFakeRecorder(10), record.NewFakeRecorder(10)
	r := &Reconciler{
		Options: Options{AgentName: "things", Selector: labels.SelectorFromSet(labels.Set{"agent": "things"}), ExportName: "things", Partition: partition, Gate: gate},
		client:  svc, kcpCache: kcpClient, kcpClient: kcpClient, kcpRecorder: kcpEvents, prEvents: prEvents,
		status: &conditions.Writer{Client: svc, Reader: svc, FieldOwner: ControllerName, Log: logr.Discard()},
		log:    logr.Discard(),
	}

	for range 2 { // the second pass says nothing again
		if _, err := r.Reconcile(ctx, exportKey); err != nil {
			t.Fatal(err)
		}
	}
	if state, other := gate.Get(); state != publisher.Refused || other != "syncagent.things.eu" {
		t.Errorf("gate %v/%q, want Refused by syncagent.things.eu", state, other)
	}
	if patches != 0 {
		t.Errorf("%d writes into the export of another publisher", patches)
	}
	if got := testutil.ToFloat64(metrics.PublisherRefused); got != 1 {
		t.Errorf("sync_agent_publisher_refused %v, want 1", got)
	}
	for name, events := range map[string]*record.FakeRecorder{"APIExport": kcpEvents, "PublishedResource": prEvents} {
		if n := len(events.Events); n != 1 {
			t.Errorf("%d Events on the %s, want one", n, name)
		} else if e := <-events.Events; !strings.Contains(e, ReasonPublisherConflict) || !strings.Contains(e, "syncagent.things.eu") {
			t.Errorf("Event on the %s: %q", name, e)
		}
	}
	got := &syncagentv1alpha1.PublishedResource{}
	if err := svc.Get(ctx, types.NamespacedName{Name: "things"}, got); err != nil {
		t.Fatal(err)
	}
	if c := apimeta.FindStatusCondition(got.Status.Conditions, syncagentv1alpha1.ConditionExportReady); c != nil {
		t.Errorf("the refused agent wrote %+v", c)
	}

	// The record removed (a handover): this agent claims the export.
	if err := kcpClient.Get(ctx, types.NamespacedName{Name: "things"}, export); err != nil {
		t.Fatal(err)
	}
	export.Annotations = nil
	if err := kcpClient.Update(ctx, export); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, exportKey); err != nil {
		t.Fatal(err)
	}
	if state, _ := gate.Get(); state != publisher.Publishing {
		t.Errorf("gate %v after the handover, want Publishing", state)
	}
	if err := kcpClient.Get(ctx, types.NamespacedName{Name: "things"}, export); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"us": "syncagent.things.us", "": ""}[partition]
	if got := export.Annotations[keys.PublisherOf("things")]; got != want {
		t.Errorf("publisher record after the handover: %q, want %q", got, want)
	}
	if got := testutil.ToFloat64(metrics.PublisherRefused); got != 0 {
		t.Errorf("sync_agent_publisher_refused %v after the handover, want 0", got)
	}
}
