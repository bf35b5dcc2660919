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

package app

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kcp-syncagent/api-syncagent/internal/options"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: kcp
  cluster:
    server: https://127.0.0.1:6443/clusters/root:org
contexts:
- name: kcp
  context: {cluster: kcp, user: agent}
current-context: kcp
users:
- name: agent
  user: {token: abc}
`

// TestKcpConfigSharesOneRateLimiter: --kcp-qps bounds the agent's
// requests to kcp as a whole: every client made from the config or a copy
// (the provider's per-workspace clients) draws from one limiter.
func TestKcpConfigSharesOneRateLimiter(t *testing.T) {
	o := options.New()
	o.KcpQPS, o.KcpBurst = 7, 9
	cfg, err := kcpConfigFrom(o, []byte(testKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RateLimiter == nil || cfg.RateLimiter.QPS() != 7 {
		t.Fatalf("rate limiter %v, want one of 7 QPS", cfg.RateLimiter)
	}
	workspace := rest.CopyConfig(cfg)
	workspace.Host += "/clusters/other"
	if workspace.RateLimiter != cfg.RateLimiter {
		t.Error("a copy of the config has a limiter of its own")
	}
	for range 9 {
		if !cfg.RateLimiter.TryAccept() {
			t.Fatal("the burst of 9 was not granted")
		}
	}
	if workspace.RateLimiter.TryAccept() {
		t.Error("a copy's client got a request beyond the shared burst")
	}
}

// TestLeaseHasItsOwnRateLimiter: Lease renewals never wait behind the
// sync's requests in the service side's shared limiter.
func TestLeaseHasItsOwnRateLimiter(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	limit(cfg, 5, 10)
	lock, err := newLeaderLock(cfg, "agent-ns", "syncagent.a", "me", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := lock.client.CoordinationV1().RESTClient().GetRateLimiter()
	if got == nil || got == cfg.RateLimiter {
		t.Fatalf("the Lease's client limiter %v is the shared one (or none)", got)
	}
	if got.QPS() != 5 {
		t.Errorf("the Lease's limit is %v QPS, want the flag's 5", got.QPS())
	}
}
