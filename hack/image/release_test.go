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
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.yaml.in/yaml/v3"
)

// The repository's root, from hack/image.
const root = "../.."

// mainModule is the agent's module, which its SBOM describes.
const mainModule = "github.com/kcp-syncagent/api-syncagent"

type workflow struct {
	Permissions map[string]string `yaml:"permissions"`
	Defaults    struct {
		Run struct {
			Shell string `yaml:"shell"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]job    `yaml:"jobs"`
}

type job struct {
	Needs       any               `yaml:"needs"`
	Permissions map[string]string `yaml:"permissions"`
	Outputs     map[string]string `yaml:"outputs"`
	Env         map[string]string `yaml:"env"`
	Steps       []step            `yaml:"steps"`
}

type step struct {
	ID   string            `yaml:"id"`
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	Env  map[string]string `yaml:"env"`
	With map[string]string `yaml:"with"`
}

func readWorkflow(t *testing.T) workflow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// offline says, for each run step of the release workflow's jobs that
// publish, whether TestReleaseSteps runs it, and why not. A step missing
// here fails the test: say whether it can run without GitHub.
var offline = map[string]map[string]string{
	"publish": {
		"Log in to ghcr.io (image, chart, signatures)": "skip: needs the workflow's GITHUB_TOKEN (TestLogin checks what the login stores)",
		"Build and push the image":                     "",
		"Package and push the chart":                   "",
		"Binaries, SHA256SUMS and the SBOM":            "",
		"Install cosign":                               "",
		"Sign the image, the chart and SHA256SUMS, attest the SBOM on the image": "skip: keyless signing needs GitHub's OIDC token, Fulcio and Rekor",
	},
	"release": {
		"Release notes from CHANGELOG.md": "skip: needs a section for the tag in CHANGELOG.md (hack/changelog's tests check notes)",
		"Create the GitHub release":       "skip: needs GitHub's API and the workflow's token",
	},
}

// TestReleaseWorkflow checks what the release workflow's jobs may do and
// where their references lead, without running anything: the workflow
// reads only, signing needs id-token: write, the release contents: write,
// and only those jobs have them; scripts run with pipefail; every step
// output and job output that a later step reads is one that a step writes;
// the release attaches the files the publish job built and signed, not a
// second build of them.
func TestReleaseWorkflow(t *testing.T) {
	w := readWorkflow(t)
	if want := map[string]string{"contents": "read"}; !maps.Equal(w.Permissions, want) {
		t.Errorf("release.yml's permissions: %v, want %v (jobs ask for more)", w.Permissions, want)
	}
	// GitHub runs shell: bash as bash --noprofile --norc -eo pipefail; its
	// default without it has no pipefail.
	if w.Defaults.Run.Shell != "bash" {
		t.Errorf("release.yml's defaults.run.shell: %q, want bash", w.Defaults.Run.Shell)
	}
	checkHandOver(t, w)
	for _, name := range []string{"check", "test", "publish", "release"} {
		if _, ok := w.Jobs[name]; !ok {
			t.Errorf("release.yml has no job %s", name)
		}
	}
	for name, j := range w.Jobs {
		want := map[string]string{}
		switch name {
		case "publish":
			want = map[string]string{"contents": "read", "packages": "write", "id-token": "write"}
		case "release":
			want = map[string]string{"contents": "write"}
		}
		for k, v := range j.Permissions {
			if want[k] != v {
				t.Errorf("job %s: permission %s: %s, want %q", name, k, v, want[k])
			}
		}
		for k, v := range want {
			if _, ok := j.Permissions[k]; !ok {
				t.Errorf("job %s: no permission %s, want %s", name, k, v)
			}
		}
	}

	// Every ${{ steps.ID.outputs.KEY }} names a step of the job with that
	// id whose script writes KEY to $GITHUB_OUTPUT; every ${{
	// needs.JOB.outputs.KEY }} an output of a job it needs.
	stepRef := regexp.MustCompile(`\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}`)
	needsRef := regexp.MustCompile(`\$\{\{\s*needs\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}`)
	for name, j := range w.Jobs {
		writes := map[string]bool{}
		for _, s := range j.Steps {
			for _, m := range regexp.MustCompile(`echo "([\w-]+)=.*>>\s*"\$GITHUB_OUTPUT"`).FindAllStringSubmatch(s.Run, -1) {
				writes[s.ID+"."+m[1]] = true
			}
		}
		var texts []string
		for _, v := range j.Outputs {
			texts = append(texts, v)
		}
		for _, s := range j.Steps {
			texts = append(texts, s.Run)
			for _, v := range s.Env {
				texts = append(texts, v)
			}
		}
		needs := fmt.Sprint(j.Needs)
		for _, text := range texts {
			for _, m := range stepRef.FindAllStringSubmatch(text, -1) {
				if !writes[m[1]+"."+m[2]] {
					t.Errorf("job %s reads %s, which no step writes", name, m[0])
				}
			}
			for _, m := range needsRef.FindAllStringSubmatch(text, -1) {
				if _, ok := w.Jobs[m[1]].Outputs[m[2]]; !ok || !strings.Contains(needs, m[1]) {
					t.Errorf("job %s reads %s, which is not an output of a job it needs", name, m[0])
				}
			}
		}
	}
}

// TestReleaseSteps runs the release workflow's steps that need no GitHub
// credentials (offline) as GitHub would, from the repository's root, with
// the registries of the workflow's env replaced by an in-memory one: the
// image and the chart are pushed and the references by digest the steps
// hand to signing name what the registry holds under the tag; the SBOM is
// valid; cosign installs; the binaries come with a SHA256SUMS that checks.
// make release-test runs it (RELEASE_STEPS=1): it builds the image, helm,
// cosign and four binaries.
func TestReleaseSteps(t *testing.T) {
	if os.Getenv("RELEASE_STEPS") == "" {
		t.Skip("RELEASE_STEPS is not set (make release-test sets it)")
	}
	srv := httptest.NewServer(registry.New(registry.Logger(stdlog.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	w := readWorkflow(t)
	const tag = "v0.0.0-releasetest"
	temp := t.TempDir()
	env := map[string]string{
		"GITHUB_REF_NAME":      tag,
		"GITHUB_ACTOR":         "release-test",
		"GITHUB_REPOSITORY":    "kcp-syncagent/api-syncagent",
		"GITHUB_SERVER_URL":    "https://github.com",
		"RUNNER_TEMP":          temp,
		"GITHUB_PATH":          filepath.Join(temp, "github-path"),
		"DOCKER_CONFIG":        t.TempDir(), // anonymous
		"HELM_REGISTRY_CONFIG": filepath.Join(t.TempDir(), "registry.json"),
		"HELM_PUSH_FLAGS":      "--plain-http",
	}
	for k, v := range w.Env {
		env[k] = v
	}
	env["IMAGE_REPOSITORY"] = host + "/kcp-syncagent/api-syncagent"
	env["CHART_REPOSITORY"] = "oci://" + host + "/kcp-syncagent/charts"

	outputs := map[string]string{} // job.step.key
	sbom := filepath.Join(temp, "sbom", "api-syncagent.cdx.json")
	for _, jobName := range []string{"publish", "release"} {
		j := w.Jobs[jobName]
		known := offline[jobName]
		for _, s := range j.Steps {
			if s.Uses != "" {
				continue // checkout and setup-go: this is the checkout
			}
			why, ok := known[s.Name]
			if !ok {
				t.Errorf("job %s: step %q is not in TestReleaseSteps' offline table: say whether it runs without GitHub", jobName, s.Name)
				continue
			}
			if why != "" {
				t.Logf("%s: %q: %s", jobName, s.Name, why)
				continue
			}
			if strings.Contains(s.Run, "${{") {
				t.Errorf("job %s: step %q has an expression in its script (pass it in env): the test cannot run it as GitHub would", jobName, s.Name)
				continue
			}
			stepEnv := merged(env, j.Env, s.Env)
			out := filepath.Join(t.TempDir(), "output")
			stepEnv["GITHUB_OUTPUT"] = out
			t.Logf("%s: running %q", jobName, s.Name)
			cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
			cmd.Dir = root
			cmd.Env = environ(stepEnv)
			log, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("job %s, step %q: %v\n%s", jobName, s.Name, err, tail(log, 40))
			}
			for k, v := range readOutputs(t, out) {
				outputs[jobName+"."+s.ID+"."+k] = v
			}
		}
	}

	// The image: the step's reference by digest is what the registry holds
	// under the tag, the multi-architecture index.
	imageRef := outputs["publish.image.ref"]
	checkPushed(t, imageRef, env["IMAGE_REPOSITORY"], env["IMAGE_REPOSITORY"]+":"+tag)
	if d, err := name.NewDigest(imageRef); err == nil {
		idx, err := remote.Index(d)
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var platforms []string
		for _, d := range m.Manifests {
			platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		}
		sort.Strings(platforms)
		if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
			t.Errorf("the pushed image's platforms: %v, want %v", platforms, want)
		}
	}

	// The chart: helm's artifact (its config media type), version without
	// the tag's v.
	chartRepo := strings.TrimPrefix(env["CHART_REPOSITORY"], "oci://") + "/api-syncagent"
	chartRef := outputs["publish.chart.ref"]
	checkPushed(t, chartRef, chartRepo, chartRepo+":"+strings.TrimPrefix(tag, "v"))
	if d, err := name.NewDigest(chartRef); err == nil {
		desc, err := remote.Get(d)
		if err != nil {
			t.Fatal(err)
		}
		var manifest struct {
			Config struct {
				MediaType string `json:"mediaType"`
			} `json:"config"`
		}
		if err := json.Unmarshal(desc.Manifest, &manifest); err != nil {
			t.Fatal(err)
		}
		if manifest.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" {
			t.Errorf("the pushed chart's config is %s, not a helm chart's", manifest.Config.MediaType)
		}
	}

	// The SBOM the signing step attests (and the release attaches).
	checkSBOM(t, sbom)

	// cosign is on the PATH of the following steps.
	if path, err := os.ReadFile(env["GITHUB_PATH"]); err != nil {
		t.Error(err)
	} else if out, err := exec.Command(filepath.Join(strings.TrimSpace(string(path)), "cosign"), "version").CombinedOutput(); err != nil {
		t.Errorf("the cosign step put %q on the PATH, where cosign does not run: %v\n%s", path, err, out)
	}

	checkDist(t, filepath.Join(temp, "dist"), tag)
}

func checkPushed(t *testing.T, ref, repository, tagged string) {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Errorf("%q is no reference by digest: %v", ref, err)
		return
	}
	if d.Context().String() != repository {
		t.Errorf("%s is in %s, want %s", ref, d.Context(), repository)
	}
	tag, err := name.NewTag(tagged)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag)
	if err != nil {
		t.Errorf("%s: %v", tagged, err)
		return
	}
	if desc.Digest.String() != d.DigestStr() {
		t.Errorf("the step hands %s to signing, the registry holds %s under %s", ref, desc.Digest, tagged)
	}
}

// checkDist: an archive per platform holding the binary and LICENSE,
// SHA256SUMS naming each with its hash, and this machine's binary runs.
func checkDist(t *testing.T, dir, version string) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Errorf("SHA256SUMS line %q", line)
			continue
		}
		names = append(names, file)
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Error(err)
			continue
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", file)
		}
		files := untar(t, data)
		if len(files) != 2 || files["LICENSE"] == nil || files["api-syncagent"] == nil {
			t.Errorf("%s holds %v, want api-syncagent and LICENSE", file, slices.Sorted(maps.Keys(files)))
		}
		if file == fmt.Sprintf("api-syncagent_%s_%s_%s.tar.gz", version, runtime.GOOS, runtime.GOARCH) {
			bin := filepath.Join(t.TempDir(), "api-syncagent")
			if err := os.WriteFile(bin, files["api-syncagent"], 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "preview", "--help").CombinedOutput()
			if !strings.Contains(string(out), "--published-resource") {
				t.Errorf("%s: api-syncagent preview --help: %v\n%s", file, err, out)
			}
		}
	}
	var want []string
	for _, p := range []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64"} {
		want = append(want, "api-syncagent_"+version+"_"+p+".tar.gz")
	}
	if slices.Sort(names); !slices.Equal(names, want) {
		t.Errorf("SHA256SUMS names %v, want %v", names, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want)+1 {
		t.Errorf("%s holds %d files, want the archives and SHA256SUMS", dir, len(entries))
	}
}

func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = body
	}
}

func readOutputs(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// merged merges environments, later ones winning.
func merged(envs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, e := range envs {
		for k, v := range e {
			out[k] = v
		}
	}
	return out
}

// environ is this process's environment with env over it, without what an
// outer make (make release-test) passes to the makes it starts: GitHub runs
// each step in a fresh shell.
func environ(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		if env[k] == "" {
			out = append(out, kv)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func tail(b []byte, lines int) string {
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// checkHandOver: the publish job uploads the directories of the binaries
// (with SHA256SUMS and its signature) and of the SBOM it attested; the
// release job downloads that artifact and builds neither again, so what a
// user downloads is what was signed.
func checkHandOver(t *testing.T, w workflow) {
	t.Helper()
	find := func(job, uses string) *step {
		for i, s := range w.Jobs[job].Steps {
			if strings.HasPrefix(s.Uses, uses+"@") {
				return &w.Jobs[job].Steps[i]
			}
		}
		t.Errorf("job %s has no step using %s", job, uses)
		return nil
	}
	up, down := find("publish", "actions/upload-artifact"), find("release", "actions/download-artifact")
	if up == nil || down == nil {
		return
	}
	if up.With["name"] == "" || up.With["name"] != down.With["name"] {
		t.Errorf("publish uploads artifact %q, release downloads %q", up.With["name"], down.With["name"])
	}
	var paths []string
	for _, line := range strings.Split(up.With["path"], "\n") {
		paths = append(paths, strings.TrimSpace(line))
	}
	for _, dir := range []string{"${{ runner.temp }}/dist/", "${{ runner.temp }}/sbom/"} {
		if !slices.Contains(paths, dir) {
			t.Errorf("publish does not upload %s", dir)
		}
	}
	if down.With["path"] != "${{ runner.temp }}" {
		t.Errorf("release downloads into %q, want ${{ runner.temp }} (where its steps read dist/ and sbom/)", down.With["path"])
	}
	var signs, uploads int
	for i, s := range w.Jobs["publish"].Steps {
		switch {
		case strings.Contains(s.Run, "cosign sign-blob") && strings.Contains(s.Run, `"$RUNNER_TEMP/dist/SHA256SUMS"`):
			signs = i
		case s.Uses == up.Uses:
			uploads = i
		}
	}
	if signs == 0 || signs > uploads {
		t.Error("publish does not sign $RUNNER_TEMP/dist/SHA256SUMS before it uploads the files")
	}
	for _, s := range w.Jobs["release"].Steps {
		if strings.Contains(s.Run, "make ") {
			t.Errorf("release job: step %q runs make; it attaches what publish built and signed", s.Name)
		}
	}
}
