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

package sync

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// slowRemoval is a cache whose RemoveInformer of Secrets waits for a gate
// (the cache's lock held while it asks a slow discovery for another type).
type slowRemoval struct {
	*fakeInformers
	gate, entered chan struct{}
}

func (s slowRemoval) RemoveInformer(ctx context.Context, obj ctrlruntimeclient.Object) error {
	if obj.GetObjectKind().GroupVersionKind().Kind == "Secret" {
		close(s.entered)
		<-s.gate
	}
	return s.fakeInformers.RemoveInformer(ctx, obj)
}

// TestSharedInformersSlowRemoval: a removal that hangs blocks neither the
// uses of other informers nor, once it is done, a new use of its own
// informer, which then finds a fresh informer, never the removed one.
func TestSharedInformersSlowRemoval(t *testing.T) {
	shared := &SharedInformers{}
	slow := slowRemoval{fakeInformers: newFakeInformers(), gate: make(chan struct{}), entered: make(chan struct{})}
	secrets, configMaps := typed(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}), typed(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if err := shared.acquire(context.Background(), slow, secrets); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- shared.release(slow, secrets) }()
	<-slow.entered

	other := make(chan error, 1)
	go func() {
		if err := shared.acquire(context.Background(), slow, configMaps); err != nil {
			other <- err
			return
		}
		other <- shared.release(slow, configMaps)
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("another informer's use waited for a hanging removal")
	}

	again := make(chan struct{})
	go func() {
		_ = shared.acquire(context.Background(), slow, secrets)
		close(again)
	}()
	select {
	case <-again:
		t.Fatal("the informer being removed was acquired again before its removal ended")
	case <-time.After(100 * time.Millisecond):
	}
	close(slow.gate)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	select {
	case <-again:
	case <-time.After(5 * time.Second):
		t.Fatal("the new use did not go on after the removal")
	}
}

// TestAcquireEndsWithItsContext: a use that waits for a hanging removal
// gives up when its controller stops instead of hanging the stop.
func TestAcquireEndsWithItsContext(t *testing.T) {
	shared := &SharedInformers{}
	slow := slowRemoval{fakeInformers: newFakeInformers(), gate: make(chan struct{}), entered: make(chan struct{})}
	defer close(slow.gate)
	secrets := typed(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	if err := shared.acquire(context.Background(), slow, secrets); err != nil {
		t.Fatal(err)
	}
	go func() { _ = shared.release(slow, secrets) }()
	<-slow.entered

	ctx, cancel := context.WithCancel(context.Background())
	acquired := make(chan error, 1)
	go func() { acquired <- shared.acquire(ctx, slow, secrets) }()
	cancel()
	select {
	case err := <-acquired:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want the stop", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("acquire did not end with its context")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if n := shared.users[keyOf(slow, secrets)]; n != 0 {
		t.Errorf("a use that gave up was counted: %d", n)
	}
}

// TestLocalSourceStopIsNoFailure: a wait for the local copies ended by the
// controller's stop is no error (controller-runtime would log one at
// ERROR); one that ran out of time is.
func TestLocalSourceStopIsNoFailure(t *testing.T) {
	s := newLocalSource(newFakeInformers(), typed(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}), nil)
	stopped, stop := context.WithCancel(context.Background())
	stop()
	if err := s.WaitForSync(stopped); err != nil {
		t.Errorf("after a stop: %v, want nil", err)
	}
	late, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := s.WaitForSync(late); err == nil {
		t.Error("after the deadline: nil, want an error")
	}
}
