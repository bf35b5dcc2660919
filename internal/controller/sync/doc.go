// Package sync is the per-PublishedResource sync controller. The syncmanager
// starts exactly one per selected, enabled PublishedResource and stops it
// when the PublishedResource changes, is disabled or is deleted.
//
// It watches the projected type in every engaged consumer workspace (through
// the APIExport virtual workspace, on every endpoint) and the local copies on
// the service cluster (mapped back to their kcp object through their
// labels and annotations). An event is reconciled against the workspace it
// came from only. Each reconcile fetches the kcp object from the
// workspace's cache, applies the PublishedResource's filters, resolves the
// workspace path if enabled, and hands the object to internal/sync/syncer.
package sync
