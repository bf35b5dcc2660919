// Package kcpevents records Events in consumer workspaces through a fixed
// set of broadcasters that every workspace shares.
//
// The kcp provider gives each workspace its own Event broadcaster (three
// goroutines and a client each) and never stops them when its connection
// ends, so every reconnect of an endpoint left them behind. Here an Event
// carries its workspace to a shared broadcaster (in an annotation that
// never reaches the server), whose sink writes it with that workspace's
// client; a workspace that is gone has its Events dropped.
package kcpevents

import (
	"context"
	"hash/fnv"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// workspaceAnnotation carries an Event's workspace from its recorder to the
// sink, which removes it before the write.
const workspaceAnnotation = "syncagent.kcp.io/event-workspace"

// shards is the number of broadcasters: each writes its Events one at a
// time, so a slow workspace delays only the Events of its shard.
const shards = 4

// writeTimeout bounds each write of an Event.
const writeTimeout = 10 * time.Second

// Clients returns the client that writes in a workspace, nil if the
// workspace is not engaged any more.
type Clients func(workspace string) ctrlruntimeclient.Client

// Recorder records Events in workspaces.
type Recorder struct {
	scheme *runtime.Scheme
	shards []*shard

	// mu guards closed: no Event is handed to a broadcaster after
	// Shutdown (it would log an error for each).
	mu     sync.RWMutex
	closed bool
}

type shard struct {
	broadcaster record.EventBroadcaster
	mu          sync.Mutex
	recorders   map[string]record.EventRecorder // by component
}

// New starts the broadcasters; they end with ctx or Shutdown.
func New(ctx context.Context, scheme *runtime.Scheme, clients Clients) *Recorder {
	r := &Recorder{scheme: scheme}
	for range shards {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(sink{clients: clients})
		r.shards = append(r.shards, &shard{broadcaster: b, recorders: map[string]record.EventRecorder{}})
	}
	return r
}

// For returns the recorder of component in a workspace.
func (r *Recorder) For(workspace, component string) record.EventRecorder {
	h := fnv.New32a()
	_, _ = h.Write([]byte(workspace))
	s := r.shards[h.Sum32()%uint32(len(r.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recorders[component]
	if !ok {
		rec = s.broadcaster.NewRecorder(r.scheme, corev1.EventSource{Component: component})
		s.recorders[component] = rec
	}
	return &workspaceRecorder{r: r, rec: rec, workspace: workspace}
}

// Shutdown stops the broadcasters; later Events are dropped.
func (r *Recorder) Shutdown() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	for _, s := range r.shards {
		s.broadcaster.Shutdown()
	}
}

// workspaceRecorder annotates every Event with its workspace.
type workspaceRecorder struct {
	r         *Recorder
	rec       record.EventRecorder
	workspace string
}

func (w *workspaceRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	w.AnnotatedEventf(object, nil, eventtype, reason, "%s", message)
}

func (w *workspaceRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	w.AnnotatedEventf(object, nil, eventtype, reason, messageFmt, args...)
}

func (w *workspaceRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	w.r.mu.RLock()
	defer w.r.mu.RUnlock()
	if w.r.closed {
		return
	}
	a := maps.Clone(annotations)
	if a == nil {
		a = map[string]string{}
	}
	a[workspaceAnnotation] = w.workspace
	w.rec.AnnotatedEventf(object, a, eventtype, reason, messageFmt, args...)
}

// sink writes each Event with its workspace's client.
type sink struct{ clients Clients }

// target returns the client of the Event's workspace and a copy of the
// Event without the workspace annotation; a nil client: drop the Event.
func (s sink) target(e *corev1.Event) (ctrlruntimeclient.Client, *corev1.Event, string) {
	workspace := e.Annotations[workspaceAnnotation]
	out := e.DeepCopy()
	delete(out.Annotations, workspaceAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	if workspace == "" {
		return nil, out, ""
	}
	return s.clients(workspace), out, workspace
}

// written is the server's Event with the workspace annotation again: the
// broadcaster keeps it to aggregate later Events of the same kind.
func written(e *corev1.Event, workspace string) *corev1.Event {
	if e.Annotations == nil {
		e.Annotations = map[string]string{}
	}
	e.Annotations[workspaceAnnotation] = workspace
	return e
}

func (s sink) Create(e *corev1.Event) (*corev1.Event, error) {
	c, out, workspace := s.target(e)
	if c == nil {
		return e, nil // the workspace is gone
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := c.Create(ctx, out); err != nil {
		return nil, err
	}
	return written(out, workspace), nil
}

func (s sink) Update(e *corev1.Event) (*corev1.Event, error) {
	c, out, workspace := s.target(e)
	if c == nil {
		return e, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := c.Update(ctx, out); err != nil {
		return nil, err
	}
	return written(out, workspace), nil
}

func (s sink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	c, out, workspace := s.target(e)
	if c == nil {
		return e, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := c.Patch(ctx, out, ctrlruntimeclient.RawPatch(types.StrategicMergePatchType, data)); err != nil {
		return nil, err
	}
	return written(out, workspace), nil
}
