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

package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestReleasePublishesWhatTheChartUses: the chart's default image is the
// one the release workflow pushes (its repository, the tag its appVersion
// names), the chart's appVersion is v<version> (the release packages a tag
// v<semver> as <semver> with appVersion v<semver>), and make's defaults
// push to the same places as the workflow.
func TestReleasePublishesWhatTheChartUses(t *testing.T) {
	root := filepath.Join(Dir(), "..", "..", "..")
	var workflow struct {
		// YAML 1.1 reads the key on as true.
		On  map[string]any    `json:"true"`
		Env map[string]string `json:"env"`
	}
	readYAML(t, filepath.Join(root, ".github", "workflows", "release.yml"), &workflow)
	var values struct {
		Image struct {
			Repository, Tag string
		}
	}
	readYAML(t, filepath.Join(Dir(), "values.yaml"), &values)
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, filepath.Join(Dir(), "Chart.yaml"), &chart)

	if values.Image.Repository != workflow.Env["IMAGE_REPOSITORY"] {
		t.Errorf("the chart's image.repository %q is not where the release pushes the image (%q)", values.Image.Repository, workflow.Env["IMAGE_REPOSITORY"])
	}
	if values.Image.Tag != "" {
		t.Errorf("image.tag defaults to %q: it must be empty (the appVersion, which the release sets)", values.Image.Tag)
	}
	if chart.AppVersion != "v"+chart.Version {
		t.Errorf("Chart.yaml: appVersion %q, version %q: a release of tag v<version> has appVersion v<version>", chart.AppVersion, chart.Version)
	}
	push, _ := workflow.On["push"].(map[string]any)
	if tags, _ := push["tags"].([]any); len(tags) != 1 || tags[0] != "v*" {
		t.Errorf("the release runs on %v, want tags v*", workflow.On)
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for variable, want := range map[string]string{
		"IMAGE":            workflow.Env["IMAGE_REPOSITORY"] + ":$(VERSION)",
		"CHART_REPOSITORY": workflow.Env["CHART_REPOSITORY"],
	} {
		m := regexp.MustCompile(`(?m)^` + variable + `\s*\?=\s*(\S+)$`).FindSubmatch(makefile)
		if m == nil || string(m[1]) != want {
			t.Errorf("Makefile: %s defaults to %q, want %q (the release's)", variable, m, want)
		}
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
