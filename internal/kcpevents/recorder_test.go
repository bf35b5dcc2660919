package kcpevents

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

type workspaces struct {
	mu      sync.Mutex
	clients map[string]ctrlruntimeclient.Client
}

func (w *workspaces) get(name string) ctrlruntimeclient.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clients[name]
}

func events(t *testing.T, c ctrlruntimeclient.Client) []corev1.Event {
	t.Helper()
	list := &corev1.EventList{}
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventsLandInTheirWorkspace: each Event is written with its own
// workspace's client, without the routing annotation; a repeated Event is
// aggregated (its count raised) in its own workspace; the Events of a
// workspace that is gone are dropped without a retry; after Shutdown,
// recording is a no-op.
func TestEventsLandInTheirWorkspace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ws := &workspaces{clients: map[string]ctrlruntimeclient.Client{
		"ws-a": fake.NewClientBuilder().WithScheme(scheme).Build(),
		"ws-b": fake.NewClientBuilder().WithScheme(scheme).Build(),
	}}
	r := New(t.Context(), scheme, ws.get)
	defer r.Shutdown()
	obj := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	}
	r.For("ws-a", "syncagent-sync").Event(obj("x"), corev1.EventTypeNormal, "ObjectSynced", "synced")
	r.For("ws-b", "syncagent-sync").Eventf(obj("y"), corev1.EventTypeWarning, "ObjectConflict", "taken by %s", "someone")
	r.For("gone", "syncagent-sync").Event(obj("z"), corev1.EventTypeNormal, "ObjectSynced", "synced")
	waitFor(t, "an Event in each workspace", func() bool {
		return len(events(t, ws.get("ws-a"))) == 1 && len(events(t, ws.get("ws-b"))) == 1
	})
	a, b := events(t, ws.get("ws-a"))[0], events(t, ws.get("ws-b"))[0]
	if a.Reason != "ObjectSynced" || a.InvolvedObject.Name != "x" || a.Source.Component != "syncagent-sync" {
		t.Errorf("ws-a's Event: %s on %s from %s", a.Reason, a.InvolvedObject.Name, a.Source.Component)
	}
	if b.Reason != "ObjectConflict" || b.Message != "taken by someone" || b.InvolvedObject.Name != "y" {
		t.Errorf("ws-b's Event: %s %q on %s", b.Reason, b.Message, b.InvolvedObject.Name)
	}
	for _, e := range []corev1.Event{a, b} {
		if _, ok := e.Annotations[workspaceAnnotation]; ok {
			t.Errorf("Event %s was written with the routing annotation", e.Name)
		}
	}

	// The same Event again: one Event in ws-a, counted twice.
	r.For("ws-a", "syncagent-sync").Event(obj("x"), corev1.EventTypeNormal, "ObjectSynced", "synced")
	waitFor(t, "the repeated Event counted", func() bool {
		ev := events(t, ws.get("ws-a"))
		return len(ev) == 1 && ev[0].Count == 2
	})
	if n := len(events(t, ws.get("ws-b"))); n != 1 {
		t.Errorf("ws-b has %d Events after ws-a's repeat, want 1", n)
	}

	r.Shutdown()
	r.For("ws-a", "syncagent-sync").Event(obj("later"), corev1.EventTypeNormal, "ObjectSynced", "synced")
}
