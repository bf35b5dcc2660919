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

// Package eventsapi writes the Events the agent records through the
// events.k8s.io/v1 API. The agent's recorders are client-go's record
// package (its spam filter, its combining of similar Events, its counts of
// repeated ones), which hands its sink core/v1 Events; this package turns
// each into the form the events.k8s.io/v1 API validates strictly (an
// eventTime, a series for a repeated Event, the reporting controller and
// instance, an action; no count, timestamps or source) and writes that.
// kubectl get events shows both forms alike. It must not change what an
// Event says: reason, type, regarding object and message stay as recorded
// (a message is cut to the API's 1 KiB).
package eventsapi

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Limits of the events.k8s.io/v1 API's validation.
const (
	noteLimit     = 1024
	actionLimit   = 128
	instanceLimit = 128
	reasonLimit   = 128
)

// ToV1 returns the events.k8s.io/v1 form of e, an Event of the record
// package: its first timestamp is its eventTime, a count of 2 or more its
// series, its source's component its reporting controller (controller when
// that is no qualified name), instance its reporting instance and its
// reason its action.
func ToV1(e *corev1.Event, controller, instance string) *eventsv1.Event {
	reporting := e.Source.Component
	if reporting == "" {
		reporting = e.ReportingController
	}
	if len(validation.IsQualifiedName(reporting)) > 0 {
		reporting = controller
	}
	first := e.FirstTimestamp.Time
	if first.IsZero() {
		first = e.LastTimestamp.Time
	}
	out := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: e.Name, Namespace: e.Namespace, ResourceVersion: e.ResourceVersion,
			Labels: e.Labels, Annotations: e.Annotations,
		},
		EventTime:           metav1.NewMicroTime(first),
		Series:              series(e),
		ReportingController: reporting,
		ReportingInstance:   cut(instance, instanceLimit),
		Action:              cut(e.Reason, actionLimit),
		Reason:              cut(e.Reason, reasonLimit),
		Regarding:           e.InvolvedObject,
		Related:             e.Related,
		Note:                cut(e.Message, noteLimit),
		Type:                e.Type,
	}
	if out.Action == "" {
		out.Action, out.Reason = "Report", "Report"
	}
	return out
}

// series is a repeated Event's series; nil for one seen once.
func series(e *corev1.Event) *eventsv1.EventSeries {
	if e.Count < 2 {
		return nil
	}
	last := e.LastTimestamp.Time
	if last.IsZero() {
		last = e.FirstTimestamp.Time
	}
	return &eventsv1.EventSeries{Count: e.Count, LastObservedTime: metav1.NewMicroTime(last)}
}

// SeriesPatch is the JSON merge patch that records one more occurrence of
// e, already written: its series (the API keeps an Event's note, reason
// and times as they were written). nil for an Event seen once.
func SeriesPatch(e *corev1.Event) []byte {
	s := series(e)
	if s == nil {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"series": s}) // a struct of numbers and a time always encodes
	return data
}

// Written returns e as the record package keeps it after a write: the
// server's name, namespace, uid and resourceVersion, the rest as recorded
// (so that its next occurrence is counted on the same Event).
func Written(e *corev1.Event, out *eventsv1.Event) *corev1.Event {
	w := e.DeepCopy()
	w.Name, w.Namespace, w.UID, w.ResourceVersion = out.Name, out.Namespace, out.UID, out.ResourceVersion
	return w
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "")
}
