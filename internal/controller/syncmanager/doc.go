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
