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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

var importRemoteGVK = schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}

// kcpWorkspace is a workspace whose client is a fake kcp.
type kcpWorkspace struct {
	cluster.Cluster
	client ctrlruntimeclient.Client
}

func (w kcpWorkspace) GetClient() ctrlruntimeclient.Client { return w.client }

type importHarness struct {
	r              *reconciler
	service, kcp   ctrlruntimeclient.Client
	events, kcpEvs *record.FakeRecorder
}

func newImportHarness(t *testing.T, service []ctrlruntimeclient.Object, kcp []ctrlruntimeclient.Object, kcpFuncs *interceptor.Funcs) *importHarness {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{importGVK, importRemoteGVK} {
		s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &unstructured.UnstructuredList{})
	}
	h := &importHarness{events: record.NewFakeRecorder(50), kcpEvs: record.NewFakeRecorder(50)}
	h.service = fake.NewClientBuilder().WithScheme(s).WithObjects(service...).
		WithIndex(&corev1.Secret{}, objmeta.RemoteIndex, objmeta.RemoteIndexValues).
		WithIndex(&corev1.Secret{}, state.RelatedObjectIndex, state.RelatedObjectIndexValues).Build()
	// The caches lag: the import requests as they were at the start, no
	// copies at all.
	requests := fake.NewClientBuilder().WithScheme(s).WithObjects(deepCopies(service)...).Build()
	copies := fake.NewClientBuilder().WithScheme(s).WithIndex(typed(importGVK), objmeta.RemoteIndex, objmeta.RemoteIndexValues).Build()
	kb := fake.NewClientBuilder().WithScheme(s).WithObjects(kcp...)
	if kcpFuncs != nil {
		kb = kb.WithInterceptorFuncs(*kcpFuncs)
	}
	h.kcp = kb.Build()
	namer, err := naming.NewNamer(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.r = &reconciler{
		pr:        &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things"}},
		remoteGVK: importRemoteGVK,
		kcpEvents: func(string) record.EventRecorder { return h.kcpEvs },
		syncer: &syncer.Syncer{
			AgentName: "agent", LocalGVK: importGVK, LocalNamespaced: true, StatusSubresource: true, Namer: namer,
			Service: h.service, Copies: copies, State: &state.Store{Client: h.service, Namespace: "agent-ns", AgentName: "agent"},
			Event: func(ctrlruntimeclient.Object, string, string, string) {},
		},
		prRecorder: h.events,
		imports: &importer{cache: requests, localGVK: importGVK, kcpNamespaced: true, prName: "things", agentName: "agent",
			service: h.service, live: h.service, events: h.events, told: once.NewPerValue()},
	}
	return h
}

func deepCopies(objs []ctrlruntimeclient.Object) []ctrlruntimeclient.Object {
	out := make([]ctrlruntimeclient.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.DeepCopyObject().(ctrlruntimeclient.Object))
	}
	return out
}

// pass runs what a reconcile of the kcp object default/imported of ws1
// runs: the import pass, then the sync of the kcp object (the one it
// created, or the one there is), as long as it asks for a requeue.
func (h *importHarness) pass(t *testing.T) (imported bool, err error) {
	t.Helper()
	ctx := context.Background()
	req := request("ws1", "default", "imported")
	var obj *unstructured.Unstructured
	cur := typed(importRemoteGVK)
	switch err := h.kcp.Get(ctx, req.NamespacedName, cur); {
	case err == nil:
		obj = cur
	case !apierrors.IsNotFound(err):
		t.Fatal(err)
	}
	created, handled, err := h.r.importPass(ctx, Workspace{Name: "ws1", Cluster: kcpWorkspace{client: h.kcp}}, h.kcp, req, obj, &pass{})
	if err != nil || handled {
		return false, err
	}
	if created != nil {
		obj = created
	}
	ws := syncer.Workspace{Client: h.kcp, Live: h.kcp, Cluster: "ws1"}
	for range 5 {
		if obj == nil {
			return imported, nil
		}
		res, err := h.r.syncer.Process(ctx, ws, obj)
		if err != nil {
			return imported, err
		}
		if res.Imported != nil {
			imported = true
			h.r.imported(ctx, req, obj, res.Imported, h.kcpEvs)
		}
		if !res.Requeue {
			return imported, nil
		}
		obj = h.kcpObject(t)
	}
	return imported, nil
}

func (h *importHarness) local(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := typed(importGVK)
	if err := h.service.Get(context.Background(), types.NamespacedName{Namespace: "legacy", Name: "a"}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func (h *importHarness) kcpObject(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := typed(importRemoteGVK)
	if err := h.kcp.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "imported"}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return u
}

func (h *importHarness) hasState(t *testing.T) bool {
	t.Helper()
	obj := typed(importRemoteGVK)
	obj.SetNamespace("default")
	obj.SetName("imported")
	last, err := h.r.syncer.State.Get(context.Background(), syncer.ImportPrimary(syncer.Workspace{Cluster: "ws1"}, obj))
	if err != nil {
		t.Fatal(err)
	}
	return last != nil
}

func reasons(events *record.FakeRecorder) string { return strings.Join(drain(events), "\n") }

// TestImportPass runs the import's steps against fakes of both sides: an
// import that goes through, one that stopped after any of its steps, and
// every refusal leave the object either the kcp object's copy with state
// or exactly as it was (never claimed without a kcp object that the import
// created).
func TestImportPass(t *testing.T) {
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	source := func(labels map[string]string) *unstructured.Unstructured {
		u := asking("legacy", "a", "ws1", map[string]string{keys.ImportName: "imported", keys.ImportNamespace: "default"})
		u.Object["spec"] = map[string]any{"color": "red"}
		l := u.GetLabels()
		for k, v := range labels {
			l[k] = v
		}
		u.SetLabels(l)
		return u
	}
	claim := objmeta.Remote{Cluster: "ws1", Namespace: "default", Name: "imported"}.Labels("agent")
	claimed := func(labels map[string]string) *unstructured.Unstructured {
		u := source(labels)
		a := u.GetAnnotations()
		a[keys.Importing] = "ws1/default/imported"
		u.SetAnnotations(a)
		return u
	}
	kcpObj := func(uid string, deleting bool) *unstructured.Unstructured {
		u := typed(importRemoteGVK)
		u.SetNamespace("default")
		u.SetName("imported")
		u.SetAnnotations(map[string]string{keys.ImportedFrom: uid})
		u.SetFinalizers([]string{finalizer.For("agent").Own})
		u.Object["spec"] = map[string]any{"color": "red"}
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	// copyIn is a copy of another workspace's object in a namespace.
	copyIn := func(namespace, cluster, agent string) ctrlruntimeclient.Object {
		u := typed(importGVK)
		u.SetNamespace(namespace)
		u.SetName("theirs")
		u.SetLabels(objmeta.Remote{Cluster: cluster, Name: "theirs"}.Labels(agent))
		return u
	}
	// The first creation succeeds, its answer is lost; the object then
	// exists when the import pass creates it again.
	lostOnce := true
	lostAnswer := interceptor.Funcs{Create: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.CreateOption) error {
		if err := c.Create(ctx, obj, opts...); err != nil || !lostOnce {
			return err
		}
		lostOnce = false
		return apierrors.NewAlreadyExists(schema.GroupResource{Group: importRemoteGVK.Group, Resource: "things"}, obj.GetName())
	}}
	invalid := interceptor.Funcs{Create: func(context.Context, ctrlruntimeclient.WithWatch, ctrlruntimeclient.Object, ...ctrlruntimeclient.CreateOption) error {
		return apierrors.NewInvalid(importRemoteGVK.GroupKind(), "imported", nil)
	}}
	for _, tc := range []struct {
		name     string
		service  []ctrlruntimeclient.Object
		kcp      []ctrlruntimeclient.Object
		kcpFuncs *interceptor.Funcs
		// want: imported (copy with state, kcp object, request gone),
		// untouched (no claim, request kept), or released (no claim,
		// request gone).
		want       string
		wantReason string
	}{
		{name: "imported", service: []ctrlruntimeclient.Object{ns("legacy", nil), source(nil)}, kcp: []ctrlruntimeclient.Object{ns("default", nil)}, want: "imported", wantReason: ReasonObjectImported},
		{name: "stopped after the claim: the next pass creates and adopts", service: []ctrlruntimeclient.Object{ns("legacy", nil), claimed(claim)}, kcp: []ctrlruntimeclient.Object{ns("default", nil)}, want: "imported", wantReason: ReasonObjectImported},
		{name: "stopped after the creation: the next pass adopts", service: []ctrlruntimeclient.Object{ns("legacy", nil), claimed(claim)}, kcp: []ctrlruntimeclient.Object{ns("default", nil), kcpObj("uid-legacy-a", false)}, want: "imported", wantReason: ReasonObjectImported},
		{name: "namespace created for another workspace", service: []ctrlruntimeclient.Object{ns("legacy", map[string]string{keys.CreatedForCluster: "ws2"}), source(nil)}, kcp: []ctrlruntimeclient.Object{ns("default", nil)}, want: "untouched", wantReason: "created for the objects of another workspace"},
		{name: "namespace named after another workspace whose copies it holds", service: []ctrlruntimeclient.Object{ns("legacy", nil), source(nil), copyIn("legacy", "legacy", "reference")}, kcp: []ctrlruntimeclient.Object{ns("default", nil)}, want: "untouched", wantReason: "named after workspace legacy"},
		{name: "namespace shared with another workspace's copies", service: []ctrlruntimeclient.Object{ns("legacy", nil), source(nil), copyIn("legacy", "ws2", "agent")}, kcp: []ctrlruntimeclient.Object{ns("default", nil)}, want: "imported", wantReason: ReasonObjectImported},
		{name: "kcp namespace missing", service: []ctrlruntimeclient.Object{ns("legacy", nil), source(nil)}, want: "untouched", wantReason: "does not exist in workspace"},
		{name: "kcp refuses the object: the claim is undone", service: []ctrlruntimeclient.Object{ns("legacy", nil), source(nil)}, kcp: []ctrlruntimeclient.Object{ns("default", nil)}, kcpFuncs: &invalid, want: "untouched", wantReason: "kcp refused the object"},
		{name: "the name is taken: a claim left by a stopped import is undone", service: []ctrlruntimeclient.Object{ns("legacy", nil), claimed(claim)}, kcp: []ctrlruntimeclient.Object{ns("default", nil), kcpObj("someone-else", false)}, want: "untouched", wantReason: "exists already"},
		{name: "the kcp object was deleted before the import was done", service: []ctrlruntimeclient.Object{ns("legacy", nil), claimed(claim)}, kcp: []ctrlruntimeclient.Object{ns("default", nil), kcpObj("uid-legacy-a", true)}, want: "released", wantReason: "is being deleted"},
		{name: "the answer to the creation was lost: the retry goes on with the import's own kcp object", service: []ctrlruntimeclient.Object{ns("legacy", nil), claimed(claim)}, kcp: []ctrlruntimeclient.Object{ns("default", nil)}, kcpFuncs: &lostAnswer, want: "imported", wantReason: ReasonObjectImported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newImportHarness(t, tc.service, tc.kcp, tc.kcpFuncs)
			imported, err := h.pass(t)
			if err != nil {
				t.Fatal(err)
			}
			if imported != (tc.want == "imported") {
				t.Errorf("the passes said imported: %v, want %v", imported, tc.want == "imported")
			}
			local := h.local(t)
			_, asks := local.GetLabels()[keys.ImportInto]
			claimed := objmeta.Remote{Cluster: "ws1", Namespace: "default", Name: "imported"}.Selector().Matches(labels.Set(local.GetLabels()))
			switch tc.want {
			case "imported":
				k := h.kcpObject(t)
				if k == nil || !claimed || !h.hasState(t) || asks {
					t.Fatalf("kcp object %v, claimed %v, state %v, request kept %v; want the object imported", k != nil, claimed, h.hasState(t), asks)
				}
				if spec, _, _ := unstructured.NestedString(k.Object, "spec", "color"); spec != "red" || !finalizer.For("agent").Holds(k) {
					t.Errorf("kcp object %v, want the object's spec and the agent's finalizer", k.Object)
				}
				if _, claim := local.GetAnnotations()[keys.Importing]; claim {
					t.Error("the claim stayed after the import")
				}
				// Again: nothing more happens.
				if imported, err := h.pass(t); err != nil || imported {
					t.Errorf("a pass after the import imported again (%v, %v)", imported, err)
				}
			case "untouched", "released":
				// Where a kcp object of the name exists, it syncs as usual
				// (with a copy and state of its own).
				if claimed || len(tc.kcp) < 2 && h.hasState(t) {
					t.Errorf("claimed %v, state %v: a refused import left the object as the copy of the kcp object", claimed, h.hasState(t))
				}
				if spec, _, _ := unstructured.NestedString(local.Object, "spec", "color"); spec != "red" {
					t.Errorf("the service object's spec.color is %q, want it as it was", spec)
				}
				if asks != (tc.want == "untouched") {
					t.Errorf("request label kept %v, want %v", asks, tc.want == "untouched")
				}
				if tc.want == "untouched" && len(tc.kcp) < 2 && h.kcpObject(t) != nil {
					t.Error("a refused import created the kcp object")
				}
			}
			if got := reasons(h.events); !strings.Contains(got, tc.wantReason) {
				t.Errorf("Events on the service object:\n%s\nwant one saying %q", got, tc.wantReason)
			}
		})
	}
}
