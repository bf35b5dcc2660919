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
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kcp-syncagent/api-syncagent/internal/preview"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestPreviewMatchesTheAgent: what `api-syncagent preview` shows (with the
// source type read from the service cluster) is what the running agent
// does: the schema name it publishes, and the name, namespace, labels,
// annotations and spec of the local copy it creates for the sample.
func TestPreviewMatchesTheAgent(t *testing.T) {
	t.Parallel()
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Naming = &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name }}-previewed", Namespace: "p-{{ .ClusterName }}"}
		s.Mutation = &syncagentv1alpha1.ResourceMutationSpec{Spec: []syncagentv1alpha1.ResourceMutation{
			{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: "spec.color", Pattern: "blue", Replacement: "navy"}},
		}}
	})
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{pr.DeepCopy()}, 1)
	ctx := t.Context()
	sample := newObject(kcpThing, "default", "sample", map[string]any{"color": "blue"})
	sample.SetLabels(map[string]string{"team": "storage"})

	dir := t.TempDir()
	write := func(name string, obj any) string {
		t.Helper()
		data, err := yaml.Marshal(obj)
		framework.Must(t, err, "encode %s", name)
		path := filepath.Join(dir, name)
		framework.Must(t, os.WriteFile(path, data, 0o600), "write %s", name)
		return path
	}
	pr.APIVersion, pr.Kind = syncagentv1alpha1.SchemeGroupVersion.String(), "PublishedResource" // as in a file
	var stdout, stderr bytes.Buffer
	status := preview.Command([]string{"-f", write("pr.yaml", pr), "--kubeconfig", f.Service.Kubeconfig,
		"--object", write("sample.yaml", sample.Object), "--agent-name", f.Export.Name + "-syncagent",
		"--workspace", ws[0].ClusterName, "-o", "json"}, &stdout, &stderr)
	if status != 0 {
		t.Fatalf("preview exited with %d: %s", status, stderr.String())
	}
	var shown preview.Output
	framework.Must(t, json.Unmarshal(stdout.Bytes(), &shown), "decode the preview")
	if len(shown.Objects) != 1 || shown.Objects[0].Local == nil {
		t.Fatalf("the preview shows %d objects, want the sample's copy", len(shown.Objects))
	}
	want := shown.Objects[0]

	f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, "the schema the preview named", func(got *syncagentv1alpha1.PublishedResource) bool {
		return got.Status.ResourceSchemaName == shown.APIResourceSchema.Name
	})
	framework.Must(t, ws[0].Client.Create(ctx, sample), "create the sample in kcp")
	local := waitLocal(t, f.Service.Client, localThing, want.LocalNamespace, want.LocalName)
	if diff := cmp.Diff(want.Local.Object["spec"], local.Object["spec"]); diff != "" {
		t.Errorf("the copy's spec differs from the preview's (-preview +agent):\n%s", diff)
	}
	for k, v := range want.Local.GetLabels() {
		if local.GetLabels()[k] != v {
			t.Errorf("label %s: the agent wrote %q, the preview showed %q", k, local.GetLabels()[k], v)
		}
	}
	for k, v := range want.Local.GetAnnotations() {
		if local.GetAnnotations()[k] != v {
			t.Errorf("annotation %s: the agent wrote %q, the preview showed %q", k, local.GetAnnotations()[k], v)
		}
	}
}
