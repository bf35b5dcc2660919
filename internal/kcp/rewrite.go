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

package kcp

import (
	"fmt"
	"net/url"
	"strings"
)

// Rewrite replaces the beginning From of a virtual workspace URL with To
// (--endpoint-url-rewrite): kcp lists each shard's own URL in the
// APIExportEndpointSlice, which an agent outside kcp's network may not
// reach (kcp#3830).
type Rewrite struct{ From, To string }

// Rewrites are applied in order; the first whose From begins a URL (up to
// a path boundary) wins.
type Rewrites []Rewrite

// ParseRewrites parses "from=to" pairs of absolute http(s) URLs.
func ParseRewrites(pairs []string) (Rewrites, error) {
	var out Rewrites
	for _, pair := range pairs {
		from, to, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("--endpoint-url-rewrite %q: want from=to", pair)
		}
		for _, u := range []string{from, to} {
			parsed, err := url.Parse(u)
			if err != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Host == "" || parsed.RawQuery != "" || parsed.Fragment != "" {
				return nil, fmt.Errorf("--endpoint-url-rewrite %q: %q is not an absolute http(s) URL without a query", pair, u)
			}
		}
		out = append(out, Rewrite{From: strings.TrimSuffix(from, "/"), To: strings.TrimSuffix(to, "/")})
	}
	return out, nil
}

// Apply returns u rewritten by the first rewrite that matches it, or u.
func (rs Rewrites) Apply(u string) string {
	for _, r := range rs {
		rest, ok := strings.CutPrefix(u, r.From)
		if ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			return r.To + rest
		}
	}
	return u
}
