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

package mutation

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestMutator_Apply_concurrent shares one Mutator, self and other between
// goroutines; run with -race.
func TestMutator_Apply_concurrent(t *testing.T) {
	m := mustCompile(t, []syncagentv1alpha1.ResourceMutation{
		del("spec.items.0"),
		regex("spec.image", `^(.*):[^:]*$`, "$1:latest"),
		tmpl("spec.hash", `{{ .Self.metadata.name | sha3short }}-{{ .Other.metadata.name }}`),
		celRule("spec.names", `self.spec.users.map(u, u.name + "@" + other.metadata.namespace)`),
	})
	self, other := thing(), remote()
	want, err := m.Apply(self, other)
	if err != nil {
		t.Fatal(err)
	}

	const goroutines, rounds = 8, 50
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				got, err := m.Apply(self, other)
				if err != nil {
					errs <- err
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					errs <- fmt.Errorf("goroutine %d: result differs (-want +got):\n%s", g, diff)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if diff := cmp.Diff(thing(), self); diff != "" {
		t.Errorf("self was modified (-want +got):\n%s", diff)
	}
}
