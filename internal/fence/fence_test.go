package fence

import (
	"errors"
	"github.com/go-logr/logr"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

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
		{"acquired", func(f *Fence, c *clock) { f.Written(c.t, true) }, true},
		{"9.9 s later", func(_ *Fence, c *clock) { c.t = c.t.Add(9900 * time.Millisecond) }, true},
		{"10 s after the renewal was sent", func(_ *Fence, c *clock) { c.t = c.t.Add(100 * time.Millisecond) }, false},
		{"renewed (sent 1 s ago)", func(f *Fence, c *clock) { f.Written(c.t.Add(-time.Second), true) }, true},
		{"an older renewal answered late changes nothing", func(f *Fence, c *clock) {
			f.Written(c.t.Add(-30*time.Second), true)
			c.t = c.t.Add(8500 * time.Millisecond)
		}, true},
		{"given up", func(f *Fence, c *clock) { f.Written(c.t, false) }, false},
		{"acquired again", func(f *Fence, c *clock) { f.Written(c.t, true) }, true},
		{"paused for a minute (the monotonic clock runs on)", func(_ *Fence, c *clock) { c.t = c.t.Add(time.Minute) }, false},
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
