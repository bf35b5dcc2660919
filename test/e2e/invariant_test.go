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

//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// thingsResource is what thingsPR promises, for the invariant checker.
var thingsResource = invariant.Resource{Name: "things", Kcp: kcpThing, Local: localThing, KcpNamespaced: true, Status: true}

// converged waits until the invariant checker, reading both sides with
// admin rights, finds no violation in the fixture's workspaces; on timeout
// the test fails with every violation it last saw.
func converged(t *testing.T, f *framework.Fixture, workspaces []*framework.Workspace, resources ...invariant.Resource) {
	t.Helper()
	convergedExplained(t, f, workspaces, nil, resources...)
}

// convergedExplained is converged; explain (if not nil) adds to each
// violation what touched its object.
func convergedExplained(t *testing.T, f *framework.Fixture, workspaces []*framework.Workspace, explain func(invariant.Violation) string, resources ...invariant.Resource) {
	t.Helper()
	convergedChecked(t, checkerOf(f, workspaces, resources...), explain)
}

// checkerOf is the invariant checker of the fixture's agent, workspaces
// and resources.
func checkerOf(f *framework.Fixture, workspaces []*framework.Workspace, resources ...invariant.Resource) *invariant.Checker {
	c := &invariant.Checker{Service: f.Service.Client, AgentName: f.Export.Name + "-syncagent", AgentNamespace: framework.AgentNamespace, Resources: resources}
	for _, w := range workspaces {
		c.Workspaces = append(c.Workspaces, invariant.Workspace{Cluster: w.ClusterName, Client: w.Client})
	}
	return c
}

// convergedChecked is convergedExplained with a checker of the caller's.
func convergedChecked(t *testing.T, c *invariant.Checker, explain func(invariant.Violation) string) {
	t.Helper()
	// The violations and read errors are kept apart: a read cut off by
	// the deadline must not hide what the checker found before.
	var violations string
	err := poll(t.Context(), convergeTimeout, func(ctx context.Context) (bool, error) {
		vs, err := c.Check(ctx)
		if err != nil {
			return false, err
		}
		lines := make([]string, 0, len(vs))
		for _, v := range vs {
			line := v.String()
			if explain != nil {
				line += explain(v)
			}
			lines = append(lines, line)
		}
		violations = fmt.Sprintf("%d violation(s):\n%s", len(vs), strings.Join(lines, "\n"))
		return len(vs) == 0, nil
	})
	if err != nil {
		t.Fatalf("both sides do not agree: %v; the last complete check found %s", err, cmp.Or(violations, "nothing (no check completed)"))
	}
}
