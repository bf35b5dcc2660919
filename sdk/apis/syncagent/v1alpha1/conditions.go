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

package v1alpha1

// Condition types of a PublishedResource. Each type is written by exactly one
// controller (with its own field manager); Ready is recomputed by every
// controller after it has written its own condition.
const (
	// ConditionSchemaReady is written by the apiresourceschema controller: the
	// APIResourceSchema for the current projection exists in kcp.
	ConditionSchemaReady = "SchemaReady"
	// ConditionExportReady is written by the apiexport controller: the schema
	// is listed in the APIExport and all required permission claims exist.
	ConditionExportReady = "ExportReady"
	// ConditionSyncReady is written by the syncmanager: the sync controller
	// runs and the projected resource is served on every endpoint.
	ConditionSyncReady = "SyncReady"
	// ConditionConfigValid is written by the apiresourceschema controller:
	// the templates, regular expressions and CEL expressions of the spec
	// compile and the configuration is unambiguous.
	ConditionConfigValid = "ConfigValid"
	// ConditionReady summarizes the conditions that are present.
	ConditionReady = "Ready"
)

// Reasons of the SchemaReady condition.
const (
	// ReasonSchemaAvailable: the APIResourceSchema exists and matches.
	ReasonSchemaAvailable = "SchemaAvailable"
	// ReasonSourceNotFound: the source group/kind is not served by the service cluster.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonVersionSelectionFailed: no selected version exists or is served.
	ReasonVersionSelectionFailed = "VersionSelectionFailed"
	// ReasonInvalidProjection: the projection cannot be applied.
	ReasonInvalidProjection = "InvalidProjection"
	// ReasonProtectedGroup: kcp refuses the (projected) API group.
	ReasonProtectedGroup = "ProtectedGroup"
	// ReasonSchemaConflict: an APIResourceSchema with the computed name but a
	// different spec exists (hash collision); it is not exported.
	ReasonSchemaConflict = "SchemaConflict"
	// ReasonSchemaCreateFailed: creating the APIResourceSchema failed.
	ReasonSchemaCreateFailed = "SchemaCreateFailed"
)

// Reasons of the ExportReady condition.
const (
	// ReasonSchemaExported: the schema is in the APIExport and all required
	// claims are present.
	ReasonSchemaExported = "SchemaExported"
	// ReasonAPIExportNotFound: the APIExport does not exist; the agent never creates it.
	ReasonAPIExportNotFound = "APIExportNotFound"
	// ReasonWaitingForSchema: no APIResourceSchema is known yet (also used by SyncReady).
	ReasonWaitingForSchema = "WaitingForSchema"
	// ReasonExportUpdateFailed: updating the APIExport failed.
	ReasonExportUpdateFailed = "ExportUpdateFailed"
)

// Reasons of the SyncReady condition.
const (
	// ReasonRunning: the sync controller runs and the resource is served on every endpoint.
	ReasonRunning = "Running"
	// ReasonSyncDisabled: spec.synchronization.enabled is false.
	ReasonSyncDisabled = "SyncDisabled"
	// ReasonResourceNotServed: an endpoint does not serve the projected resource yet.
	ReasonResourceNotServed = "ResourceNotServed"
	// ReasonNoEndpoints: the endpoint slice lists no endpoints.
	ReasonNoEndpoints = "NoEndpoints"
	// ReasonEndpointUnreachable: an endpoint cannot be reached.
	ReasonEndpointUnreachable = "EndpointUnreachable"
	// ReasonPartitionChanged: the endpoint slice names another Partition
	// than when the agent started (or, with --apiexport-ref, a Partition
	// at all); it serves no endpoint until restarted.
	ReasonPartitionChanged = "PartitionChanged"
	// ReasonControllerStartFailed: the sync controller could not be started
	// or stopped on its own; it is started again with backoff.
	ReasonControllerStartFailed = "ControllerStartFailed"
	// ReasonReleasing: the PublishedResource is being deleted and the agent
	// is still releasing its objects in kcp (the message says what is
	// left); the PublishedResource goes once that is done.
	ReasonReleasing = "Releasing"
	// ReasonControllerStarting: the sync controller was started and waits
	// until it has listed the objects it watches on the service cluster.
	ReasonControllerStarting = "ControllerStarting"
	// ReasonSourceConflict: another selected PublishedResource that was
	// created earlier publishes the same source kind; local copies carry no
	// kcp kind, so the two would take each other's copies. Only the oldest
	// one syncs.
	ReasonSourceConflict = "SourceConflict"
)

// Reasons of the ConfigValid condition.
const (
	// ReasonValid: the configuration is valid.
	ReasonValid = "Valid"
	// ReasonAmbiguousConfiguration: accepted, but some members are ignored
	// (the message names them).
	ReasonAmbiguousConfiguration = "AmbiguousConfiguration"
	// ReasonInvalidConfiguration: a template, regex or CEL expression does not
	// compile, or a combination cannot work at runtime.
	ReasonInvalidConfiguration = "InvalidConfiguration"
)

// ReasonReady is the reason of a True Ready condition. A False Ready condition
// copies the reason of the first condition that is not True, in the order
// SchemaReady, ExportReady, SyncReady, ConfigValid.
const ReasonReady = "Ready"
