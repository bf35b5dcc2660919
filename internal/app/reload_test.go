package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	for _, tc := range []struct {
		name      string
		load      func() (*rest.Config, error)
		check     func(context.Context, *rest.Config) (string, error)
		noToken   bool
		wantToken string
		wantErr   string
	}{
		{name: "a new token that reaches the workspace", wantToken: "new"},
		{name: "the same token", load: func() (*rest.Config, error) { c := base(); c.BearerToken = "old"; return c, nil }, wantToken: "old", wantErr: "unchanged"},
		{name: "a file that does not parse", load: func() (*rest.Config, error) { return nil, errors.New("yaml: line 3: bad") }, wantToken: "old", wantErr: "yaml"},
		{name: "another server", load: func() (*rest.Config, error) { c := base(); c.Host = "https://elsewhere"; return c, nil }, wantToken: "old", wantErr: "server URL changed"},
		{name: "another CA", load: func() (*rest.Config, error) { c := base(); c.CAData = []byte("other"); return c, nil }, wantToken: "old", wantErr: "TLS settings changed"},
		{name: "a token kcp refuses", check: func(context.Context, *rest.Config) (string, error) { return "", errors.New("Unauthorized") }, wantToken: "old", wantErr: "do not reach the workspace"},
		{name: "another workspace", check: func(context.Context, *rest.Config) (string, error) { return "other", nil }, wantToken: "old", wantErr: "points to workspace other"},
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
				r.load = func() (*rest.Config, error) { return base(), nil }
			}
			if r.check == nil {
				r.check = func(_ context.Context, cfg *rest.Config) (string, error) {
					if cfg.BearerToken != "new" {
						t.Errorf("checked with token %q, want the new one", cfg.BearerToken)
					}
					return "abc", nil
				}
			}
			if !tc.noToken {
				r.token = &liveToken{token: "old"}
			}
			err := r.applyErr(t.Context())
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

// TestReloaderReports: a rejected change sets the failure gauge and a
// Warning Event; an applied one clears it.
func TestReloaderReports(t *testing.T) {
	var events []string
	r := &reloader{
		load:    func() (*rest.Config, error) { return nil, errors.New("bad file") },
		current: &rest.Config{}, cluster: "abc", token: &liveToken{token: "old"}, log: logr.Discard(),
		event: func(eventType, reason, _ string) { events = append(events, eventType+" "+reason) },
	}
	failures := testutil.ToFloat64(metrics.KubeconfigReloads.WithLabelValues("failure"))
	r.apply(t.Context(), "v1")
	if got := testutil.ToFloat64(metrics.KubeconfigReloadFailed); got != 1 {
		t.Errorf("reload failed gauge = %v, want 1", got)
	}
	if got := testutil.ToFloat64(metrics.KubeconfigReloads.WithLabelValues("failure")); got != failures+1 {
		t.Errorf("failures = %v, want %v", got, failures+1)
	}
	r.load = func() (*rest.Config, error) { return &rest.Config{BearerToken: "new"}, nil }
	r.check = func(context.Context, *rest.Config) (string, error) { return "abc", nil }
	r.apply(t.Context(), "v2")
	if got := testutil.ToFloat64(metrics.KubeconfigReloadFailed); got != 0 {
		t.Errorf("reload failed gauge = %v, want 0 after a good file", got)
	}
	if want := "Warning KcpKubeconfigReloadFailed,Normal KcpKubeconfigReloaded"; strings.Join(events, ",") != want {
		t.Errorf("events = %v, want %s", events, want)
	}
}
