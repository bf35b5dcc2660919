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
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/record"
)

// writeTimeout bounds each write of an Event.
const writeTimeout = 10 * time.Second

// legacyMemory: after the events.k8s.io/v1 API refused an Event (RBAC
// that grants core Events only), Events go through core/v1 this long
// before the newer API is tried again.
const legacyMemory = 10 * time.Minute

// Sink is a record.EventSink that writes through the events.k8s.io/v1 API
// of one cluster, and through core/v1 while that API refuses the agent.
type Sink struct {
	Client eventsv1client.EventsGetter
	Core   corev1client.EventsGetter
	// Controller reports an Event whose source is no qualified name;
	// Instance is the reporting instance of every Event (the agent's pod).
	Controller, Instance string

	mu          sync.Mutex
	legacyUntil time.Time
}

var _ record.EventSink = &Sink{}

func (s *Sink) legacy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.legacyUntil)
}

// Refused reports whether err, an answer of the events.k8s.io/v1 API to a
// create (patch: a patch), says that API is not served to the agent: no
// kind, a 404 that is neither a missing namespace nor (on a patch) a
// missing Event, a 403 that is not a terminating namespace's.
func Refused(err error, patch bool) bool {
	switch {
	case meta.IsNoMatchError(err), apierrors.IsMethodNotSupported(err):
		return true
	case apierrors.IsNotFound(err):
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Kind == "namespaces" {
			return false
		}
		return !patch
	case apierrors.IsForbidden(err):
		return !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
	}
	return false
}

// refused reports whether err is the newer API's refusal, and if so makes
// the sink use core/v1 for legacyMemory.
func (s *Sink) refused(err error, patch bool) bool {
	if !Refused(err, patch) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.legacyUntil = time.Now().Add(legacyMemory)
	return true
}

// Create writes e as a new Event.
func (s *Sink) Create(e *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if !s.legacy() {
		v1 := ToV1(e, s.Controller, s.Instance)
		v1.ResourceVersion = ""
		out, err := s.Client.Events(e.Namespace).Create(ctx, v1, metav1.CreateOptions{})
		if err == nil {
			return Written(e, out), nil
		}
		if !s.refused(err, false) {
			return nil, err
		}
	}
	core := e.DeepCopy()
	core.ResourceVersion = ""
	return s.Core.Events(e.Namespace).Create(ctx, core, metav1.CreateOptions{})
}

// Update records one more occurrence of e (the record package only
// patches; an update is the same).
func (s *Sink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.Patch(e, nil)
}

// Patch records one more occurrence of e, already written: its series
// through events.k8s.io/v1, its count through core/v1 (an Event written
// either way takes both).
func (s *Sink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if patch := SeriesPatch(e); patch != nil && !s.legacy() {
		out, err := s.Client.Events(e.Namespace).Patch(ctx, e.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			return Written(e, out), nil
		}
		if !s.refused(err, true) {
			return nil, err // a NotFound Event is created again by the record package
		}
	}
	if data == nil {
		return e, nil
	}
	return s.Core.Events(e.Namespace).Patch(ctx, e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}

// broadcaster records to its own sink whatever sink it is started with:
// controller-runtime starts the manager's broadcaster with a core/v1 sink.
// Once shut down, it starts nothing: controller-runtime's recorder provider
// starts the broadcaster lazily, as late as its own stop, which can come
// after the agent shut the broadcaster down (a replica that never recorded
// an Event through it), and client-go logs an ERROR for each start then.
type broadcaster struct {
	record.EventBroadcaster
	sink record.EventSink

	mu      sync.Mutex
	stopped bool
}

func (b *broadcaster) StartRecordingToSink(record.EventSink) watch.Interface {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return watch.NewEmptyWatch()
	}
	return b.EventBroadcaster.StartRecordingToSink(b.sink)
}

func (b *broadcaster) StartEventWatcher(handler func(*corev1.Event)) watch.Interface {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return watch.NewEmptyWatch()
	}
	return b.EventBroadcaster.StartEventWatcher(handler)
}

// Shutdown stops the broadcaster, after the Events queued so far are
// written.
func (b *broadcaster) Shutdown() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.EventBroadcaster.Shutdown()
}

// NewBroadcaster returns a record.EventBroadcaster (for a manager's
// EventBroadcaster option) that writes every Event to sink.
func NewBroadcaster(sink record.EventSink) record.EventBroadcaster {
	return &broadcaster{EventBroadcaster: record.NewBroadcaster(), sink: sink}
}

// ReportingInstance names this agent process in the Events it writes: its
// pod (the host name), or "api-syncagent".
func ReportingInstance() string {
	if host, err := os.Hostname(); err == nil && host != "" {
		return host
	}
	return "api-syncagent"
}
