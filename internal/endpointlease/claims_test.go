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

package endpointlease

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// serveLog records which agent serves the endpoint, and fails the test
// when two do at once or one serves under a closed fence.
type serveLog struct {
	t       *testing.T
	mu      sync.Mutex
	serving map[string]*fence.Fence
	events  []string
}

func (s *serveLog) config(partition string, leases *fake.Clientset) Config {
	return Config{
		Leases: leases.CoordinationV1(), Namespace: "agent", AgentName: "a",
		Partition: partition, Identity: partition + "-1",
		Timing:        Timing{LeaseDuration: 300 * time.Millisecond, TakeoverAfter: 900 * time.Millisecond},
		RenewDeadline: 200 * time.Millisecond, RetryPeriod: 20 * time.Millisecond,
		Log: logr.Discard(),
		Serve: func(url string, f *fence.Fence) {
			s.mu.Lock()
			defer s.mu.Unlock()
			for p := range s.serving {
				s.t.Errorf("%s serves %s while %s does", partition, url, p)
			}
			if f.Check() != nil {
				s.t.Errorf("%s serves %s under a closed fence", partition, url)
			}
			s.serving[partition] = f
			s.events = append(s.events, "serve "+partition)
		},
		Stop: func(url string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if f := s.serving[partition]; f != nil && f.Check() == nil {
				s.t.Errorf("%s stops serving %s with its fence still open", partition, url)
			}
			delete(s.serving, partition)
			s.events = append(s.events, "stop "+partition)
		},
		Changed: func() {},
	}
}

func (s *serveLog) server() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.serving {
		return p
	}
	return ""
}

func (s *serveLog) waitFor(t *testing.T, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if s.server() == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	server := s.server()
	s.mu.Lock()
	events := slices.Clone(s.events)
	s.mu.Unlock()
	t.Fatalf("after %s the endpoint is served by %q, want %q (events %v)", within, server, want, events)
}

// TestClaimsHandOver: two partitions' agents claim one endpoint through its
// Lease: the first lister serves it; when the other partition's slice
// lists it later (its shard moved), the first gives it up and the second
// takes it, never both at once; an agent that stops renewing loses it to
// the other after the takeover time; an endpoint no slice lists is given
// up and its Lease deleted.
func TestClaimsHandOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leases := fake.NewClientset()
	s := &serveLog{t: t, serving: map[string]*fence.Fence{}}
	const url = "https://shard-1.example/services/apiexport/x/y"

	eu := New(ctx, s.config("eu", leases))
	eu.Set([]string{url})
	s.waitFor(t, "eu", 2*time.Second)
	if got := eu.States()[url].State; got != Serving {
		t.Fatalf("eu's state = %v, want Serving", got)
	}

	usCtx, stopUS := context.WithCancel(ctx)
	us := New(usCtx, s.config("us", leases))
	us.Set([]string{url}) // the shard moved: kcp lists it in both slices
	s.waitFor(t, "us", 3*time.Second)
	time.Sleep(100 * time.Millisecond)
	if got := eu.States()[url].State; got != Elsewhere {
		t.Fatalf("eu's state after the move = %v, want Elsewhere", got)
	}

	stopUS() // us is down: eu takes the endpoint back after TakeoverAfter
	s.waitFor(t, "", time.Second)
	s.waitFor(t, "eu", 3*time.Second)

	eu.Set(nil) // eu's slice no longer lists it (us's still does)
	s.waitFor(t, "", time.Second)
	waitLease(t, leases, func(l *coordinationv1.Lease) bool {
		return l != nil && ptr.Deref(l.Spec.HolderIdentity, "") == "" && l.Annotations[keys.ListingsAnnotation] == `{"us":2}`
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	want := []string{"serve eu", "stop eu", "serve us", "stop us", "serve eu", "stop eu"}
	if fmt.Sprint(s.events) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", s.events, want)
	}
}

// TestClaimsMoveBack: a shard moved from us to eu and back stays listed in
// both slices, so only the administrator's syncagent.kcp.io/move-to tells
// the agents: us makes itself the home again, eu gives the endpoint up,
// and the annotation is removed.
func TestClaimsMoveBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leases := fake.NewClientset()
	s := &serveLog{t: t, serving: map[string]*fence.Fence{}}
	const url = "https://shard-1.example/services/apiexport/x/y"
	us := New(ctx, s.config("us", leases))
	us.Set([]string{url})
	s.waitFor(t, "us", 2*time.Second)
	eu := New(ctx, s.config("eu", leases))
	eu.Set([]string{url}) // moved to eu: listed there last
	s.waitFor(t, "eu", 3*time.Second)

	time.Sleep(200 * time.Millisecond) // moved back: nothing changes
	if got := s.server(); got != "eu" {
		t.Fatalf("the endpoint is served by %q before the annotation, want eu", got)
	}
	list, err := leases.CoordinationV1().Leases("agent").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("Leases: %v, %v", list, err)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + keys.MoveToAnnotation + `":"us"}}}`)
	if _, err := leases.CoordinationV1().Leases("agent").Patch(ctx, list.Items[0].Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "us", 3*time.Second)
	waitLease(t, leases, func(l *coordinationv1.Lease) bool {
		_, annotated := l.Annotations[keys.MoveToAnnotation]
		return !annotated && l.Annotations[keys.HolderPartitionAnnotation] == "us"
	})
}

// TestClaimsDeleteUnlistedLease: the Lease of an endpoint that no slice
// lists and nobody holds is deleted.
func TestClaimsDeleteUnlistedLease(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leases := fake.NewClientset()
	s := &serveLog{t: t, serving: map[string]*fence.Fence{}}
	eu := New(ctx, s.config("eu", leases))
	eu.Set([]string{"https://shard-1.example/x"})
	s.waitFor(t, "eu", 2*time.Second)
	eu.Set(nil)
	s.waitFor(t, "", time.Second)
	waitLease(t, leases, func(l *coordinationv1.Lease) bool { return l == nil })
	if len(eu.States()) != 0 {
		t.Errorf("claims left after the endpoint was given up: %v", eu.States())
	}
}

// waitLease waits until the only Lease (nil: none) is as ok wants.
func waitLease(t *testing.T, leases *fake.Clientset, ok func(*coordinationv1.Lease) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		list, err := leases.CoordinationV1().Leases("agent").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var l *coordinationv1.Lease
		if len(list.Items) > 0 {
			l = &list.Items[0]
		}
		if ok(l) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the endpoint's Lease is not as expected: %+v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
