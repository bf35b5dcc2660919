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

package conditions

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func cond(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: reason}
}

func TestReady(t *testing.T) {
	const (
		schema = syncagentv1alpha1.ConditionSchemaReady
		export = syncagentv1alpha1.ConditionExportReady
		sync   = syncagentv1alpha1.ConditionSyncReady
		config = syncagentv1alpha1.ConditionConfigValid
		tru    = metav1.ConditionTrue
		fal    = metav1.ConditionFalse
		unk    = metav1.ConditionUnknown
	)
	testcases := []struct {
		name       string
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "nothing yet", wantStatus: unk, wantReason: syncagentv1alpha1.ReasonWaitingForSchema},
		{name: "schema missing although others are true", conds: []metav1.Condition{cond(export, tru, "SchemaExported")}, wantStatus: unk, wantReason: syncagentv1alpha1.ReasonWaitingForSchema},
		{name: "only schema (split deployment)", conds: []metav1.Condition{cond(schema, tru, "SchemaAvailable")}, wantStatus: tru, wantReason: syncagentv1alpha1.ReasonReady},
		{name: "all true", conds: []metav1.Condition{cond(config, tru, "Valid"), cond(sync, tru, "Running"), cond(export, tru, "SchemaExported"), cond(schema, tru, "SchemaAvailable")}, wantStatus: tru, wantReason: syncagentv1alpha1.ReasonReady},
		{name: "ambiguous config is still ready", conds: []metav1.Condition{cond(schema, tru, "SchemaAvailable"), cond(config, tru, "AmbiguousConfiguration")}, wantStatus: tru, wantReason: syncagentv1alpha1.ReasonReady},
		{
			name:       "first non-true in contract order wins, not list order",
			conds:      []metav1.Condition{cond(config, fal, "InvalidConfiguration"), cond(sync, fal, "NoEndpoints"), cond(export, tru, "SchemaExported"), cond(schema, tru, "SchemaAvailable")},
			wantStatus: fal, wantReason: "NoEndpoints",
		},
		{name: "schema false", conds: []metav1.Condition{cond(schema, fal, "SourceNotFound"), cond(export, fal, "WaitingForSchema")}, wantStatus: fal, wantReason: "SourceNotFound"},
		{name: "unknown is copied as unknown", conds: []metav1.Condition{cond(schema, tru, "SchemaAvailable"), cond(export, unk, "WaitingForSchema")}, wantStatus: unk, wantReason: "WaitingForSchema"},
		{
			name:       "partitions: all running",
			conds:      []metav1.Condition{cond(schema, tru, "SchemaAvailable"), cond(export, tru, "SchemaExported"), cond(SyncReadyType("eu"), tru, "Running"), cond(SyncReadyType("us"), tru, "Running")},
			wantStatus: tru, wantReason: syncagentv1alpha1.ReasonReady,
		},
		{
			name:       "partitions: one partition not running makes Ready false",
			conds:      []metav1.Condition{cond(schema, tru, "SchemaAvailable"), cond(SyncReadyType("us"), fal, "EndpointUnreachable"), cond(SyncReadyType("eu"), tru, "Running"), cond(config, tru, "Valid")},
			wantStatus: fal, wantReason: "EndpointUnreachable",
		},
		{
			name:       "partitions: sorted by type, after SyncReady, before ConfigValid",
			conds:      []metav1.Condition{cond(config, fal, "InvalidConfiguration"), cond(SyncReadyType("us"), fal, "NoEndpoints"), cond(SyncReadyType("eu"), fal, "ControllerStarting"), cond(schema, tru, "SchemaAvailable")},
			wantStatus: fal, wantReason: "ControllerStarting",
		},
		{
			name:       "partitions: one without consumers yet while another syncs",
			conds:      []metav1.Condition{cond(schema, tru, "SchemaAvailable"), cond(SyncReadyType("us"), fal, "NoEndpoints"), cond(SyncReadyType("eu"), tru, "Running")},
			wantStatus: tru, wantReason: syncagentv1alpha1.ReasonReady,
		},
		{
			name:       "partitions: none with consumers yet",
			conds:      []metav1.Condition{cond(schema, tru, "SchemaAvailable"), cond(SyncReadyType("us"), fal, "NoEndpoints"), cond(SyncReadyType("eu"), fal, "NoEndpoints")},
			wantStatus: fal, wantReason: "NoEndpoints",
		},
		{
			name:       "a type that only begins like SyncReady is not a partition's",
			conds:      []metav1.Condition{cond(schema, tru, "SchemaAvailable"), cond("SyncReadyish", fal, "Other")},
			wantStatus: tru, wantReason: syncagentv1alpha1.ReasonReady,
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got := Ready(tc.conds, 7)
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.ObservedGeneration != 7 || got.Type != syncagentv1alpha1.ConditionReady {
				t.Errorf("Ready = %s/%s (gen %d), want %s/%s", got.Status, got.Reason, got.ObservedGeneration, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestApply(t *testing.T) {
	status := &syncagentv1alpha1.PublishedResourceStatus{}
	own := New(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSchemaAvailable, "ok")
	if !Apply(status, own, 1) {
		t.Fatal("first Apply must report a change")
	}
	if Apply(status, own, 1) {
		t.Fatal("second identical Apply must report no change")
	}
	if !Apply(status, own, 2) {
		t.Fatal("a new generation is a change")
	}
	if len(status.Conditions) != 2 {
		t.Fatalf("want SchemaReady and Ready, got %+v", status.Conditions)
	}
	// Another controller's condition is kept.
	status.Conditions = append(status.Conditions, cond(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, "NoEndpoints"))
	Apply(status, own, 2)
	if r := Ready(status.Conditions, 2); r.Reason != "NoEndpoints" || len(status.Conditions) != 3 {
		t.Errorf("foreign condition lost or ignored: %+v", status.Conditions)
	}
}

// TestReadyReasonKnowsEveryReason: every reason the API defines is a value
// of the ready metric's reason label as it is; anything else is Other.
func TestReadyReasonKnowsEveryReason(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "sdk", "apis", "syncagent", "v1alpha1", "conditions.go"))
	if err != nil {
		t.Fatal(err)
	}
	reasons := regexp.MustCompile(`(?m)^\s*Reason[A-Za-z]+\s*=\s*"([A-Za-z]+)"|^const Reason[A-Za-z]+ = "([A-Za-z]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(reasons) < 20 {
		t.Fatalf("found %d reasons in the API: the extraction is broken", len(reasons))
	}
	for _, m := range reasons {
		reason := m[1] + m[2]
		conds := []metav1.Condition{{Type: syncagentv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}
		if got := ReadyReason(conds); got != reason {
			t.Errorf("ReadyReason(%s) = %s", reason, got)
		}
	}
	if got := ReadyReason([]metav1.Condition{{Type: syncagentv1alpha1.ConditionReady, Reason: "SomeoneElses"}}); got != "Other" {
		t.Errorf("a foreign reason = %s, want Other", got)
	}
	if got := ReadyReason(nil); got != "Unknown" {
		t.Errorf("no Ready condition = %s, want Unknown", got)
	}
}
