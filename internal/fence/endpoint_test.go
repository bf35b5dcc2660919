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

package fence

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestEndpointFence: a write whose request carries an endpoint's fence is
// sent only while that fence and the replica's (if any) are open; reads
// and writes without an endpoint fence are not held back by it.
func TestEndpointFence(t *testing.T) {
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sent++ }))
	defer srv.Close()
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	leader := New(10*time.Second, logr.Discard())
	leader.now = c.now
	endpoint := NewEndpoint(10*time.Second, logr.Discard())
	endpoint.now = c.now
	noLeader := &http.Client{Transport: (*Fence)(nil).Wrap(http.DefaultTransport)}
	withLeader := &http.Client{Transport: leader.Wrap(http.DefaultTransport)}
	steps := []struct {
		name     string
		do       func()
		client   *http.Client
		method   string
		endpoint bool
		want     bool
	}{
		{"no election, no endpoint fence", func() {}, noLeader, http.MethodPost, false, true},
		{"no election, endpoint not held", func() {}, noLeader, http.MethodPost, true, false},
		{"no election, a read while the endpoint is not held", func() {}, noLeader, http.MethodGet, true, true},
		{"no election, endpoint held", func() { endpoint.Written(c.now(), true) }, noLeader, http.MethodPatch, true, true},
		{"leader not renewed, endpoint held", func() {}, withLeader, http.MethodPatch, true, false},
		{"both held", func() { leader.Written(c.now(), true) }, withLeader, http.MethodPatch, true, true},
		{"endpoint given up", func() { endpoint.Written(c.now(), false) }, withLeader, http.MethodDelete, true, false},
		{"endpoint given up, a write for no endpoint", func() {}, withLeader, http.MethodDelete, false, true},
		{"endpoint held again, then not renewed in time", func() {
			endpoint.Written(c.now(), true)
			leader.Written(c.now().Add(5*time.Second), true)
			c.advance(10 * time.Second)
		}, withLeader, http.MethodPut, true, false},
	}
	for _, s := range steps {
		s.do()
		ctx := context.Background()
		if s.endpoint {
			ctx = WithEndpoint(ctx, endpoint)
		}
		sent = 0
		req, err := http.NewRequestWithContext(ctx, s.method, srv.URL+"/api/v1/namespaces/default/secrets", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.client.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		if got := sent == 1; got != s.want {
			t.Fatalf("%s: sent=%v, want %v (err %v)", s.name, got, s.want, err)
		}
		if !s.want && !errors.Is(err, ErrLeaseNotRenewed) {
			t.Fatalf("%s: err = %v, want an ErrLeaseNotRenewed", s.name, err)
		}
		if got := Closed(ctx); s.endpoint && got == (endpoint.Check() == nil) {
			t.Fatalf("%s: Closed = %v with the endpoint fence's Check = %v", s.name, got, endpoint.Check())
		}
	}
	if !errors.Is(endpoint.Check(), ErrEndpointLeaseNotRenewed) || errors.Is(leader.Check(), ErrEndpointLeaseNotRenewed) {
		t.Error("the endpoint fence's refusal is not told apart from the leader's")
	}
}

// TestRefusing: the fence of an endpoint not served refuses every write.
func TestRefusing(t *testing.T) {
	f := Refusing()
	if err := f.Check(); !errors.Is(err, ErrEndpointLeaseNotRenewed) {
		t.Errorf("Check = %v, want ErrEndpointLeaseNotRenewed", err)
	}
	if !Closed(WithEndpoint(context.Background(), f)) {
		t.Error("a context with a refusing fence is not closed")
	}
}
