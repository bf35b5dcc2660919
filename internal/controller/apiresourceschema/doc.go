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

// Package apiresourceschema publishes the source type of every selected
// PublishedResource into kcp as an APIResourceSchema.
//
// It watches PublishedResources (honouring --published-resource-selector)
// and CRDs on the service cluster. For each PublishedResource it resolves the
// source type (the CRD, or for built-in types a CRD built from discovery
// and the OpenAPI v2 document), applies the projection, computes the schema name from the
// projected spec and creates the APIResourceSchema in the APIExport's
// workspace if it does not exist yet. It writes status.resourceSchemaName,
// status.observedGeneration and the SchemaReady and ConfigValid conditions.
//
// It never updates the spec of or deletes an APIResourceSchema: schemas are
// immutable and consumers' data depends on them. An existing schema with the
// computed name but a different spec is a hash collision (SchemaConflict),
// and is never reported as ready.
package apiresourceschema
