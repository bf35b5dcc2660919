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
	"errors"
	"github.com/go-logr/logr"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time.
// clock is a fake clock; the fences' watchdogs read it from timers'
// goroutines.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestFenceTransitions: the fence's state after each step.
func TestFenceTransitions(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	type step struct {
		name  string
		do    func(f *Fence, c *clock)
		allow bool
	}
	steps := []step{
		{"a new replica holds nothing", func(*Fence, *clock) {}, false},
		{"acquired", func(f *Fence, c *clock) { f.Written(c.now(), true) }, true},
		{"9.9 s later", func(_ *Fence, c *clock) { c.advance(9900 * time.Millisecond) }, true},
		{"10 s after the renewal was sent", func(_ *Fence, c *clock) { c.advance(100 * time.Millisecond) }, false},
		{"renewed (sent 1 s ago)", func(f *Fence, c *clock) { f.Written(c.now().Add(-time.Second), true) }, true},
		{"an older renewal answered late changes nothing", func(f *Fence, c *clock) {
			f.Written(c.now().Add(-30*time.Second), true)
			c.advance(8500 * time.Millisecond)
		}, true},
		{"given up", func(f *Fence, c *clock) { f.Written(c.now(), false) }, false},
		{"acquired again", func(f *Fence, c *clock) { f.Written(c.now(), true) }, true},
		{"paused for a minute (the monotonic clock runs on)", func(_ *Fence, c *clock) { c.advance(time.Minute) }, false},
	}
	c := &clock{t: start}
	f := New(10*time.Second, logr.Discard())
	f.now = c.now
	for _, s := range steps {
		s.do(f, c)
		err := f.Check()
		if (err == nil) != s.allow {
			t.Fatalf("%s: Check() = %v, want allowed=%v", s.name, err, s.allow)
		}
		if err != nil && !errors.Is(err, ErrLeaseNotRenewed) {
			t.Fatalf("%s: %v does not wrap ErrLeaseNotRenewed", s.name, err)
		}
	}
}

// TestWrapRefusesWritesOnly: a fenced replica reads and records Events,
// and sends no other write.
func TestWrapRefusesWritesOnly(t *testing.T) {
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent = append(sent, r.Method+" "+r.URL.Path)
	}))
	defer srv.Close()
	f := New(10*time.Second, logr.Discard()) // never renewed: fenced
	client := &http.Client{Transport: f.Wrap(http.DefaultTransport)}
	tests := []struct {
		method, path string
		sent         bool
	}{
		{http.MethodGet, "/api/v1/namespaces/default/secrets", true},
		{http.MethodGet, "/clusters/abc/apis/example.com/v1/things?watch=true", true},
		{http.MethodPost, "/api/v1/namespaces/default/events", true},
		{http.MethodPatch, "/clusters/abc/api/v1/namespaces/default/events/x.1", true},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", true},
		{http.MethodPost, "/api/v1/namespaces/default/secrets", false},
		{http.MethodPut, "/apis/example.com/v1/namespaces/events/things/a", false},
		{http.MethodPatch, "/clusters/abc/apis/example.com/v1/namespaces/default/things/events", false},
		{http.MethodDelete, "/api/v1/namespaces/events", false},
		{http.MethodPut, "/clusters/abc/apis/example.com/v1/things/a/status", false},
		{http.MethodPost, "/services/apiexport/1abc/my-export/clusters/2def/api/v1/namespaces/default/events", true},
		{http.MethodPatch, "/services/apiexport/1abc/my-export/clusters/2def/apis/events.k8s.io/v1/namespaces/default/events/x", true},
		{http.MethodPost, "/prefix/clusters/root/api/v1/namespaces/default/events", true},
		{http.MethodPatch, "/services/apiexport/1abc/my-export/clusters/2def/apis/example.com/v1/namespaces/default/things/x", false},
		{http.MethodPatch, "/apis/example.com/v1/namespaces/n/events/x", false},
		{http.MethodPost, "/apis/calendar.example.com/v1/events", false},
		{http.MethodPost, "/clusters/x/api/v1/namespaces/clusters/secrets", false},
	}
	for _, tt := range tests {
		sent = nil
		req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		if got := len(sent) == 1; got != tt.sent {
			t.Errorf("%s %s: sent=%v, want %v (err %v)", tt.method, tt.path, got, tt.sent, err)
		}
		if !tt.sent && !errors.Is(err, ErrLeaseNotRenewed) {
			t.Errorf("%s %s: err = %v, want ErrLeaseNotRenewed", tt.method, tt.path, err)
		}
	}
}

// TestWriteAbandonedWhenTheFenceCloses: a write that passed the check but
// is still waiting to be sent when the fence closes never reaches the
// server.
func TestWriteAbandonedWhenTheFenceCloses(t *testing.T) {
	received := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { received <- struct{}{} }))
	defer srv.Close()
	f := New(300*time.Millisecond, logr.Discard())
	f.Written(time.Now(), true)
	slow := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		select { // dialling through a partition
		case <-time.After(2 * time.Second):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return http.DefaultTransport.RoundTrip(req)
	})
	client := &http.Client{Transport: f.Wrap(slow)}
	req, err := http.NewRequest(http.MethodPatch, srv.URL+"/api/v1/namespaces/default/secrets/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Do(req)
	if !errors.Is(err, ErrLeaseNotRenewed) {
		t.Errorf("err = %v, want ErrLeaseNotRenewed", err)
	}
	select {
	case <-received:
		t.Error("the write reached the server after the fence closed")
	case <-time.After(2500 * time.Millisecond):
	}
}

// TestResponseReadableAfterRoundTrip: the deadline of a write that was
// sent in time does not cut off the reading of its answer.
func TestResponseReadableAfterRoundTrip(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	f := New(time.Minute, logr.Discard())
	f.Written(time.Now(), true)
	client := &http.Client{Transport: f.Wrap(http.DefaultTransport)}
	resp, err := client.Post(srv.URL+"/api/v1/namespaces/default/secrets", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "ok" {
		t.Errorf("body = %q, %v", body, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestSlowWriteUnderARenewedLease: a write that takes longer than the
// renew deadline while the Lease keeps being renewed is not cut, and its
// answer can be read after the first deadline passed.
func TestSlowWriteUnderARenewedLease(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(500 * time.Millisecond) // an admission webhook
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	f := New(200*time.Millisecond, logr.Discard())
	f.Written(time.Now(), true)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the elector renews every 50 ms
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				f.Written(time.Now(), true)
			}
		}
	}()
	client := &http.Client{Transport: f.Wrap(http.DefaultTransport)}
	resp, err := client.Post(srv.URL+"/api/v1/namespaces/default/secrets", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, err := io.ReadAll(resp.Body); err != nil || string(body) != "ok" {
		t.Errorf("body = %q, %v", body, err)
	}
}

// TestBodyReadAfterAPauseIsRefused: found by the 30-minute soak (seed 31):
// a leader stopped (SIGSTOP) after a write passed the check but before
// the transport sent it went on sending it when resumed, 27 s after the
// lease ran out, as its watchdog fired in the same instant; the server got
// the whole request. The body is checked as the transport reads it.
func TestBodyReadAfterAPauseIsRefused(t *testing.T) {
	c := &clock{t: time.Now()}
	f := New(10*time.Second, logr.Discard())
	f.now = c.now
	f.Written(c.now(), true)
	sent := false
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		c.advance(time.Minute) // stopped between the check and the send
		if _, err := io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		sent = true
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(""))}, nil
	})
	req, err := http.NewRequest(http.MethodPatch, "http://127.0.0.1/apis/example.com/v1/namespaces/ws/things/x", strings.NewReader(`{"spec":{"color":"dark-green"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wrap(next).RoundTrip(req); !errors.Is(err, ErrLeaseNotRenewed) || sent {
		t.Errorf("err = %v, sent = %v; want the body refused and nothing sent", err, sent)
	}
}
