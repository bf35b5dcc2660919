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
