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
	"bufio"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var created = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// fakeBinaries writes a distinct stand-in binary per architecture.
func fakeBinaries(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, arch)
		if err := os.WriteFile(p, []byte("\x7fELF stand-in for linux/"+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		out[arch] = p
	}
	return out
}

func digest(t *testing.T, o Options) v1.Hash {
	t.Helper()
	idx, _, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBuildIsReproducible: the same inputs give the same index digest;
// another version, another binary or another time does not.
func TestBuildIsReproducible(t *testing.T) {
	bins := fakeBinaries(t)
	o := Options{Version: "v1.2.3", Revision: "abc", Created: created, Binaries: bins}
	first, second := digest(t, o), digest(t, o)
	if first != second {
		t.Fatalf("two builds of the same inputs: %s and %s", first, second)
	}
	other := o
	other.Version = "v1.2.4"
	if digest(t, other) == first {
		t.Error("another version gave the same digest")
	}
	other = o
	other.Created = created.Add(time.Second)
	if digest(t, other) == first {
		t.Error("another creation time gave the same digest")
	}
	if err := os.WriteFile(bins["arm64"], []byte("changed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if digest(t, o) == first {
		t.Error("another binary gave the same digest")
	}
}

// TestImage checks what a user of the image relies on, for every
// architecture: platform, entrypoint, user, labels, the binary, CA
// certificates, the non-root user's entries, and no shell.
func TestImage(t *testing.T) {
	o := Options{Version: "v1.2.3", Revision: "abc", Created: created, Binaries: fakeBinaries(t)}
	idx, _, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx, o.Labels(), func(arch string) []byte {
		b, err := os.ReadFile(o.Binaries[arch])
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// TestBuiltImage checks the image make image built (IMAGE_LAYOUT, set by
// make image-test) the same way, with the agent's real binaries.
func TestBuiltImage(t *testing.T) {
	dir := os.Getenv("IMAGE_LAYOUT")
	if dir == "" {
		t.Skip("IMAGE_LAYOUT is not set (make image-test sets it)")
	}
	idx, err := indexOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{LabelTitle: Title, LabelSource: Source, LabelVersion: os.Getenv("IMAGE_VERSION"), LabelRevision: os.Getenv("IMAGE_REVISION")}
	checkIndex(t, idx, want, nil)

	// The binary of this machine's architecture runs (it is static), and
	// says which version it is.
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform.Architecture != runtime.GOARCH {
			continue
		}
		if runtime.GOOS != "linux" {
			return // a linux binary: it runs on linux only
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "api-syncagent")
		if err := os.WriteFile(bin, contents(t, img)[BinaryPath].body, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--kcp-kubeconfig") {
			t.Errorf("the image's %s binary does not run: %v\n%s", runtime.GOARCH, err, out)
		}
		return
	}
	t.Errorf("the image has no linux/%s manifest", runtime.GOARCH)
}

func checkIndex(t *testing.T, idx v1.ImageIndex, labels map[string]string, binary func(arch string) []byte) {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s without a platform", d.Digest)
		}
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture {
			t.Errorf("%s: config says %s/%s", d.Platform, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != User {
			t.Errorf("%s: user %q, want %q", d.Platform, cfg.Config.User, User)
		}
		if !slices.Equal(cfg.Config.Entrypoint, []string{BinaryPath}) || len(cfg.Config.Cmd) != 0 {
			t.Errorf("%s: entrypoint %q cmd %q, want [%s] and none", d.Platform, cfg.Config.Entrypoint, cfg.Config.Cmd, BinaryPath)
		}
		for k, v := range labels {
			if got := cfg.Config.Labels[k]; got != v || v == "" {
				t.Errorf("%s: label %s = %q, want %q (not empty)", d.Platform, k, got, v)
			}
		}
		files := contents(t, img)
		bin, ok := files[BinaryPath]
		if !ok || bin.mode&0o111 == 0 {
			t.Errorf("%s: no executable %s", d.Platform, BinaryPath)
		} else if binary != nil && string(bin.body) != string(binary(d.Platform.Architecture)) {
			t.Errorf("%s: %s is not the %s binary", d.Platform, BinaryPath, d.Platform.Architecture)
		}
		for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin/ash", "/usr/bin/sh", "/bin/busybox"} {
			if _, ok := files[shell]; ok {
				t.Errorf("%s: has a shell %s", d.Platform, shell)
			}
		}
		for p, f := range files {
			if p != BinaryPath && !f.dir && f.mode&0o111 != 0 {
				t.Errorf("%s: executable %s besides the agent", d.Platform, p)
			}
		}
		if n := certificates(t, files[CertificatesPath].body); n < 100 {
			t.Errorf("%s: %d CA certificates in %s, want the trust store's (over 100)", d.Platform, n, CertificatesPath)
		}
		if !strings.Contains(string(files["/etc/passwd"].body), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot user 65532", d.Platform)
		}
		if f := files["/tmp"]; !f.dir || f.mode&0o1777 != 0o1777 {
			t.Errorf("%s: /tmp is not a world-writable sticky directory", d.Platform)
		}
	}
	slices.Sort(platforms)
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}
}

type file struct {
	dir  bool
	mode int64
	body []byte
}

// contents is the image's file system, flattened (no whiteouts here).
func contents(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]file{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimSuffix(strings.TrimPrefix(h.Name, "/"), "/")] = file{dir: h.Typeflag == tar.TypeDir, mode: h.Mode, body: body}
	}
}

func certificates(t *testing.T, bundle []byte) int {
	t.Helper()
	n := 0
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return n
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Fatalf("certificate %d: %v", n, err)
		}
		n++
	}
}

// TestBuildCommand: build writes an OCI layout with the index and a
// docker-loadable tarball per architecture, all tagged with the image
// reference.
func TestBuildCommand(t *testing.T) {
	bins := fakeBinaries(t)
	out := t.TempDir()
	const ref = "registry.example/team/api-syncagent:v1.2.3"
	args := []string{"build", "-out", out, "-image", ref, "-version", "v1.2.3", "-revision", "abc", "-created", "1700000000"}
	for arch, p := range bins {
		args = append(args, "-binary", arch+"="+p)
	}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	idx, err := indexOf(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Fatalf("index of %d manifests, want 2", len(m.Manifests))
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	for arch := range bins {
		img, err := tarball.ImageFromPath(filepath.Join(out, "api-syncagent-"+arch+".tar"), &tag)
		if err != nil {
			t.Fatalf("%s tarball: %v", arch, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != arch || cfg.Created.Unix() != 1700000000 {
			t.Errorf("%s tarball: architecture %s, created %v", arch, cfg.Architecture, cfg.Created)
		}
	}
	if err := run([]string{"build", "-out", out, "-image", ref, "-version", "v1", "-binary", "amd64"}); err == nil {
		t.Error("a -binary without a path was accepted")
	}
}

// TestDockerfileIsEquivalent: the Dockerfile (for people with a container
// engine) gives the image the same user, entrypoint and labels.
func TestDockerfileIsEquivalent(t *testing.T) {
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var user, entrypoint string
	labels := map[string]bool{}
	inFinalStage := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "FROM":
			inFinalStage = !strings.Contains(rest, " AS ")
		case "USER":
			user = rest
		case "ENTRYPOINT":
			entrypoint = rest
		case "LABEL":
			if inFinalStage {
				for _, kv := range strings.Fields(strings.TrimSuffix(rest, "\\")) {
					k, _, _ := strings.Cut(kv, "=")
					labels[k] = true
				}
			}
		default:
			if inFinalStage && strings.HasPrefix(line, "org.opencontainers.") {
				k, _, _ := strings.Cut(strings.TrimSuffix(line, "\\"), "=")
				labels[strings.TrimSpace(k)] = true
			}
		}
	}
	if user != User {
		t.Errorf("Dockerfile USER %q, want %q", user, User)
	}
	if entrypoint != `["`+BinaryPath+`"]` {
		t.Errorf("Dockerfile ENTRYPOINT %s, want [%q]", entrypoint, BinaryPath)
	}
	for k := range (Options{}).Labels() {
		if !labels[k] {
			t.Errorf("Dockerfile sets no label %s", k)
		}
	}
}

// TestLogin: the credentials login stores are the ones push finds.
func TestLogin(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	if err := login([]string{"-registry", "registry.example", "-username", "bot"}, strings.NewReader("s3cret\n")); err != nil {
		t.Fatal(err)
	}
	reg, err := name.NewRegistry("registry.example")
	if err != nil {
		t.Fatal(err)
	}
	a, err := authn.DefaultKeychain.Resolve(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Username != "bot" || cfg.Password != "s3cret" {
		t.Errorf("push would use %q/%q, want bot/s3cret", cfg.Username, cfg.Password)
	}
	if err := login([]string{"-registry", "registry.example", "-username", "bot"}, strings.NewReader("")); err == nil {
		t.Error("an empty password was accepted")
	}
}

// TestPushToARegistry: push sends the index of a built layout to a
// registry (an in-memory one on 127.0.0.1), from which it comes back with
// the same digest and both platforms.
func TestPushToARegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(stdlog.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: anonymous

	bins := fakeBinaries(t)
	out := t.TempDir()
	args := []string{"build", "-out", out, "-image", "local/api-syncagent:dev", "-version", "v1.2.3", "-revision", "abc"}
	for arch, p := range bins {
		args = append(args, "-binary", arch+"="+p)
	}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	ref := host + "/team/api-syncagent:v1.2.3"
	digestFile := filepath.Join(t.TempDir(), "pushed")
	if err := run([]string{"push", "-layout", filepath.Join(out, "oci"), "-image", ref, "-digest-file", digestFile}); err != nil {
		t.Fatal(err)
	}
	local, err := indexOf(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := remote.Index(tag)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := local.Digest()
	got, _ := pushed.Digest()
	if want != got {
		t.Errorf("pushed index %s, built %s", got, want)
	}
	m, err := pushed.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Errorf("the pushed index has %d manifests, want 2", len(m.Manifests))
	}

	// The digest file names the pushed index by digest (what the release
	// signs), in the repository it was pushed to.
	data, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := host + "/team/api-syncagent@" + got.String() + "\n"; string(data) != want {
		t.Errorf("digest file %q, want %q", data, want)
	}
	byDigest, err := name.NewDigest(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if idx, err := remote.Index(byDigest); err != nil {
		t.Errorf("the digest file's reference: %v", err)
	} else if d, _ := idx.Digest(); d != want {
		t.Errorf("the digest file's reference is %s, want the built index %s", d, want)
	}
}

// TestPushChecksWhatTheRegistryHolds: when the registry serves another
// manifest under the tag after the push (someone pushed over it), push
// fails and writes no digest file, so the release signs nothing it did not
// push.
func TestPushChecksWhatTheRegistryHolds(t *testing.T) {
	reg := registry.New(registry.Logger(stdlog.New(io.Discard, "", 0)))
	other := "sha256:" + strings.Repeat("0", 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/manifests/v1.2.3") {
			w.Header().Set("Content-Type", string(types.OCIImageIndex))
			w.Header().Set("Docker-Content-Digest", other)
			w.Header().Set("Content-Length", "2")
			w.WriteHeader(http.StatusOK)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	out := t.TempDir()
	args := []string{"build", "-out", out, "-image", "local/api-syncagent:dev", "-version", "v1.2.3"}
	for arch, p := range fakeBinaries(t) {
		args = append(args, "-binary", arch+"="+p)
	}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	digestFile := filepath.Join(t.TempDir(), "pushed")
	ref := strings.TrimPrefix(srv.URL, "http://") + "/team/api-syncagent:v1.2.3"
	err := run([]string{"push", "-layout", filepath.Join(out, "oci"), "-image", ref, "-digest-file", digestFile})
	if err == nil || !strings.Contains(err.Error(), "is "+other+" after the push") {
		t.Errorf("push over a tag the registry serves as another manifest: %v", err)
	}
	if _, err := os.Stat(digestFile); !os.IsNotExist(err) {
		t.Errorf("a digest file was written: %v", err)
	}
}
