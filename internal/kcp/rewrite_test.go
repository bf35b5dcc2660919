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
