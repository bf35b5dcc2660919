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

// Package kcp holds what the agent needs to know about kcp outside of any
// controller: cluster URLs, the kcp API scheme and the start-up resolution of
// the workspace, APIExport and APIExportEndpointSlice.
package kcp

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
)

const clustersSegment = "/clusters/"

// ClusterFromURL returns the workspace (a logical cluster name or a path such
// as root:org) that a kcp URL points to. The URL must contain exactly one
// /clusters/<workspace> segment.
func ClusterFromURL(host string) (string, error) {
	u, err := url.Parse(host)
	if err != nil {
		return "", fmt.Errorf("failed to parse URL %q: %w", host, err)
	}
	if n := strings.Count(u.Path, clustersSegment); n != 1 {
		return "", fmt.Errorf("URL %q must contain exactly one %s<workspace> segment, found %d", host, clustersSegment, n)
	}
	rest := u.Path[strings.Index(u.Path, clustersSegment)+len(clustersSegment):]
	cluster, _, _ := strings.Cut(rest, "/")
	if cluster == "" {
		return "", fmt.Errorf("URL %q names no workspace after %s", host, clustersSegment)
	}
	return cluster, nil
}

// RetargetURL replaces the workspace of the single /clusters/<workspace>
// segment of a kcp URL.
func RetargetURL(host, cluster string) (string, error) {
	old, err := ClusterFromURL(host)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(host) // parsed fine above
	u.Path = strings.Replace(u.Path, clustersSegment+old, clustersSegment+cluster, 1)
	return u.String(), nil
}

// RetargetConfig returns a copy of cfg that points to another workspace.
func RetargetConfig(cfg *rest.Config, cluster string) (*rest.Config, error) {
	host, err := RetargetURL(cfg.Host, cluster)
	if err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.Host = host
	return c, nil
}
