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

package kcpevents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcp-syncagent/api-syncagent/internal/eventsapi"
)

type harness struct {
	t       *testing.T
	scheme  *runtime.Scheme
	mu      sync.Mutex
	clients map[string]ctrlruntimeclient.Client
	drops   map[string]int
	rec     *Recorder
}

func newHarness(t *testing.T) *harness { return newHarnessAt(t, false) }

func newHarnessAt(t *testing.T, warningsOnly bool) *harness {
	h := &harness{t: t, scheme: runtime.NewScheme(), clients: map[string]ctrlruntimeclient.Client{}, drops: map[string]int{}}
	if err := clientgoscheme.AddToScheme(h.scheme); err != nil {
		t.Fatal(err)
	}
	h.rec = New(h.scheme, func(ws string) ctrlruntimeclient.Client {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.clients[ws]
	}, logr.Discard(), func(reason string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.drops[reason]++
	}, warningsOnly)
	t.Cleanup(h.rec.Shutdown)
	return h
}

// workspace adds a workspace whose client fails every write with err (nil:
// a working one).
func (h *harness) workspace(name string, err error) ctrlruntimeclient.Client {
	return h.workspaceWith(name, err, false)
}

// legacyWorkspace adds a working workspace that does not serve
// events.k8s.io/v1 to the agent (kcp answers NotFound).
func (h *harness) legacyWorkspace(name string) ctrlruntimeclient.Client {
	return h.workspaceWith(name, nil, true)
}

func (h *harness) workspaceWith(name string, err error, legacy bool) ctrlruntimeclient.Client {
	b := fake.NewClientBuilder().WithScheme(h.scheme)
	if legacy {
		notServed := func(obj ctrlruntimeclient.Object) bool {
			_, v1 := obj.(*eventsv1.Event)
			return v1
		}
		b = b.WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.CreateOption) error {
				if notServed(obj) {
					return apierrors.NewNotFound(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "")
				}
				return c.Create(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.PatchOption) error {
				if notServed(obj) {
					return apierrors.NewNotFound(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, obj.GetName())
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		})
	}
	if err != nil {
		fail := func() error { return err }
		b = b.WithInterceptorFuncs(interceptor.Funcs{
			Create: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.Object, ...ctrlruntimeclient.CreateOption) error {
				return fail()
			},
			Patch: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.Object, ctrlruntimeclient.Patch, ...ctrlruntimeclient.PatchOption) error {
				return fail()
			},
		})
	}
	c := b.Build()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[name] = c
	return c
}

func (h *harness) dropped(reason string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.drops[reason]
}

// written is an Event as kubectl shows it, whichever API wrote it.
type written struct {
	api, reason, message, object, typ, controller, instance string
	count                                                   int32
}

// events lists the Events written through either API.
func events(t *testing.T, c ctrlruntimeclient.Client) []written {
	t.Helper()
	core, v1 := &corev1.EventList{}, &eventsv1.EventList{}
	if err := c.List(context.Background(), core); err != nil {
		t.Fatal(err)
	}
	if err := c.List(context.Background(), v1); err != nil {
		t.Fatal(err)
	}
	var out []written
	for _, e := range core.Items {
		if e.Source.Host != "" {
			t.Errorf("core Event %s carries the routing host %q", e.Name, e.Source.Host)
		}
		out = append(out, written{api: "core", reason: e.Reason, message: e.Message, object: e.InvolvedObject.Name, typ: e.Type,
			controller: e.Source.Component, instance: e.ReportingInstance, count: e.Count})
	}
	for _, e := range v1.Items {
		count := int32(1)
		if e.Series != nil {
			count = e.Series.Count
		}
		out = append(out, written{api: "v1", reason: e.Reason, message: e.Note, object: e.Regarding.Name, typ: e.Type,
			controller: e.ReportingController, instance: e.ReportingInstance, count: count})
	}
	return out
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func obj(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
}

// TestEventsLandInTheirWorkspace: each Event is written with its own
// workspace's client and without the routing (source host, reporting
// instance), through events.k8s.io/v1 where the workspace serves it and
// through core/v1 where it does not; a repeated Event is counted up in its
// own workspace either way; after Shutdown, recording does nothing.
func TestEventsLandInTheirWorkspace(t *testing.T) {
	h := newHarness(t)
	a, b := h.workspace("ws-a", nil), h.legacyWorkspace("ws-b")
	h.rec.For("ep", "ws-a", "syncagent-sync").Event(obj("x"), corev1.EventTypeNormal, "ObjectSynced", "synced")
	h.rec.For("ep", "ws-b", "syncagent-sync").Eventf(obj("y"), corev1.EventTypeWarning, "ObjectConflict", "taken by %s", "someone")
	waitFor(t, "an Event in each workspace", 10*time.Second, func() bool { return len(events(t, a)) == 1 && len(events(t, b)) == 1 })
	ea, eb := events(t, a)[0], events(t, b)[0]
	if want := (written{api: "v1", reason: "ObjectSynced", message: "synced", object: "x", typ: corev1.EventTypeNormal,
		controller: "syncagent-sync", instance: eventsapi.ReportingInstance(), count: 1}); ea != want {
		t.Errorf("ws-a's Event: %+v, want %+v", ea, want)
	}
	if want := (written{api: "core", reason: "ObjectConflict", message: "taken by someone", object: "y", typ: corev1.EventTypeWarning,
		controller: "syncagent-sync", count: 1}); eb != want {
		t.Errorf("ws-b's Event: %+v, want %+v", eb, want)
	}

	for _, ws := range []string{"ws-a", "ws-b"} {
		h.rec.For("ep", ws, "syncagent-sync").Event(obj("x"), corev1.EventTypeNormal, "ObjectSynced", "synced")
	}
	waitFor(t, "the repeated Event counted", 10*time.Second, func() bool {
		ev := events(t, a)
		return len(ev) == 1 && ev[0].count == 2
	})
	waitFor(t, "ws-b's second Event", 10*time.Second, func() bool { return len(events(t, b)) == 2 })
	h.rec.For("ep", "ws-b", "syncagent-sync").Event(obj("x"), corev1.EventTypeNormal, "ObjectSynced", "synced")
	waitFor(t, "the repeated Event counted in core/v1", 10*time.Second, func() bool {
		for _, e := range events(t, b) {
			if e.object == "x" && e.count == 2 && e.api == "core" {
				return true
			}
		}
		return false
	})

	h.rec.Shutdown()
	h.rec.For("ep", "ws-a", "syncagent-sync").Event(obj("later"), corev1.EventTypeNormal, "ObjectSynced", "synced")
}

// TestSimilarEventsAreCombinedNotLost: more than ten Events of one object
// and reason with different messages are combined by the broadcaster into
// one Event, which still reaches its workspace.
func TestSimilarEventsAreCombinedNotLost(t *testing.T) {
	h := newHarness(t)
	a := h.workspace("ws-a", nil)
	rec := h.rec.For("ep", "ws-a", "syncagent-sync")
	for i := range 15 {
		rec.Event(obj("x"), corev1.EventTypeNormal, "ObjectSynced", fmt.Sprintf("Deleting the copy of related object %d.", i))
	}
	waitFor(t, "the combined Event", 10*time.Second, func() bool {
		for _, e := range events(t, a) {
			if strings.Contains(e.message, "combined from similar events") {
				return true
			}
		}
		return false
	})
	if n := h.dropped(DropWorkspaceGone); n != 0 {
		t.Errorf("%d Events dropped as of a gone workspace", n)
	}
}

// TestFailingWorkspaceDelaysNoOther: Events a workspace's server refuses,
// or cannot take (unreachable), that the agent's budget would not start in
// time, or of a workspace that is gone are dropped
// and counted at once, without retries: another workspace's Events on the
// same broadcaster are written right after.
func TestFailingWorkspaceDelaysNoOther(t *testing.T) {
	h := newHarness(t)
	// Workspaces that share one broadcaster.
	names := []string{"good"}
	for i := 0; len(names) < 5; i++ {
		if n := fmt.Sprintf("ws-%d", i); bucket(n) == bucket("good") {
			names = append(names, n)
		}
	}
	good := h.workspace(names[0], nil)
	h.workspace(names[1], errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	h.workspace(names[2], apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("no claim")))
	// The agent's shared kcp budget would not start the write in time
	// (client-go's words, wrapped by controller-runtime).
	h.workspace(names[4], fmt.Errorf("create events: %w", errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")))
	// names[3] has no client: not engaged.
	for _, ws := range names[1:] {
		for i := range 3 {
			h.rec.For("ep", ws, "syncagent-sync").Event(obj(fmt.Sprintf("o%d", i)), corev1.EventTypeNormal, "ObjectSynced", "synced")
		}
	}
	// A retry of a failed write sleeps up to 10 s, and would be tried 12
	// times: the good Event would wait minutes.
	h.rec.For("ep", names[0], "syncagent-sync").Event(obj("x"), corev1.EventTypeNormal, "ObjectSynced", "synced")
	waitFor(t, "the good workspace's Event", 5*time.Second, func() bool { return len(events(t, good)) == 1 })
	waitFor(t, "the drops counted", 5*time.Second, func() bool {
		return h.dropped(DropUnreachable) == 3 && h.dropped(DropRejected) == 3 && h.dropped(DropWorkspaceGone) == 3 && h.dropped(DropThrottled) == 3
	})
}

// TestWarningsOnly (--event-level=warning): Normal Events are not written
// into kcp, in any of the three ways of recording; Warnings are.
func TestWarningsOnly(t *testing.T) {
	h := newHarnessAt(t, true)
	a := h.workspace("ws-a", nil)
	rec := h.rec.For("ep", "ws-a", "syncagent-sync")
	rec.Event(obj("n1"), corev1.EventTypeNormal, "ObjectAccepted", "accepted")
	rec.Eventf(obj("n2"), corev1.EventTypeNormal, "ObjectPlaced", "placed %s", "here")
	rec.AnnotatedEventf(obj("n3"), nil, corev1.EventTypeNormal, "ObjectDeleted", "deleted")
	rec.Eventf(obj("w1"), corev1.EventTypeWarning, "ObjectConflict", "taken by %s", "someone")
	rec.AnnotatedEventf(obj("w2"), nil, corev1.EventTypeWarning, "ReconcilingError", "failed")
	// One workspace's Events go through one broadcaster in order: had the
	// Normal Events been recorded, they would be the first two written.
	waitFor(t, "the two Warnings", 10*time.Second, func() bool { return len(events(t, a)) == 2 })
	for _, e := range events(t, a) {
		if e.typ != corev1.EventTypeWarning {
			t.Errorf("a %s Event %s on %s was recorded", e.typ, e.reason, e.object)
		}
	}
	if n := len(events(t, a)); n != 2 {
		t.Errorf("%d Events, want the 2 Warnings", n)
	}
}

// TestWorkspacesSpreadOverBroadcasters: a workspace's Events all take one
// broadcaster (bucket knows only the workspace), and workspaces spread
// over all of a group's broadcasters.
func TestWorkspacesSpreadOverBroadcasters(t *testing.T) {
	used := map[int]int{}
	for i := range 200 {
		used[bucket(fmt.Sprintf("ws-%d", i))]++
	}
	for b := range perGroup {
		if used[b] < 20 {
			t.Errorf("broadcaster %d got %d of 200 workspaces: %v", b, used[b], used)
		}
	}
}

// TestLegacyWorkspaces: a workspace that did not take events.k8s.io/v1 is
// written to through core/v1 for legacyMemory, then tried again; expired
// entries are forgotten when another is added.
func TestLegacyWorkspaces(t *testing.T) {
	l := legacyWorkspaces{until: map[string]time.Time{}}
	now := time.Unix(1000, 0)
	steps := []struct {
		at   time.Duration
		add  string
		ws   string
		want bool
	}{
		{at: 0, ws: "a", want: false},
		{at: 0, add: "a", ws: "a", want: true},
		{at: legacyMemory - time.Second, ws: "a", want: true},
		{at: legacyMemory - time.Second, ws: "b", want: false},
		{at: legacyMemory, ws: "a", want: false},
		{at: legacyMemory, add: "b", ws: "b", want: true},
	}
	for i, s := range steps {
		if s.add != "" {
			l.add(s.add, now.Add(s.at))
		}
		if got := l.has(s.ws, now.Add(s.at)); got != s.want {
			t.Errorf("step %d: has(%s) at +%s = %v, want %v", i, s.ws, s.at, got, s.want)
		}
	}
	if _, kept := l.until["a"]; kept || len(l.until) != 1 {
		t.Errorf("entries %v, want the expired one forgotten", l.until)
	}
}
