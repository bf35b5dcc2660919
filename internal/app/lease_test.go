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
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
)

// fakeLock is a Lease lock whose writes fail when err is set; during an
// Update, during is called.
type fakeLock struct {
	resourcelock.Interface
	err    error
	during func()
}

func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	if f.during != nil {
		f.during()
	}
	return f.err
}

// TestLeaderLockTellsTheFence: only a successful write of the Lease naming
// this replica opens the fence; a failed one changes nothing, and giving
// the Lease up (or another holder written by us) closes it.
func TestLeaderLockTellsTheFence(t *testing.T) {
	inner := &fakeLock{}
	f := fence.New(time.Minute, logr.Discard())
	l := &leaderLock{Interface: inner, identity: "me", fence: f}
	ctx := context.Background()
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	steps := []struct {
		name  string
		do    func() error
		allow bool
	}{
		{"before any write", func() error { return nil }, false},
		{"a failed acquisition", func() error { inner.err = errors.New("conflict"); return l.Create(ctx, mine) }, false},
		{"acquired", func() error { inner.err = nil; return l.Create(ctx, mine) }, true},
		{"a failed renewal", func() error { inner.err = errors.New("timeout"); return l.Update(ctx, mine) }, true},
		{"released (refused while the release is sent)", func() error {
			inner.err = nil
			inner.during = func() {
				if f.Check() == nil {
					t.Error("writes pass while the Lease is being given up")
				}
			}
			defer func() { inner.during = nil }()
			return l.Update(ctx, resourcelock.LeaderElectionRecord{})
		}, false},
		{"renewed", func() error { return l.Update(ctx, mine) }, true},
	}
	for _, s := range steps {
		_ = s.do()
		if err := f.Check(); (err == nil) != s.allow {
			t.Fatalf("%s: Check() = %v, want allowed=%v", s.name, err, s.allow)
		}
	}
}

// TestFenceWrites: every config handed to fenceWrites refuses writes while
// the fence is closed, without sending them, and passes reads; the context
// it returns tells the passes the fence is closed; after a renewal both
// writes go through and the context says open.
func TestFenceWrites(t *testing.T) {
	var writes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	f := fence.New(time.Minute, logr.Discard())
	kcpCfg, svcCfg := &rest.Config{Host: srv.URL}, &rest.Config{Host: srv.URL}
	ctx := fenceWrites(context.Background(), f, kcpCfg, svcCfg)

	send := func(cfg *rest.Config, method string) error {
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(method, srv.URL+"/api/v1/namespaces/x/configmaps", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	// Not renewed yet: closed.
	if !fence.Closed(ctx) {
		t.Error("the context does not say the fence is closed")
	}
	for name, cfg := range map[string]*rest.Config{"kcp": kcpCfg, "service": svcCfg} {
		if err := send(cfg, http.MethodGet); err != nil {
			t.Errorf("%s: a read while the fence is closed: %v", name, err)
		}
		if err := send(cfg, http.MethodPost); !errors.Is(err, fence.ErrLeaseNotRenewed) {
			t.Errorf("%s: a write while the fence is closed: %v, want ErrLeaseNotRenewed", name, err)
		}
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("%d writes reached the server while the fence was closed", n)
	}

	f.Written(f.Now(), true)
	if fence.Closed(ctx) {
		t.Error("the context says the fence is closed after a renewal")
	}
	for name, cfg := range map[string]*rest.Config{"kcp": kcpCfg, "service": svcCfg} {
		if err := send(cfg, http.MethodPost); err != nil {
			t.Errorf("%s: a write after a renewal: %v", name, err)
		}
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("%d writes reached the server after the renewal, want 2", n)
	}
}
