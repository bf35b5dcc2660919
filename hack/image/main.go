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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/types"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const usage = `usage:
  image build -out DIR -image REF -version V [-revision SHA] [-created RFC3339|UNIX] -binary ARCH=PATH...
      writes DIR/oci (an OCI image layout holding the multi-architecture index, tagged REF)
      and DIR/api-syncagent-ARCH.tar (one image per architecture, tagged REF, for docker load
      or kind load image-archive); prints the index digest
  image push -layout DIR/oci -image REF [-digest-file FILE]
      pushes the index of the layout to REF with the credentials of ~/.docker/config.json;
      -digest-file: writes REPOSITORY@DIGEST of what the registry then holds under REF (the
      index pushed; checked) to FILE, for signing by digest
  image login -registry HOST -username USER < password
      stores the credentials in ~/.docker/config.json ($DOCKER_CONFIG), where push and helm read them`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "build":
		return build(args[1:])
	case "push":
		return push(args[1:])
	case "login":
		return login(args[1:], os.Stdin)
	default:
		return errors.New(usage)
	}
}

type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	arch, path, ok := strings.Cut(v, "=")
	if !ok || arch == "" || path == "" {
		return fmt.Errorf("want ARCH=PATH, got %q", v)
	}
	b[arch] = path
	return nil
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	out := fs.String("out", "", "output directory")
	ref := fs.String("image", "", "the image reference the outputs are tagged with")
	o := Options{Binaries: binaries{}}
	fs.StringVar(&o.Version, "version", "", "version (label)")
	fs.StringVar(&o.Revision, "revision", "", "commit (label)")
	created := fs.String("created", "0", "creation time: RFC 3339 or seconds since the epoch")
	fs.Var(binaries(o.Binaries), "binary", "ARCH=PATH of a linux binary (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *ref == "" {
		return errors.New(usage)
	}
	tag, err := name.NewTag(*ref)
	if err != nil {
		return err
	}
	if o.Created, err = parseTime(*created); err != nil {
		return err
	}
	idx, images, err := Build(o)
	if err != nil {
		return err
	}
	dir := filepath.Join(*out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return err
	}
	for arch, img := range images {
		if err := tarball.WriteToFile(filepath.Join(*out, "api-syncagent-"+arch+".tar"), tag, img); err != nil {
			return err
		}
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", tag, digest)
	return nil
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	var sec int64
	if _, err := fmt.Sscanf(s, "%d", &sec); err != nil {
		return time.Time{}, fmt.Errorf("creation time %q: want RFC 3339 or seconds since the epoch", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// indexOf returns the one index an image layout written by build holds.
func indexOf(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	outer, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d manifests, want the one index of make image", dir, len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI layout written by build")
	ref := fs.String("image", "", "where to push")
	digestFile := fs.String("digest-file", "", "where to write REPOSITORY@DIGEST of the pushed index")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *ref == "" {
		return errors.New(usage)
	}
	tag, err := name.NewTag(*ref)
	if err != nil {
		return err
	}
	idx, err := indexOf(*dir)
	if err != nil {
		return err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if err := remote.WriteIndex(tag, idx, auth); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", tag, digest)
	if *digestFile == "" {
		return nil
	}
	// What gets signed is what the registry serves under the tag: ask it,
	// rather than trusting the local digest.
	desc, err := remote.Head(tag, auth)
	if err != nil {
		return fmt.Errorf("reading %s back: %w", tag, err)
	}
	if desc.Digest != digest {
		return fmt.Errorf("%s is %s after the push of %s (pushed over by someone else?)", tag, desc.Digest, digest)
	}
	return os.WriteFile(*digestFile, []byte(tag.Context().Digest(digest.String()).String()+"\n"), 0o644)
}

// login stores a registry's credentials in the docker configuration (the
// credential helper it names, if any), as docker login would.
func login(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	registry := fs.String("registry", "", "registry host, e.g. ghcr.io")
	user := fs.String("username", "", "user name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *registry == "" || *user == "" {
		return errors.New(usage)
	}
	password, err := io.ReadAll(stdin)
	if err != nil {
		return err
	}
	secret := strings.TrimRight(string(password), "\r\n")
	if secret == "" {
		return errors.New("login: no password on standard input")
	}
	cf, err := config.Load(os.Getenv("DOCKER_CONFIG"))
	if err != nil {
		return err
	}
	if err := cf.GetCredentialsStore(*registry).Store(types.AuthConfig{ServerAddress: *registry, Username: *user, Password: secret}); err != nil {
		return err
	}
	if err := cf.Save(); err != nil {
		return err
	}
	fmt.Printf("logged in to %s as %s (%s)\n", *registry, *user, cf.GetFilename())
	return nil
}
