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

// Package apiexport keeps the agent's APIExport in kcp in line with the
// selected PublishedResources.
//
// It watches PublishedResources on the service cluster and the one APIExport
// in kcp (a cache field-selected by name, as kcp RBAC is name-scoped). It
// merges the PublishedResources' schemas into spec.resources (replacing the
// schema of the same group/resource, keeping everything else) and appends the
// permission claims they need, writing only when something changed. It
// writes each PublishedResource's ExportReady condition.
//
// It never creates the APIExport, never removes a schema of a group/resource
// no selected PublishedResource manages, and never removes or changes a
// permission claim.
package apiexport
