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

package keys

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestReleaseFinalizer(t *testing.T) {
	const prefix = "syncagent.kcp.io/release-"
	long := strings.Repeat("a", 63)
	for _, agent := range []string{"my-agent", "export.name-syncagent", long, long + "b"} {
		got := ReleaseFinalizer(agent)
		if errs := validation.IsQualifiedName(got); len(errs) > 0 {
			t.Errorf("ReleaseFinalizer(%q) = %q is not a qualified name: %v", agent, got, errs)
		}
		if len(agent) < 50 && got != prefix+agent {
			t.Errorf("ReleaseFinalizer(%q) = %q, want %q", agent, got, prefix+agent)
		}
	}
	// Names too long for a qualified name get a hash, one per name.
	if a, b := ReleaseFinalizer(long), ReleaseFinalizer(long+"b"); a == b || len(a) != len(prefix)+20 {
		t.Errorf("long names: %q and %q, want distinct 20-digit hashes", a, b)
	}
}

// TestPartitionNames: an agent without a partition keeps the names it
// always had; every partition gets names of its own that are valid
// (qualified names, a Lease name) however long the partition's name.
func TestPartitionNames(t *testing.T) {
	const agent = "things-syncagent"
	if ReleaseFinalizerIn(agent, "") != ReleaseFinalizer(agent) || SyncedResourcesIn("") != SyncedResources || LeaderLease(agent, "") != "syncagent."+agent {
		t.Error("without a partition the names differ from the agent's usual ones")
	}
	long := strings.Repeat("p", 253)
	seen := map[string]string{}
	for _, p := range []string{"", "eu", "eu.west", strings.Repeat("p", 46), strings.Repeat("p", 47), long, long[:252] + "q"} {
		for kind, got := range map[string]string{
			"release": ReleaseFinalizerIn(agent, p),
			"synced":  SyncedResourcesIn(p),
			"lease":   LeaderLease(agent, p),
		} {
			var errs []string
			if kind == "lease" {
				errs = validation.IsDNS1123Subdomain(got)
			} else {
				errs = validation.IsQualifiedName(got)
			}
			if len(errs) > 0 {
				t.Errorf("%s name for partition %q: %q is invalid: %v", kind, p, got, errs)
			}
			if other, dup := seen[kind+"/"+got]; dup {
				t.Errorf("%s name %q for partitions %q and %q", kind, got, other, p)
			}
			seen[kind+"/"+got] = p
		}
	}
	if got := ReleaseFinalizerIn(agent, "eu"); got != "syncagent.kcp.io/release-things-syncagent.eu" {
		t.Errorf("release finalizer of partition eu: %q", got)
	}
	if got := LeaderLease(agent, "eu"); got != "syncagent.things-syncagent.eu" {
		t.Errorf("Lease of partition eu: %q", got)
	}
}
