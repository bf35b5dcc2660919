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

// Package finalizer names the finalizer an agent puts on kcp objects and
// says which finalizers on an object are the agent's to remove.
//
// Each agent has a finalizer of its own, syncagent.kcp.io/cleanup-<agent
// name> (keys.CleanupFinalizerOf), so two agents (different agent names, exports or service clusters)
// that guard one object (a consumer's Secret two services read, say) never
// remove each other's. Objects synced by the reference agent or by earlier
// versions of this one carry the shared legacy finalizer
// syncagent.kcp.io/cleanup instead: it counts as the agent's while the
// object does not carry the agent's own, and it is replaced by the agent's
// own when the agent takes the object over (Take). Once the object carries
// the agent's own finalizer, a legacy finalizer on it is another agent's and
// is never removed.
//
// The package only edits finalizer lists in memory; callers write them.
package finalizer

import (
	"slices"

	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// Legacy is the finalizer of the reference agent and of this agent's
// versions before per-agent finalizers: every agent shared it.
const Legacy = keys.CleanupFinalizer

// Of is one agent's view of finalizers.
type Of struct {
	// Own is the agent's own finalizer (keys.CleanupFinalizerOf).
	Own string
}

// For returns the finalizers of agentName.
func For(agentName string) Of { return Of{Own: keys.CleanupFinalizerOf(agentName)} }

// Holds reports whether obj carries the agent's own finalizer or the legacy
// one (which callers then decide about).
func (f Of) Holds(obj ctrlruntimeclient.Object) bool {
	return f.Owns(obj) || slices.Contains(obj.GetFinalizers(), Legacy)
}

// Migrating reports whether obj carries the legacy finalizer but not the
// agent's own: Take would replace it.
func (f Of) Migrating(obj ctrlruntimeclient.Object) bool {
	return !f.Owns(obj) && slices.Contains(obj.GetFinalizers(), Legacy)
}

// Take gives obj the agent's own finalizer; with migrate, a legacy
// finalizer on an object that did not carry the agent's own yet goes (the
// caller knows the legacy finalizer was put there for the role it now
// takes). It reports whether the list changed.
func (f Of) Take(obj ctrlruntimeclient.Object, migrate bool) bool {
	if f.Owns(obj) {
		return false
	}
	list := slices.Clone(obj.GetFinalizers())
	if migrate {
		list = slices.DeleteFunc(list, func(s string) bool { return s == Legacy })
	}
	obj.SetFinalizers(append(list, f.Own))
	return true
}

// Release removes the agent's finalizer from obj: its own, or, on an object
// that does not carry the agent's own, the legacy one if legacyOurs (the
// caller holds the agent's own record that predates per-agent finalizers
// for this object). Another agent's finalizer stays. It reports whether the
// list changed.
func (f Of) Release(obj ctrlruntimeclient.Object, legacyOurs bool) bool {
	gone := f.Own
	if !f.Owns(obj) {
		if !legacyOurs {
			return false
		}
		gone = Legacy
	}
	list := obj.GetFinalizers()
	rest := slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == gone })
	if len(rest) == len(list) {
		return false
	}
	obj.SetFinalizers(rest)
	return true
}

// Owns reports whether obj carries the agent's own finalizer.
func (f Of) Owns(obj ctrlruntimeclient.Object) bool {
	return slices.Contains(obj.GetFinalizers(), f.Own)
}
