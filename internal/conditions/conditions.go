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

// Package conditions computes the PublishedResource conditions (contract
// §2.11) and writes a controller's own condition without touching the
// conditions of other controllers.
package conditions

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// readyOrder is the order in which a False Ready condition picks the reason
// to copy.
var readyOrder = []string{
	syncagentv1alpha1.ConditionSchemaReady,
	syncagentv1alpha1.ConditionExportReady,
	syncagentv1alpha1.ConditionSyncReady,
	syncagentv1alpha1.ConditionConfigValid,
}

// SyncReadyType is the type of the syncmanager's condition: SyncReady, and
// "SyncReady.<partition>" for an agent that serves one partition of the
// export's shards, so that the agents of several partitions report side by
// side instead of overwriting each other.
func SyncReadyType(partition string) string {
	if partition == "" {
		return syncagentv1alpha1.ConditionSyncReady
	}
	return syncagentv1alpha1.ConditionSyncReady + "." + partition
}

// isSyncReady reports whether t is SyncReady or a partition's.
func isSyncReady(t string) bool {
	return t == syncagentv1alpha1.ConditionSyncReady || strings.HasPrefix(t, syncagentv1alpha1.ConditionSyncReady+".")
}

// order is readyOrder with the partitions' SyncReady conditions present in
// conds after SyncReady, sorted by type.
func order(conds []metav1.Condition) []string {
	var partitions []string
	for _, c := range conds {
		if isSyncReady(c.Type) && c.Type != syncagentv1alpha1.ConditionSyncReady {
			partitions = append(partitions, c.Type)
		}
	}
	if len(partitions) == 0 {
		return readyOrder
	}
	slices.Sort(partitions)
	i := slices.Index(readyOrder, syncagentv1alpha1.ConditionSyncReady) + 1
	return slices.Concat(readyOrder[:i], partitions, readyOrder[i:])
}

// Ready computes the Ready condition from the conditions present: True when
// all of them are True and SchemaReady is among them; otherwise the status
// and reason of the first condition that is not True (a missing SchemaReady
// counts as Unknown, WaitingForSchema).
func Ready(conds []metav1.Condition, generation int64) metav1.Condition {
	ready := metav1.Condition{
		Type:               syncagentv1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             syncagentv1alpha1.ReasonReady,
		Message:            "The resource is published and synchronized.",
		ObservedGeneration: generation,
	}
	if meta.FindStatusCondition(conds, syncagentv1alpha1.ConditionSchemaReady) == nil {
		ready.Status = metav1.ConditionUnknown
		ready.Reason = syncagentv1alpha1.ReasonWaitingForSchema
		ready.Message = "The schema has not been processed yet."
		return ready
	}
	running := false
	for _, c := range conds {
		running = running || isSyncReady(c.Type) && c.Status == metav1.ConditionTrue
	}
	for _, t := range order(conds) {
		c := meta.FindStatusCondition(conds, t)
		if c == nil || c.Status == metav1.ConditionTrue {
			continue
		}
		if isSyncReady(t) && c.Reason == syncagentv1alpha1.ReasonNoEndpoints && running {
			// A partition whose shards no workspace binds the export on
			// yet, while another partition syncs: nothing is missing.
			continue
		}
		ready.Status = metav1.ConditionFalse
		if c.Status == metav1.ConditionUnknown {
			ready.Status = metav1.ConditionUnknown
		}
		ready.Reason = c.Reason
		ready.Message = t + ": " + c.Message
		return ready
	}
	return ready
}

// readyReasons are the reasons a Ready condition written by this agent can
// have: True's, and those of the conditions it copies.
var readyReasons = sets.New(
	syncagentv1alpha1.ReasonReady,
	syncagentv1alpha1.ReasonSchemaAvailable, syncagentv1alpha1.ReasonSourceNotFound, syncagentv1alpha1.ReasonVersionSelectionFailed,
	syncagentv1alpha1.ReasonInvalidProjection, syncagentv1alpha1.ReasonProtectedGroup, syncagentv1alpha1.ReasonSchemaConflict,
	syncagentv1alpha1.ReasonSchemaCreateFailed,
	syncagentv1alpha1.ReasonSchemaExported, syncagentv1alpha1.ReasonAPIExportNotFound, syncagentv1alpha1.ReasonWaitingForSchema,
	syncagentv1alpha1.ReasonExportUpdateFailed,
	syncagentv1alpha1.ReasonRunning, syncagentv1alpha1.ReasonSyncDisabled, syncagentv1alpha1.ReasonResourceNotServed,
	syncagentv1alpha1.ReasonNoEndpoints, syncagentv1alpha1.ReasonEndpointUnreachable, syncagentv1alpha1.ReasonControllerStartFailed,
	syncagentv1alpha1.ReasonPartitionChanged,
	syncagentv1alpha1.ReasonReleasing, syncagentv1alpha1.ReasonControllerStarting, syncagentv1alpha1.ReasonSourceConflict,
	syncagentv1alpha1.ReasonValid, syncagentv1alpha1.ReasonAmbiguousConfiguration, syncagentv1alpha1.ReasonInvalidConfiguration,
)

// ReadyReason is the reason of the Ready condition in conds, for a metric
// label: Unknown without a Ready condition, Other for a reason this agent
// never writes (another writer's), so the label takes a bounded set of
// values.
func ReadyReason(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, syncagentv1alpha1.ConditionReady)
	switch {
	case c == nil:
		return "Unknown"
	case readyReasons.Has(c.Reason):
		return c.Reason
	}
	return "Other"
}

// Apply sets own (keeping its transition time when the status does not
// change) and recomputes Ready in status. It reports whether anything
// changed.
func Apply(status *syncagentv1alpha1.PublishedResourceStatus, own metav1.Condition, generation int64) bool {
	before := status.DeepCopy()
	own.ObservedGeneration = generation
	meta.SetStatusCondition(&status.Conditions, own)
	meta.SetStatusCondition(&status.Conditions, Ready(status.Conditions, generation))
	return !equalConditions(before.Conditions, status.Conditions)
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}

// New returns a condition of the given type.
func New(condType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message}
}
