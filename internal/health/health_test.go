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

package health

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestServer_endpoints(t *testing.T) {
	failing := errors.New("kcp unreachable")
	testcases := []struct {
		name       string
		checks     map[string]Check
		wantStatus int
		wantBody   []string
	}{
		{
			name:       "no checks is not ready",
			wantStatus: http.StatusInternalServerError,
			wantBody:   []string{"no readiness checks"},
		},
		{
			name:       "all checks pass",
			checks:     map[string]Check{"a": func(context.Context) error { return nil }, "b": func(context.Context) error { return nil }},
			wantStatus: http.StatusOK,
			wantBody:   []string{"[+] a ok", "[+] b ok"},
		},
		{
			name:       "one failing check fails readiness and is named",
			checks:     map[string]Check{"a": func(context.Context) error { return nil }, "kcp": func(context.Context) error { return failing }},
			wantStatus: http.StatusInternalServerError,
			wantBody:   []string{"[+] a ok", "[-] kcp failed: kcp unreachable"},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer()
			for n, c := range tc.checks {
				s.AddReadyCheck(n, c)
			}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()

			resp, err := http.Get(srv.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			buf := new(strings.Builder)
			_, _ = io.Copy(buf, resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d; body:\n%s", resp.StatusCode, tc.wantStatus, buf)
			}
			for _, w := range tc.wantBody {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("body does not contain %q:\n%s", w, buf)
				}
			}

			live, err := http.Get(srv.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			live.Body.Close()
			if live.StatusCode != http.StatusOK {
				t.Errorf("/healthz = %d, want 200", live.StatusCode)
			}
		})
	}
}

func TestCached_reusesResultWithinTTL(t *testing.T) {
	calls := 0
	c := Cached(time.Hour, func(context.Context) error { calls++; return nil })
	for range 3 {
		if err := c(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("calls = %d, want 1", calls)
	}
	c = Cached(0, func(context.Context) error { calls++; return nil })
	_ = c(context.Background())
	_ = c(context.Background())
	if calls != 3 {
		t.Errorf("calls = %d, want 3 with a zero TTL", calls)
	}
}

func TestFlag(t *testing.T) {
	f := NewFlag("not yet")
	if err := f.Check(context.Background()); err == nil || err.Error() != "not yet" {
		t.Fatalf("unset flag: err = %v", err)
	}
	f.Set()
	if err := f.Check(context.Background()); err != nil {
		t.Fatalf("set flag: err = %v", err)
	}
}
