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

// Package kcpevents records Events in consumer workspaces through a few
// broadcasters per kcp endpoint that the endpoint's workspaces share.
//
// The kcp provider gives each workspace its own Event broadcaster (three
// goroutines and a client each) and never stops them when its connection
// ends, so every reconnect of an endpoint left them behind. Here an Event
// names its workspace in its source's host (which survives the
// broadcaster's aggregation of similar Events, and keeps workspaces' Events
// apart in its caches); the sink removes it and writes the Event with that
// workspace's client. An Event the sink cannot write is dropped at once and
// counted (Events are best effort): a workspace no longer engaged, an Event
// kcp rejects (no events permission claim), an endpoint that does not
// answer. So a slow endpoint delays only its own workspaces' Events, by at
// most writeTimeout per Event.
//
// An Event is written through the events.k8s.io/v1 API where the workspace
// lets the agent use it, else through core/v1 (the events claim); a
// workspace that did not take the newer API is written to through core/v1
// for legacyMemory before it is tried again.
package kcpevents

import (
	"context"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/eventsapi"
)

// perGroup is the number of broadcasters of one group (an endpoint): each
// writes its Events one at a time, so a group's workspaces are spread
// over several. A workspace's Events all take one broadcaster: a
// workspace with a backlog of Events delays only the workspaces that
// share it.
const perGroup = 4

// cacheEntries is the size of each of a broadcaster's three caches (its
// spam filter, its combining of similar Events, its counts of repeated
// ones): a group's broadcasters hold client-go's default of 4096 entries
// between them, as one broadcaster would, not four times that (at 10k
// objects the caches of full-size broadcasters took about 20 MiB). A
// workspace whose objects record Events on more than 1024 objects in
// turn gets less combining than client-go's default would give it; its
// extra Events stay on its own broadcaster.
const cacheEntries = 4096 / perGroup

// writeTimeout bounds each write of an Event.
const writeTimeout = 5 * time.Second

// legacyMemory: a workspace that does not serve events.k8s.io/v1 to the
// agent gets its Events through core/v1 this long before the newer API is
// tried again (its consumer may accept the claim meanwhile).
const legacyMemory = 10 * time.Minute

// The reasons an Event is dropped (Drops).
const (
	DropWorkspaceGone = "workspace_gone"
	DropRejected      = "rejected"
	DropUnreachable   = "unreachable"
	// DropThrottled: the agent's kcp request budget (--kcp-qps) would not
	// let the write start within its deadline.
	DropThrottled = "throttled"
)

// throttledMessage is how client-go's REST client reports a request its
// rate limiter would not start before the context's deadline.
const throttledMessage = "client rate limiter Wait returned an error"

// Clients returns the client that writes in a workspace, nil if the
// workspace is not engaged any more.
type Clients func(workspace string) ctrlruntimeclient.Client

// Recorder records Events in workspaces.
type Recorder struct {
	scheme  *runtime.Scheme
	clients Clients
	log     logr.Logger
	// dropped is told of every Event the sink drops, with the reason.
	dropped func(reason string)
	// warningsOnly: Normal Events are not recorded (--event-level=warning).
	warningsOnly bool
	// instance is the reporting instance of the Events (events.k8s.io/v1).
	instance string
	legacy   legacyWorkspaces

	mu         sync.RWMutex
	closed     bool
	broadcasts map[string]record.EventBroadcaster
}

// New returns a Recorder; its broadcasters start on first use and end
// with Shutdown. With warningsOnly, Normal Events are left out.
func New(scheme *runtime.Scheme, clients Clients, log logr.Logger, dropped func(reason string), warningsOnly bool) *Recorder {
	return &Recorder{scheme: scheme, clients: clients, log: log, dropped: dropped, warningsOnly: warningsOnly,
		instance: eventsapi.ReportingInstance(), legacy: legacyWorkspaces{until: map[string]time.Time{}}, broadcasts: map[string]record.EventBroadcaster{}}
}

// For returns the recorder of component's Events in workspace; group is the
// workspace's failure domain (its endpoint).
func (r *Recorder) For(group, workspace, component string) record.EventRecorder {
	key := group + "#" + strconv.Itoa(bucket(workspace))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &record.FakeRecorder{}
	}
	b, ok := r.broadcasts[key]
	if !ok {
		b = record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: cacheEntries}))
		b.StartRecordingToSink(sink{r: r, group: group})
		r.broadcasts[key] = b
	}
	return &guarded{r: r, rec: b.NewRecorder(r.scheme, corev1.EventSource{Component: component, Host: workspace})}
}

// bucket spreads a group's workspaces over its broadcasters.
func bucket(workspace string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(workspace))
	return int(h.Sum32() % perGroup)
}

// Shutdown stops the broadcasters; later Events are dropped.
func (r *Recorder) Shutdown() {
	r.mu.Lock()
	r.closed = true
	broadcasts := r.broadcasts
	r.broadcasts = map[string]record.EventBroadcaster{}
	r.mu.Unlock()
	for _, b := range broadcasts {
		b.Shutdown()
	}
}

// guarded hands no Event to a broadcaster after Shutdown (the broadcaster
// would log an error for each), nor a Normal Event when only Warnings are
// recorded.
type guarded struct {
	r   *Recorder
	rec record.EventRecorder
}

// record calls emit unless the Event is not to be recorded.
func (g *guarded) record(eventtype string, emit func()) {
	if g.r.warningsOnly && eventtype != corev1.EventTypeWarning {
		return
	}
	g.r.mu.RLock()
	defer g.r.mu.RUnlock()
	if !g.r.closed {
		emit()
	}
}

func (g *guarded) Event(object runtime.Object, eventtype, reason, message string) {
	g.record(eventtype, func() { g.rec.Event(object, eventtype, reason, message) })
}

func (g *guarded) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	g.record(eventtype, func() { g.rec.Eventf(object, eventtype, reason, messageFmt, args...) })
}

func (g *guarded) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	g.record(eventtype, func() { g.rec.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...) })
}

// sink writes each Event with its workspace's client.
type sink struct {
	r     *Recorder
	group string
}

// writer writes an Event (without its workspace) through one API.
type writer struct {
	// core writes the core/v1 form.
	core func(ctx context.Context, c ctrlruntimeclient.Client, out *corev1.Event) error
	// v1 writes the events.k8s.io/v1 form; nil when nothing is to write.
	v1 func(ctx context.Context, c ctrlruntimeclient.Client, out *eventsv1.Event) error
}

// write writes an Event (without its workspace) with w, through
// events.k8s.io/v1 unless the workspace is known not to serve it, and
// returns what the broadcaster keeps of it: the server's Event with the
// workspace again, or, when it was dropped, the Event as it came.
func (s sink) write(e *corev1.Event, patch bool, w writer) (*corev1.Event, error) {
	workspace := e.Source.Host
	c := s.r.clients(workspace)
	if c == nil {
		s.drop(e, DropWorkspaceGone, nil)
		return e, nil
	}
	out := e.DeepCopy()
	out.Source.Host, out.ReportingInstance = "", ""
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	written, err := s.writeV1(ctx, c, workspace, out, patch, w)
	if err == nil && written == nil {
		err = w.core(ctx, c, out)
		written = out
	}
	if err != nil {
		if patch && apierrors.IsNotFound(err) {
			return nil, err // the Event to patch is gone (or was dropped): the broadcaster creates it
		}
		reason := DropUnreachable
		switch {
		case strings.Contains(err.Error(), throttledMessage):
			reason = DropThrottled
		case isAPIStatus(err):
			reason = DropRejected
		}
		s.drop(e, reason, err)
		return e, nil
	}
	written.Source.Host = workspace
	return written, nil
}

// writeV1 writes out through events.k8s.io/v1 and returns what the
// broadcaster keeps of it; nil and no error when the workspace does not
// serve that API to the agent (then core/v1 is to be used).
//
// A workspace whose discovery lacks the API (no kind: every workspace of an
// endpoint that does not serve it, each a discovery request to find out) is
// remembered for its whole endpoint; one that refuses it otherwise, for
// itself.
func (s sink) writeV1(ctx context.Context, c ctrlruntimeclient.Client, workspace string, out *corev1.Event, patch bool, w writer) (*corev1.Event, error) {
	now := time.Now()
	if w.v1 == nil || s.r.legacy.has(workspace, now) || s.r.legacy.has(endpointKey(s.group), now) {
		return nil, nil
	}
	v1 := eventsapi.ToV1(out, "api-syncagent", s.r.instance)
	err := w.v1(ctx, c, v1)
	switch {
	case err == nil:
		return eventsapi.Written(out, v1), nil
	case meta.IsNoMatchError(err):
		s.r.legacy.add(endpointKey(s.group), now)
		return nil, nil
	case eventsapi.Refused(err, patch):
		s.r.legacy.add(workspace, now)
		return nil, nil
	}
	return nil, err
}

// endpointKey is an endpoint's entry among the legacy workspaces (no
// workspace name holds a '#').
func endpointKey(group string) string { return group + "#" }

// legacyWorkspaces are the workspaces whose Events go through core/v1, each
// until a time.
type legacyWorkspaces struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (l *legacyWorkspaces) has(workspace string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Before(l.until[workspace])
}

// add remembers workspace for legacyMemory and forgets the expired ones.
func (l *legacyWorkspaces) add(workspace string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ws, until := range l.until {
		if !now.Before(until) {
			delete(l.until, ws)
		}
	}
	l.until[workspace] = now.Add(legacyMemory)
}

func isAPIStatus(err error) bool {
	_, ok := err.(apierrors.APIStatus)
	return ok
}

func (s sink) drop(e *corev1.Event, reason string, err error) {
	if s.r.dropped != nil {
		s.r.dropped(reason)
	}
	s.r.log.V(1).Info("Dropped an Event on a kcp object", "workspace", e.Source.Host, "reason", e.Reason,
		"object", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name, "why", reason, "error", errString(err))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (s sink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.write(e, false, writer{
		core: func(ctx context.Context, c ctrlruntimeclient.Client, out *corev1.Event) error {
			out.ResourceVersion = ""
			return c.Create(ctx, out)
		},
		v1: func(ctx context.Context, c ctrlruntimeclient.Client, out *eventsv1.Event) error {
			out.ResourceVersion = ""
			return c.Create(ctx, out)
		},
	})
}

// Update is not used by the record package; it writes the Event whole
// through core/v1.
func (s sink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.write(e, false, writer{core: func(ctx context.Context, c ctrlruntimeclient.Client, out *corev1.Event) error {
		return c.Update(ctx, out)
	}})
}

// Patch counts one more occurrence of an Event written before: through
// events.k8s.io/v1 its series (the record package's patch of core fields
// is for core/v1, which an Event written either way takes).
func (s sink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	w := writer{core: func(ctx context.Context, c ctrlruntimeclient.Client, out *corev1.Event) error {
		return c.Patch(ctx, out, ctrlruntimeclient.RawPatch(types.StrategicMergePatchType, data))
	}}
	if series := eventsapi.SeriesPatch(e); series != nil {
		w.v1 = func(ctx context.Context, c ctrlruntimeclient.Client, out *eventsv1.Event) error {
			return c.Patch(ctx, out, ctrlruntimeclient.RawPatch(types.MergePatchType, series))
		}
	}
	return s.write(e, true, w)
}
