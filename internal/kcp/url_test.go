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

import "testing"

func TestClusterFromURL(t *testing.T) {
	testcases := []struct {
		host    string
		want    string
		wantErr bool
	}{
		{host: "https://kcp.example.com/clusters/root:org", want: "root:org"},
		{host: "https://127.0.0.1:6443/clusters/2x4k9abc/", want: "2x4k9abc"},
		{host: "https://kcp.example.com/prefix/clusters/root", want: "root"},
		{host: "https://kcp.example.com", wantErr: true},
		{host: "https://kcp.example.com/clusters/", wantErr: true},
		{host: "https://kcp.example.com/clusters/a/clusters/b", wantErr: true},
		{host: "://bad", wantErr: true},
	}
	for _, tc := range testcases {
		t.Run(tc.host, func(t *testing.T) {
			got, err := ClusterFromURL(tc.host)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRetargetURL(t *testing.T) {
	testcases := []struct {
		host, cluster, want string
	}{
		{host: "https://kcp/clusters/root:org", cluster: "root:other", want: "https://kcp/clusters/root:other"},
		{host: "https://kcp/clusters/root:org/", cluster: "abc", want: "https://kcp/clusters/abc/"},
		{host: "https://kcp/x/clusters/root:org", cluster: "abc", want: "https://kcp/x/clusters/abc"},
	}
	for _, tc := range testcases {
		got, err := RetargetURL(tc.host, tc.cluster)
		if err != nil {
			t.Fatalf("RetargetURL(%q): %v", tc.host, err)
		}
		if got != tc.want {
			t.Errorf("RetargetURL(%q, %q) = %q, want %q", tc.host, tc.cluster, got, tc.want)
		}
	}
	if _, err := RetargetURL("https://kcp/", "x"); err == nil {
		t.Error("expected an error for a URL without /clusters/")
	}
}
