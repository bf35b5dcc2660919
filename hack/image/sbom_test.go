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

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSBOM checks the SBOM make sbom wrote for a local build (SBOM_FILE,
// set by make release-test).
func TestSBOM(t *testing.T) {
	file := os.Getenv("SBOM_FILE")
	if file == "" {
		t.Skip("SBOM_FILE is not set (make release-test sets it)")
	}
	checkSBOM(t, file)
}

type bomComponent struct {
	BOMRef  string `json:"bom-ref"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// checkSBOM: a CycloneDX document whose subject is the agent's main module,
// listing the modules of the agent's go.mod that are linked into it at the
// versions there, not the ones only its tests use, and the Go standard
// library; every component has a package URL of its module and version,
// and every dependency edge names a component.
func checkSBOM(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component bomComponent `json:"component"`
		} `json:"metadata"`
		Components   []bomComponent `json:"components"`
		Dependencies []struct {
			Ref       string   `json:"ref"`
			DependsOn []string `json:"dependsOn"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if bom.BOMFormat != "CycloneDX" || !regexp.MustCompile(`^1\.[4-9]$`).MatchString(bom.SpecVersion) {
		t.Errorf("%s: format %q %q, want CycloneDX 1.4 or later", file, bom.BOMFormat, bom.SpecVersion)
	}
	subject := bom.Metadata.Component
	if subject.Name != mainModule || subject.Type != "application" || !strings.HasPrefix(subject.PURL, "pkg:golang/"+mainModule+"@"+subject.Version) || subject.Version == "" {
		t.Errorf("%s: the subject is %+v, want the application %s with its version", file, subject, mainModule)
	}

	refs := map[string]bool{subject.BOMRef: true}
	versions := map[string]string{}
	for _, c := range bom.Components {
		if c.Name == "" || c.Version == "" || c.BOMRef == "" || !strings.HasPrefix(c.PURL, "pkg:golang/"+c.Name+"@"+c.Version) {
			t.Errorf("%s: component %+v lacks a name, version, reference or package URL", file, c)
		}
		if refs[c.BOMRef] {
			t.Errorf("%s: two components are %s", file, c.BOMRef)
		}
		refs[c.BOMRef] = true
		versions[c.Name] = c.Version
	}
	for _, d := range bom.Dependencies {
		for _, r := range append([]string{d.Ref}, d.DependsOn...) {
			if !refs[r] {
				t.Errorf("%s: dependency on %s, which is no component", file, r)
			}
		}
	}

	required := goModRequires(t)
	for _, module := range []string{"k8s.io/client-go", "k8s.io/apimachinery", "sigs.k8s.io/controller-runtime", "github.com/kcp-dev/kcp/sdk", "github.com/kcp-dev/multicluster-provider", "github.com/google/cel-go"} {
		if versions[module] != required[module] || required[module] == "" {
			t.Errorf("%s: %s at %q, want %q (go.mod)", file, module, versions[module], required[module])
		}
	}
	if v := versions[mainModule+"/sdk"]; v != subject.Version {
		t.Errorf("%s: the SDK module (replaced by ./sdk) at %q, want the agent's version %s", file, v, subject.Version)
	}
	// helm is in go.mod for the chart's tests only: not in the binary.
	if v, ok := versions["helm.sh/helm/v3"]; ok || required["helm.sh/helm/v3"] == "" {
		t.Errorf("%s: helm.sh/helm/v3 %s (go.mod: %q): a module only tests use is listed, or the check is stale", file, v, required["helm.sh/helm/v3"])
	}
	if v := versions["std"]; !strings.HasPrefix(v, "go1.") {
		t.Errorf("%s: the Go standard library at %q", file, v)
	}
}

// goModRequires reads the module versions the agent's go.mod requires.
func goModRequires(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	inRequire := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			inRequire = true
		case line == ")":
			inRequire = false
		case inRequire:
			if fields := strings.Fields(line); len(fields) >= 2 {
				out[fields[0]] = fields[1]
			}
		}
	}
	return out
}
