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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
)

var importGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}

func asking(namespace, name, into string, annotations map[string]string) *unstructured.Unstructured {
	u := typed(importGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + namespace + "-" + name))
	u.SetLabels(map[string]string{keys.ImportInto: into})
	u.SetAnnotations(annotations)
	return u
}

func newTestImporter(t *testing.T, objs ...ctrlruntimeclient.Object) (*importer, *record.FakeRecorder) {
	t.Helper()
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(importGVK, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(importGVK.GroupVersion().WithKind("ThingList"), &unstructured.UnstructuredList{})
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	events := record.NewFakeRecorder(20)
	return &importer{cache: c, localGVK: importGVK, kcpNamespaced: true, prName: "things", agentName: "agent",
		service: c, live: c, events: events, told: once.NewPerValue()}, events
}

func drain(events *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func request(cluster, namespace, name string) mcreconcile.Request {
	return mcreconcile.Request{ClusterName: cluster, Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}}
}

// TestImporter_keys: an object asking to be imported wakes the pass of the
// kcp object it asks for; an invalid request is said on the object once,
// however often its events come.
func TestImporter_keys(t *testing.T) {
	im, events := newTestImporter(t)
	if got := im.keys(context.Background(), nil, asking("prod", "a", "ws1", nil)); !cmp.Equal(got, []mcreconcile.Request{request("ws1", "prod", "a")}) {
		t.Errorf("requests %v, want the kcp object prod/a of ws1", got)
	}
	renamed := asking("prod", "b", "ws2", map[string]string{keys.ImportName: "c", keys.ImportNamespace: "default"})
	if got := im.keys(context.Background(), nil, renamed); !cmp.Equal(got, []mcreconcile.Request{request("ws2", "default", "c")}) {
		t.Errorf("requests %v, want the kcp object default/c of ws2", got)
	}
	deleting := asking("prod", "d", "ws1", nil)
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	if got := im.keys(context.Background(), nil, deleting); got != nil {
		t.Errorf("an object being deleted asked for %v", got)
	}
	if len(drain(events)) != 0 {
		t.Fatal("Events for valid requests")
	}
	invalid := asking("prod", "e", "", nil)
	for range 3 {
		if got := im.keys(context.Background(), nil, invalid); got != nil {
			t.Errorf("an invalid request asked for %v", got)
		}
	}
	if got := drain(events); len(got) != 1 {
		t.Errorf("Events for an invalid request seen three times: %v, want one ImportRefused", got)
	}
}

// TestImporter_pending: the pass of a kcp object finds the one object that
// asks for it; two objects asking for the same kcp object are both
// refused and none is imported.
func TestImporter_pending(t *testing.T) {
	im, events := newTestImporter(t,
		asking("prod", "a", "ws1", nil),
		asking("prod", "b", "ws1", map[string]string{keys.ImportNamespace: "default"}),
		asking("other", "b", "ws1", map[string]string{keys.ImportNamespace: "default"}),
		asking("prod", "c", "ws2", nil),
	)
	ctx := context.Background()
	got, err := im.pending(ctx, request("ws1", "prod", "a"))
	if err != nil || got == nil || got.GetName() != "a" {
		t.Fatalf("pending = %v (%v), want prod/a", got, err)
	}
	if got, _ := im.pending(ctx, request("ws1", "prod", "c")); got != nil {
		t.Errorf("the request for another workspace was taken: %v", got)
	}
	if len(drain(events)) != 0 {
		t.Fatal("Events for single requests")
	}
	if got, _ := im.pending(ctx, request("ws1", "default", "b")); got != nil {
		t.Errorf("one of two objects asking for the same kcp object was taken: %s/%s", got.GetNamespace(), got.GetName())
	}
	if got := drain(events); len(got) != 2 {
		t.Errorf("Events %v, want an ImportRefused on each of the two objects", got)
	}
}

// TestImporter_notEngaged: a request for a workspace the agent does not
// serve (yet) is said on the object once, however often its pass comes.
func TestImporter_notEngaged(t *testing.T) {
	im, events := newTestImporter(t, asking("prod", "a", "ws9", nil))
	for range 3 {
		im.notEngaged(context.Background(), request("ws9", "prod", "a"))
	}
	im.notEngaged(context.Background(), request("ws9", "prod", "other"))
	got := drain(events)
	if len(got) != 1 || !strings.Contains(got[0], ReasonImportWaiting) {
		t.Errorf("Events %v, want one ImportWaiting", got)
	}
	var none *importer
	none.notEngaged(context.Background(), request("ws9", "prod", "a")) // imports off
}
