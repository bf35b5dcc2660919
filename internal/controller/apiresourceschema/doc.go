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
