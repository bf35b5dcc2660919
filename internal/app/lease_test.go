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
	"github.com/go-logr/logr"
	"testing"
	"time"

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
