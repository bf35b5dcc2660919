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

// Command image builds the agent's OCI image without a container engine
// (make image) and pushes it (make image-push). The image holds the static
// agent binary, CA certificates, and passwd/group entries of the non-root
// user the agent runs as; it has no shell and no package manager. Two
// builds of the same binaries with the same version, revision and creation
// time give the same digest.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// What every image of the agent has: the Dockerfile's image has the same
// user, entrypoint and labels (TestDockerfileIsEquivalent).
const (
	// BinaryPath is where the agent binary is, and the entrypoint.
	BinaryPath = "/usr/local/bin/api-syncagent"
	// User is the non-root user and group the agent runs as (distroless'
	// nonroot).
	User = "65532:65532"
	// CertificatesPath is the CA bundle (Go's default on Linux).
	CertificatesPath = "/etc/ssl/certs/ca-certificates.crt"
	// Source is the repository the image is built from.
	Source = "https://github.com/kcp-syncagent/api-syncagent"
	// Title is the image's title label.
	Title = "api-syncagent"
)

// The OCI annotation keys the image's labels use.
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelCreated  = "org.opencontainers.image.created"
)

// Options of an image build.
type Options struct {
	// Version and Revision (the commit) go into the labels.
	Version, Revision string
	// Created is the creation time of the image and of every file in it
	// (the commit's time, for reproducible builds).
	Created time.Time
	// Binaries maps an architecture (amd64, arm64) to the path of the
	// agent binary built for linux on it.
	Binaries map[string]string
}

// Labels are the image's labels.
func (o Options) Labels() map[string]string {
	return map[string]string{
		LabelTitle:    Title,
		LabelVersion:  o.Version,
		LabelRevision: o.Revision,
		LabelSource:   Source,
		LabelCreated:  o.Created.UTC().Format(time.RFC3339),
	}
}

// Build returns the multi-architecture image index and its images by
// architecture.
func Build(o Options) (v1.ImageIndex, map[string]v1.Image, error) {
	if len(o.Binaries) == 0 {
		return nil, nil, fmt.Errorf("no binaries")
	}
	if o.Version == "" {
		return nil, nil, fmt.Errorf("no version")
	}
	base, err := baseLayer(o.Created)
	if err != nil {
		return nil, nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	images := map[string]v1.Image{}
	archs := slices.Sorted(maps.Keys(o.Binaries))
	for _, arch := range archs {
		img, err := image(o, arch, base)
		if err != nil {
			return nil, nil, fmt.Errorf("linux/%s: %w", arch, err)
		}
		images[arch] = img
		platform := &v1.Platform{OS: "linux", Architecture: arch}
		if arch == "arm64" {
			platform.Variant = "v8" // as in the image's config
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: platform}})
	}
	return idx, images, nil
}

// image is the image of one architecture: the base layer and the binary's.
func image(o Options, arch string, base v1.Layer) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binaries[arch])
	if err != nil {
		return nil, err
	}
	binLayer, err := layer(o.Created, []entry{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, body: bin},
	})
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "api-syncagent base: passwd, group, CA certificates, /tmp, /home/nonroot", Comment: "hack/image"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "api-syncagent binary " + o.Version, Comment: "hack/image"}},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	if arch == "arm64" {
		cfg.Variant = "v8"
	}
	cfg.Created = v1.Time{Time: o.Created}
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=" + CertificatesPath},
		Labels:     o.Labels(),
	}
	return mutate.ConfigFile(img, cfg)
}

// baseLayer holds what the binary needs around it.
func baseLayer(created time.Time) (v1.Layer, error) {
	certs, err := caCertificates()
	if err != nil {
		return nil, err
	}
	return layer(created, []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CertificatesPath, "/"), mode: 0o644, body: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, owner: 65532},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
}

// caCertificates is a PEM bundle of the roots of the NSS trust store that
// carry no extra constraint (a distrust date cannot be written in PEM).
func caCertificates() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, fmt.Errorf("no CA certificates")
	}
	return buf.Bytes(), nil
}

type entry struct {
	name  string
	mode  int64
	dir   bool
	owner int
	body  []byte
}

// layer is a gzipped tar layer of the entries, in their order, with fixed
// times and owners (reproducible).
func layer(modTime time.Time, entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: modTime, Uid: e.owner, Gid: e.owner, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}
