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
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"k8s.io/client-go/rest"

	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
)

// TestLiveTokenIsSentAndSwapped: every client built from the config sends
// the live token, and a new one from the next request on.
func TestLiveTokenIsSentAndSwapped(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, BearerToken: "old"}
	token := useLiveToken(cfg)
	if token == nil || cfg.BearerToken != "" {
		t.Fatalf("the token was not moved into the live token (config token %q)", cfg.BearerToken)
	}
	copied := rest.CopyConfig(cfg) // as every client of the agent is built
	get := func() {
		t.Helper()
		c, err := rest.HTTPClientFor(copied)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()
	token.set("new")
	get()
	if want := []string{"Bearer old", "Bearer new"}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("Authorization headers = %v, want %v", seen, want)
	}
	if useLiveToken(&rest.Config{BearerTokenFile: "/t", BearerToken: "x"}) != nil {
		t.Error("a token file (client-go re-reads it) was replaced by a live token")
	}
}

func TestReloaderApply(t *testing.T) {
	base := func() *rest.Config {
		return &rest.Config{Host: "https://kcp/clusters/root:org", BearerToken: "new", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}
	}
	with := func(mutate func(*rest.Config)) func([]byte) (*rest.Config, error) {
		return func([]byte) (*rest.Config, error) { c := base(); mutate(c); return c, nil }
	}
	for _, tc := range []struct {
		name      string
		load      func([]byte) (*rest.Config, error)
		check     func(context.Context, *rest.Config) (string, string, error)
		noToken   bool
		wantToken string
		wantErr   string
	}{
		{name: "a new token that reaches the workspace", wantToken: "new"},
		{name: "the same token", load: with(func(c *rest.Config) { c.BearerToken = "old" }), wantToken: "old", wantErr: "unchanged"},
		{name: "a file that does not parse", load: func([]byte) (*rest.Config, error) { return nil, errors.New("yaml: line 3: bad") }, wantToken: "old", wantErr: "yaml"},
		{name: "another server", load: with(func(c *rest.Config) { c.Host = "https://elsewhere" }), wantToken: "old", wantErr: "server URL changed"},
		{name: "another CA", load: with(func(c *rest.Config) { c.CAData = []byte("other") }), wantToken: "old", wantErr: "TLS settings changed"},
		{name: "impersonation added", load: with(func(c *rest.Config) { c.Impersonate.UserName = "admin" }), wantToken: "old", wantErr: "identity or proxy settings changed"},
		{name: "a token kcp refuses", check: func(context.Context, *rest.Config) (string, string, error) {
			return "", "", fmt.Errorf("%w: Unauthorized", errDenied)
		}, wantToken: "old", wantErr: "do not reach the workspace"},
		{name: "kcp does not answer", check: func(context.Context, *rest.Config) (string, string, error) {
			return "", "", errors.New("connection refused")
		}, wantToken: "old", wantErr: "kcp could not be asked"},
		{name: "another workspace", check: func(context.Context, *rest.Config) (string, string, error) { return "other", "u", nil }, wantToken: "old", wantErr: "points to workspace other"},
		{name: "started without a token", noToken: true, wantErr: "restart the agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &reloader{
				load:    tc.load,
				check:   tc.check,
				current: &rest.Config{Host: "https://kcp/clusters/root:org", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}},
				cluster: "abc",
				log:     logr.Discard(),
			}
			if r.load == nil {
				r.load = func([]byte) (*rest.Config, error) { return base(), nil }
			}
			if r.check == nil {
				r.check = func(_ context.Context, cfg *rest.Config) (string, string, error) {
					if cfg.BearerToken != "new" {
						t.Errorf("checked with token %q, want the new one", cfg.BearerToken)
					}
					return "abc", "u", nil
				}
			}
			if !tc.noToken {
				r.token = &liveToken{token: "old"}
			}
			_, err := r.applyErr(t.Context(), nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("applyErr = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("applyErr = %v, want an error containing %q", err, tc.wantErr)
			}
			if r.token != nil && r.token.get() != tc.wantToken {
				t.Errorf("token in use = %q, want %q", r.token.get(), tc.wantToken)
			}
		})
	}
}

// TestReloaderPolls: what the polls of changed content do, in order: a
// check kcp does not answer is reported once and tried again with
// backoff (not before), then applied; a rejected file is reported once
// and not checked again; content with the token in use is quiet (also
// at the first poll, which compares with the token the agent started
// with).
func TestReloaderPolls(t *testing.T) {
	now := time.Unix(1000, 0)
	var events []string
	checks, reachable := 0, false
	r := &reloader{
		load: func(content []byte) (*rest.Config, error) {
			if string(content) == "broken" {
				return nil, errors.New("bad file")
			}
			return &rest.Config{BearerToken: string(content)}, nil
		},
		check: func(context.Context, *rest.Config) (string, string, error) {
			checks++
			if !reachable {
				return "", "", errors.New("connection refused")
			}
			return "abc", "user-2", nil
		},
		current: &rest.Config{}, cluster: "abc", token: &liveToken{token: "old"}, log: logr.Discard(),
		event: func(eventType, reason, msg string) { events = append(events, eventType+" "+reason) },
		now:   func() time.Time { return now },
	}
	failures := testutil.ToFloat64(metrics.KubeconfigReloads.WithLabelValues("failure"))
	successes := testutil.ToFloat64(metrics.KubeconfigReloads.WithLabelValues("success"))

	r.poll(t.Context(), []byte("old")) // the first poll: the token in use
	r.poll(t.Context(), []byte("new")) // kcp does not answer
	now = now.Add(time.Second)
	r.poll(t.Context(), []byte("new")) // too early to try again
	if checks != 1 || testutil.ToFloat64(metrics.KubeconfigReloadFailed) != 1 {
		t.Fatalf("checks = %d, failed gauge = %v; want 1 check and the failure reported", checks, testutil.ToFloat64(metrics.KubeconfigReloadFailed))
	}
	now = now.Add(kubeconfigRetryMin)
	r.poll(t.Context(), []byte("new")) // still not
	now = now.Add(2 * kubeconfigRetryMin)
	reachable = true
	r.poll(t.Context(), []byte("new")) // applied
	if r.token.get() != "new" || checks != 3 || testutil.ToFloat64(metrics.KubeconfigReloadFailed) != 0 {
		t.Fatalf("token %q after %d checks, failed gauge %v; want the new token after 3 and the gauge cleared", r.token.get(), checks, testutil.ToFloat64(metrics.KubeconfigReloadFailed))
	}
	r.poll(t.Context(), []byte("broken")) // rejected
	r.done = nil                          // as if the file changed back and forth
	r.poll(t.Context(), []byte("new"))    // the token in use: quiet, clears the gauge
	if got := testutil.ToFloat64(metrics.KubeconfigReloads.WithLabelValues("failure")) - failures; got != 2 {
		t.Errorf("failures counted = %v, want 2 (the first unanswered check, the broken file)", got)
	}
	if got := testutil.ToFloat64(metrics.KubeconfigReloads.WithLabelValues("success")) - successes; got != 1 {
		t.Errorf("successes counted = %v, want 1", got)
	}
	if want := "Warning KcpKubeconfigReloadFailed,Normal KcpKubeconfigReloaded,Warning KcpKubeconfigReloadFailed"; strings.Join(events, ",") != want {
		t.Errorf("events = %v, want %s", events, want)
	}
	if testutil.ToFloat64(metrics.KubeconfigReloadFailed) != 0 {
		t.Error("the failed gauge stayed set after the file went back to the token in use")
	}
}
