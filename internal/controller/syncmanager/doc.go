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

// Package syncmanager runs exactly one sync controller per selected,
// enabled PublishedResource once its projected type is served by the
// APIExport's virtual workspace on every endpoint.
//
// It watches PublishedResources, CRDs (the local type may change) and the
// APIExportEndpointSlice (a cache field-selected by name). It connects to
// every endpoint the slice lists, one kcp apiexport provider each, follows
// endpoint changes without a restart, and restarts a sync controller only
// when the PublishedResource's generation, its schema or the local type's
// storage version, scope or status subresource change; status-only updates
// restart nothing. It writes the SyncReady condition.
package syncmanager
