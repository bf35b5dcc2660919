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
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// goldenSchemasDir holds what hack/refschema computed with kcp's crdpuller
// for built-in types (inputs and results); internal/discovery's unit tests
// read it.
const goldenSchemasDir = "../../internal/discovery/testdata/reference"

// goldenProjectionGroup is the group names.json was computed for.
const goldenProjectionGroup = "golden.example.com"

// TestBuiltinSchemasMatchReference: for built-in types, the agent publishes
// exactly the schema of the reference's algorithm with subresources keyed
// by the list's version (its releases up to v0.7.0 drop the subresources,
// see TestBuiltinSchemaSwitchKeepsConsumers); for types without a status a
// switch adds no second schema and leaves the export alone. hack/refschema
// is an independent build of that algorithm; it computes the
// reference's CRDs against this test bed's kube-apiserver with kcp's
// crdpuller; its output must equal the committed golden files (else run
// `make golden-schemas`), and the agent's schema names must equal the
// golden names. UPDATE_GOLDEN=<dir> writes the output there instead.
func TestBuiltinSchemasMatchReference(t *testing.T) {
	t.Parallel()
	bin, err := framework.RequireEnv("REFSCHEMA_BIN")
	framework.Must(t, err, "refschema binary")
	f := framework.NewFixture(t, testKcp)

	out := filepath.Join(framework.ArtifactsDir(t), "refschema")
	if dir := os.Getenv("UPDATE_GOLDEN"); dir != "" {
		out = dir
	}
	cmd := exec.CommandContext(t.Context(), bin, "--kubeconfig", f.Service.Kubeconfig, "--out", out, "--projection-group", goldenProjectionGroup)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("refschema failed: %v\n%s", err, output)
	}
	entries, err := os.ReadDir(out)
	framework.Must(t, err, "read refschema output")
	goldenEntries, err := os.ReadDir(goldenSchemasDir)
	framework.Must(t, err, "read golden schemas")
	if len(entries) != len(goldenEntries) {
		t.Errorf("refschema wrote %d files, the golden directory has %d; run make golden-schemas", len(entries), len(goldenEntries))
	}
	for _, e := range entries {
		got, err := os.ReadFile(filepath.Join(out, e.Name()))
		framework.Must(t, err, "read %s", e.Name())
		want, err := os.ReadFile(filepath.Join(goldenSchemasDir, e.Name()))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (%v): the test bed's kube-apiserver changed; run make golden-schemas", e.Name(), err)
		}
	}

	names := map[string]string{}
	data, err := os.ReadFile(filepath.Join(goldenSchemasDir, "names.json"))
	framework.Must(t, err, "read golden names")
	framework.Must(t, json.Unmarshal(data, &names), "decode golden names")
	ids := make([]string, 0, len(names))
	for id := range names {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		kind, group, _ := strings.Cut(id, ".")
		if group == "core" {
			group = ""
		}
		pr := publishedResource(prName(id), group, kind, func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Projection = &syncagentv1alpha1.ResourceProjection{Group: goldenProjectionGroup}
		})
		framework.Must(t, f.Service.Client.Create(t.Context(), pr), "create PublishedResource %s", pr.Name)
	}
	framework.StartAgent(t, f.AgentArgs()...)
	for _, id := range ids {
		pr := f.Service.WaitForPublishedResource(t, prName(id), schemaTimeout, "schema ready", schemaReady)
		if pr.Status.ResourceSchemaName != names[id] {
			t.Errorf("%s: schema %s, the reference publishes %s", id, pr.Status.ResourceSchemaName, names[id])
		}
	}
}

// prName turns "Deployment.apps" into "golden-deployment-apps".
func prName(id string) string {
	return "golden-" + strings.ToLower(strings.NewReplacer(".", "-").Replace(id))
}
