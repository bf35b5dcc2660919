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
	"strings"
	"testing"
)

func TestRewrites(t *testing.T) {
	rs, err := ParseRewrites([]string{
		"https://shard-1.kcp.svc:6443=https://kcp.example.com:8443/shard-1/",
		"https://shard-2.kcp.svc:6443/=https://shard-2.example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"https://shard-1.kcp.svc:6443/services/apiexport/abc/things": "https://kcp.example.com:8443/shard-1/services/apiexport/abc/things",
		"https://shard-2.kcp.svc:6443/services/apiexport/abc/things": "https://shard-2.example.com/services/apiexport/abc/things",
		// Not at a path boundary, or another host: unchanged.
		"https://shard-1.kcp.svc:64430/services/apiexport/abc/things": "https://shard-1.kcp.svc:64430/services/apiexport/abc/things",
		"https://shard-3.kcp.svc:6443/services/apiexport/abc/things":  "https://shard-3.kcp.svc:6443/services/apiexport/abc/things",
	} {
		if got := rs.Apply(in); got != want {
			t.Errorf("Apply(%s) = %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"https://a", "shard-1=https://b", "https://a=ftp://b", "https://a=https://b?x=1", "https://a=/path"} {
		if _, err := ParseRewrites([]string{bad}); err == nil || !strings.Contains(err.Error(), "--endpoint-url-rewrite") {
			t.Errorf("ParseRewrites(%q) = %v, want an error", bad, err)
		}
	}
}
