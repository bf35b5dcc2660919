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
