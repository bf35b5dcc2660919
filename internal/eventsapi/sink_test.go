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

package eventsapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/kcp-syncagent/api-syncagent/internal/logtest"
)

// TestSink: Events recorded with the record package land in the
// events.k8s.io/v1 API (none in core/v1) in the form its strict
// validation takes; a repeated Event becomes one Event with a series.
func TestSink(t *testing.T) {
	cs := fake.NewClientset()
	b := NewBroadcaster(&Sink{Client: cs.EventsV1(), Core: cs.CoreV1(), Controller: "api-syncagent", Instance: "agent-0"})
	defer b.Shutdown()
	// As controller-runtime does: started with a core/v1 sink.
	b.StartRecordingToSink(nil)
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncagent-sync"})
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u"}}
	long := strings.Repeat("é", 600)
	rec.Event(obj, corev1.EventTypeWarning, "ObjectConflict", long)

	var got *eventsv1.Event
	waitFor(t, "the Event", func() bool {
		list, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		got = &list.Items[0]
		return true
	})
	if got.Reason != "ObjectConflict" || got.Action != "ObjectConflict" || got.Type != corev1.EventTypeWarning ||
		got.Regarding.Name != "x" || got.Regarding.Kind != "ConfigMap" || got.ReportingController != "syncagent-sync" ||
		got.ReportingInstance != "agent-0" || got.EventTime.IsZero() || got.Series != nil ||
		got.DeprecatedCount != 0 || !got.DeprecatedFirstTimestamp.IsZero() || !got.DeprecatedLastTimestamp.IsZero() || got.DeprecatedSource.Component != "" {
		t.Errorf("Event %+v, want the strict events.k8s.io/v1 form", got)
	}
	if len(got.Note) > noteLimit || !strings.HasPrefix(long, got.Note) || len(got.Note) < noteLimit-1 {
		t.Errorf("note of %d bytes, want the message cut at a character boundary to at most %d", len(got.Note), noteLimit)
	}
	if core, _ := cs.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{}); len(core.Items) != 0 {
		t.Errorf("core/v1 Events written: %v", core.Items)
	}

	rec.Event(obj, corev1.EventTypeWarning, "ObjectConflict", long)
	waitFor(t, "the series", func() bool {
		e, err := cs.EventsV1().Events("ns").Get(context.Background(), got.Name, metav1.GetOptions{})
		return err == nil && e.Series != nil && e.Series.Count == 2 && !e.Series.LastObservedTime.IsZero()
	})
	if list, _ := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{}); len(list.Items) != 1 {
		t.Errorf("%d Events, want the repeated one counted on the first", len(list.Items))
	}
}

// TestSink_coreWhenTheNewerAPIIsRefused: where RBAC grants core Events
// only, Events are written through core/v1 (and counted up there) instead
// of being lost.
func TestSink_coreWhenTheNewerAPIIsRefused(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("*", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group == "events.k8s.io" {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("RBAC: core Events only"))
		}
		return false, nil, nil
	})
	b := NewBroadcaster(&Sink{Client: cs.EventsV1(), Core: cs.CoreV1(), Controller: "api-syncagent", Instance: "agent-0"})
	defer b.Shutdown()
	b.StartRecordingToSink(nil)
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncagent-sync"})
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u"}}
	for range 2 {
		rec.Event(obj, corev1.EventTypeWarning, "ObjectConflict", "taken")
	}
	waitFor(t, "the core Event counted twice", func() bool {
		list, err := cs.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && list.Items[0].Count == 2 && list.Items[0].Reason == "ObjectConflict"
	})
}

func TestToV1_reportingController(t *testing.T) {
	e := &corev1.Event{Reason: "", Source: corev1.EventSource{Component: "not a qualified name"}, Count: 3,
		FirstTimestamp: metav1.NewTime(time.Unix(10, 0)), LastTimestamp: metav1.NewTime(time.Unix(20, 0))}
	got := ToV1(e, "api-syncagent", strings.Repeat("i", 200))
	if got.ReportingController != "api-syncagent" || got.Action != "Report" || len(got.ReportingInstance) != instanceLimit ||
		!got.EventTime.Time.Equal(time.Unix(10, 0)) || got.Series == nil || got.Series.Count != 3 || !got.Series.LastObservedTime.Time.Equal(time.Unix(20, 0)) {
		t.Errorf("ToV1 = %+v", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRefused: only answers that say the newer API is not served switch to
// core/v1; a missing namespace or Event (on a patch) and a terminating
// namespace do not.
func TestRefused(t *testing.T) {
	events := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	terminating := apierrors.NewForbidden(events, "x", errors.New("namespace is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tc := range []struct {
		name  string
		err   error
		patch bool
		want  bool
	}{
		{"no kind", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}}, false, true},
		{"resource not served", apierrors.NewNotFound(events, ""), false, true},
		{"forbidden", apierrors.NewForbidden(events, "x", errors.New("no claim")), false, true},
		{"namespace missing", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns"), false, false},
		{"the Event to patch is gone", apierrors.NewNotFound(events, "x"), true, false},
		{"terminating namespace", terminating, false, false},
		{"unreachable", errors.New("connection refused"), false, false},
	} {
		if got := Refused(tc.err, tc.patch); got != tc.want {
			t.Errorf("%s: Refused = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSink_remembersTheRefusal: after the newer API refused one Event, the
// next ones go straight to core/v1 (one refused request, not one per
// Event) until the memory ends; then the newer API is asked again.
func TestSink_remembersTheRefusal(t *testing.T) {
	cs := fake.NewClientset()
	calls := map[string]int{}
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls[a.GetResource().Group]++
		if a.GetResource().Group == "events.k8s.io" {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("RBAC: core Events only"))
		}
		return false, nil, nil
	})
	s := &Sink{Client: cs.EventsV1(), Core: cs.CoreV1(), Controller: "api-syncagent", Instance: "agent-0"}
	event := func(name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Reason: "ObjectConflict", Type: corev1.EventTypeWarning,
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Name: "x", Namespace: "ns"}}
	}
	for i, name := range []string{"a", "b", "c"} {
		if _, err := s.Create(event(name)); err != nil {
			t.Fatalf("Event %d: %v", i, err)
		}
	}
	if calls["events.k8s.io"] != 1 || calls[""] != 3 {
		t.Fatalf("calls per API group %v, want one refused events.k8s.io create and three core ones", calls)
	}
	// The memory ends: the newer API is asked once more.
	s.mu.Lock()
	s.legacyUntil = time.Now().Add(-time.Second)
	s.mu.Unlock()
	if _, err := s.Create(event("d")); err != nil {
		t.Fatal(err)
	}
	if calls["events.k8s.io"] != 2 || calls[""] != 4 {
		t.Fatalf("after the memory: calls per API group %v, want the newer API asked again", calls)
	}
}

// TestBroadcasterStartedAfterShutdown: controller-runtime's recorder
// provider starts the broadcaster as late as its own stop, which can come
// after the agent shut it down (seen in the soak: a replica that never
// recorded an Event logged two ERROR lines at SIGTERM). Starting a
// broadcaster that was shut down does nothing and logs nothing.
func TestBroadcasterStartedAfterShutdown(t *testing.T) {
	errs := &logtest.ErrorCounter{}
	klog.SetLogger(logr.New(errs))
	defer klog.ClearLogger()
	cs := fake.NewClientset()
	b := NewBroadcaster(&Sink{Client: cs.EventsV1(), Core: cs.CoreV1(), Controller: "api-syncagent", Instance: "agent-0"})
	b.Shutdown()
	b.StartRecordingToSink(nil).Stop()
	b.StartEventWatcher(func(*corev1.Event) {}).Stop()
	if n := errs.Errors(); n != 0 {
		t.Errorf("%d ERROR lines logged by starts after the shutdown, want none", n)
	}
}
