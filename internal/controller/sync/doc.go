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
