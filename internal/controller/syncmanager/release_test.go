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

package syncmanager

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestReleaseOnEveryEndpoint(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "kcp.example.com", Version: "v1", Resource: "things"}
	gvk := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	thing := func(cluster, name string, finalizers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("default")
		u.SetName(name)
		u.SetAnnotations(map[string]string{"kcp.io/cluster": cluster})
		u.SetFinalizers(finalizers)
		return u
	}
	newEndpoint := func(objs ...runtime.Object) *fakedynamic.FakeDynamicClient {
		return fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"}, objs...)
	}
	shardDown := errors.New("connection refused")
	own, theirs := finalizer.For("agent").Own, finalizer.For("another-agent").Own

	testcases := []struct {
		name         string
		endpoints    map[string]*fakedynamic.FakeDynamicClient
		unreachable  string
		wantReleased int
		wantErr      bool
	}{
		{
			name: "objects of workspaces on every endpoint lose our finalizer only, with state or without (accepted, never synced); " +
				"a legacy finalizer only where we hold state; another agent's never",
			endpoints: map[string]*fakedynamic.FakeDynamicClient{
				"https://shard-1": newEndpoint(thing("ws1", "a", own), thing("ws1", "b", "other.io/keep", own), thing("ws2", "c"),
					thing("ws2", "foreign", keys.CleanupFinalizer), thing("ws2", "never-synced", own), thing("ws2", "theirs", theirs)),
				"https://shard-2": newEndpoint(thing("ws3", "d", keys.CleanupFinalizer)),
			},
			wantReleased: 4,
		},
		{
			name: "an unreachable endpoint is an error, the others are released",
			endpoints: map[string]*fakedynamic.FakeDynamicClient{
				"https://shard-1": newEndpoint(thing("ws1", "a", own)),
				"https://shard-2": newEndpoint(thing("ws3", "d", own)),
			},
			unreachable:  "https://shard-2",
			wantReleased: 1,
			wantErr:      true,
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			for u := range tc.endpoints {
				urls = append(urls, u)
			}
			slices.Sort(urls)
			var events []string
			store := newStateStore()
			for _, o := range [][2]string{{"ws1", "a"}, {"ws1", "b"}, {"ws3", "d"}} {
				p := state.Primary{Remote: objmeta.Remote{Cluster: o[0], Namespace: "default", Name: o[1]}, APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
				if err := store.Put(context.Background(), p, map[string]any{"spec": map[string]any{}}); err != nil {
					t.Fatal(err)
				}
			}
			rel := &release{
				urls:    urls,
				clients: func(url, _ string) (dynamic.Interface, error) { return tc.endpoints[url], nil },
				served: func(url string, gr schema.GroupResource) (schema.GroupVersionKind, bool, error) {
					if url == tc.unreachable {
						return schema.GroupVersionKind{}, false, shardDown
					}
					return gvk, gr == gvr.GroupResource(), nil
				},
				resourceOf: func(string, schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
					return gvr, true, nil
				},
				state: store,
				fin:   finalizer.For("agent"),
				event: func(cluster string, obj *unstructured.Unstructured) {
					events = append(events, cluster+"/"+obj.GetName())
				},
			}
			n, err := rel.run(context.Background(), gvr.GroupResource())
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, shardDown)) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if n != tc.wantReleased || len(events) != tc.wantReleased {
				t.Errorf("released %d with events %v, want %d", n, events, tc.wantReleased)
			}
			for url, c := range tc.endpoints {
				if url == tc.unreachable {
					continue
				}
				list, err := c.Resource(gvr).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Items {
					if has := slices.Contains(o.GetFinalizers(), own) || slices.Contains(o.GetFinalizers(), keys.CleanupFinalizer); has != (o.GetName() == "foreign") {
						t.Errorf("%s %s: a finalizer of ours %v, want one only on the legacy object we hold no state for", url, o.GetName(), has)
					}
					if o.GetName() == "theirs" && !slices.Equal(o.GetFinalizers(), []string{theirs}) {
						t.Errorf("another agent's finalizers: %v", o.GetFinalizers())
					}
					if o.GetName() == "b" && !slices.Equal(o.GetFinalizers(), []string{"other.io/keep"}) {
						t.Errorf("b's other finalizers: %v", o.GetFinalizers())
					}
				}
			}
		})
	}
}

// TestReleaseFinalizerBelongsToItsAgent: each agent adds and removes only
// its own finalizer, and only on PublishedResources it selects; one that
// it does not select (another agent's) is never touched, deleted or not.
// Without the permission to patch PublishedResources the agent syncs on.
func TestReleaseFinalizerBelongsToItsAgent(t *testing.T) {
	s := kcp.NewScheme() // the endpoint slice (none here)
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pr := func(name, agent string, deleted bool, finalizers ...string) *syncagentv1alpha1.PublishedResource {
		p := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"agent": agent}, Finalizers: finalizers}}
		if deleted {
			p.DeletionTimestamp = &now
		}
		return p
	}
	ours, theirs := keys.ReleaseFinalizer("x"), keys.ReleaseFinalizer("y")
	eu, us := keys.ReleaseFinalizerIn("x", "eu"), keys.ReleaseFinalizerIn("x", "us")
	testcases := []struct {
		name      string
		partition string
		pr        *syncagentv1alpha1.PublishedResource
		forbidden bool
		want      []string
	}{
		{name: "a selected PublishedResource gets our finalizer", pr: pr("a", "x", false), want: []string{ours}},
		{name: "another agent's keeps its finalizer and gets none of ours", pr: pr("b", "y", false, theirs), want: []string{theirs}},
		{name: "another agent's deleted one is not finalized by us", pr: pr("c", "y", true, theirs), want: []string{theirs}},
		{name: "a deselected one loses our finalizer only", pr: pr("d", "y", false, ours, theirs), want: []string{theirs}},
		{name: "without patch permission the agent goes on", pr: pr("e", "x", false), forbidden: true},
		{name: "a partition's agent adds its partition's finalizer next to another partition's", partition: "eu", pr: pr("f", "x", false, us), want: []string{us, eu}},
		{name: "deselected, a partition's agent removes only its partition's finalizer", partition: "eu", pr: pr("g", "y", false, us, eu, ours), want: []string{us, ours}},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.pr).WithStatusSubresource(&syncagentv1alpha1.PublishedResource{}).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.PatchOption) error {
					if tc.forbidden {
						return apierrors.NewForbidden(schema.GroupResource{Group: "syncagent.kcp.io", Resource: "publishedresources"}, obj.GetName(), errors.New("RBAC"))
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			h := newFleetHarness(t)
			r := &reconciler{Options: Options{AgentName: "x", Partition: tc.partition, Selector: labels.SelectorFromSet(labels.Set{"agent": "x"}), Target: &kcp.Target{EndpointSliceName: "slice"}},
				releases: startedReleases(t), client: c, kcpCache: c, fleet: h.fleet, log: logr.Discard(), prEvents: record.NewFakeRecorder(10),
				status: &conditions.Writer{Client: c, Reader: c, FieldOwner: ControllerName, Log: logr.Discard()},
				warned: map[string]bool{}, releasing: map[string]int{}, notServed: map[string]int{}}
			res, err := reconcileReleased(t, r, tc.pr.Name)
			if err != nil || !res.IsZero() {
				t.Fatalf("got %+v, %v", res, err)
			}
			if r.warned[tc.pr.Name] != tc.forbidden {
				t.Errorf("refused patch reported: %v, want %v", r.warned[tc.pr.Name], tc.forbidden)
			}
			got := &syncagentv1alpha1.PublishedResource{}
			if err := c.Get(context.Background(), types.NamespacedName{Name: tc.pr.Name}, got); err != nil {
				t.Fatal(err)
			}
			if tc.forbidden && findSyncReady(got) == nil {
				t.Error("without patch permission the PublishedResource was not reconciled")
			}
			if tc.partition != "" && got.Labels["agent"] == "x" {
				// The condition of its partition, and no other.
				if r.syncReadyOf(got) == nil || findSyncReady(got) != nil {
					t.Errorf("conditions %+v, want %s and no SyncReady", got.Status.Conditions, conditions.SyncReadyType(tc.partition))
				}
			}
			if !slices.Equal(got.Finalizers, tc.want) {
				t.Errorf("finalizers %v, want %v", got.Finalizers, tc.want)
			}
		})
	}
}

func findSyncReady(pr *syncagentv1alpha1.PublishedResource) *metav1.Condition {
	return apimeta.FindStatusCondition(pr.Status.Conditions, syncagentv1alpha1.ConditionSyncReady)
}

// TestReleaseLosesNoConcurrentFinalizer: another controller adds its
// finalizer between the release's list and its patch; the patch carries
// the listed resourceVersion, so it fails instead of dropping that
// finalizer, and the same pass reads the object again and releases it
// with both seen.
func TestReleaseLosesNoConcurrentFinalizer(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "kcp.example.com", Version: "v1", Resource: "things"}
	gvk := gvr.GroupVersion().WithKind("Thing")
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace("default")
	obj.SetName("a")
	obj.SetResourceVersion("1")
	obj.SetUID("first")
	obj.SetAnnotations(map[string]string{"kcp.io/cluster": "ws1"})
	obj.SetFinalizers([]string{keys.CleanupFinalizer})
	c := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"}, obj)
	raced := false
	c.PrependReactor("patch", "things", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		// The other controller's write, just before ours.
		current, err := c.Tracker().Get(gvr, "default", "a")
		if err != nil {
			return true, nil, err
		}
		u := current.(*unstructured.Unstructured)
		u.SetFinalizers(append(u.GetFinalizers(), "other.io/keep"))
		u.SetResourceVersion("2")
		if err := c.Tracker().Update(gvr, u, "default"); err != nil {
			return true, nil, err
		}
		var body map[string]any
		if err := json.Unmarshal(action.(clienttesting.PatchAction).GetPatch(), &body); err != nil {
			return true, nil, err
		}
		if rv, _, _ := unstructured.NestedString(body, "metadata", "resourceVersion"); rv != "2" {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), "a", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	store := newStateStore()
	p := state.Primary{Remote: objmeta.Remote{Cluster: "ws1", Namespace: "default", Name: "a"}, APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	if err := store.Put(context.Background(), p, map[string]any{"spec": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	rel := &release{
		urls:    []string{"https://shard"},
		clients: func(string, string) (dynamic.Interface, error) { return c, nil },
		served:  func(string, schema.GroupResource) (schema.GroupVersionKind, bool, error) { return gvk, true, nil },
		resourceOf: func(string, schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
			return gvr, true, nil
		},
		state: store,
		fin:   finalizer.For("agent"),
	}
	// One pass: the conflict is retried with a fresh read (a release of a
	// PublishedResource deleted without our finalizer has no second pass).
	if n, err := rel.run(context.Background(), gvr.GroupResource()); err != nil || n != 1 {
		t.Fatalf("released %d, error %v; want 1 and no error", n, err)
	}
	if !raced {
		t.Fatal("the concurrent write did not happen")
	}
	got, err := c.Resource(gvr).Namespace("default").Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.GetFinalizers(), []string{"other.io/keep"}) {
		t.Errorf("finalizers %v, want only the other controller's", got.GetFinalizers())
	}
}

// newStateStore is the agent's state store on a fake service cluster with
// the agent's Secret indexes.
func newStateStore() *state.Store {
	c := fake.NewClientBuilder().
		WithIndex(&corev1.Secret{}, objmeta.RemoteIndex, objmeta.RemoteIndexValues).
		WithIndex(&corev1.Secret{}, state.RelatedObjectIndex, state.RelatedObjectIndexValues).Build()
	return &state.Store{Client: c, Live: c, Namespace: "kcp-system", AgentName: "agent"}
}

// TestReleaseLeavesRecreatedObject: the object is deleted and re-created
// under its name between the release's list and its patch; the new object
// is not the one the pass decided to release and keeps its finalizer.
func TestReleaseLeavesRecreatedObject(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "kcp.example.com", Version: "v1", Resource: "things"}
	gvk := gvr.GroupVersion().WithKind("Thing")
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace("default")
	obj.SetName("a")
	obj.SetResourceVersion("1")
	obj.SetUID("first")
	obj.SetAnnotations(map[string]string{"kcp.io/cluster": "ws1"})
	obj.SetFinalizers([]string{keys.CleanupFinalizer})
	c := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"}, obj)
	c.PrependReactor("patch", "things", func(action clienttesting.Action) (bool, runtime.Object, error) {
		current, err := c.Tracker().Get(gvr, "default", "a")
		if err != nil {
			return true, nil, err
		}
		u := current.(*unstructured.Unstructured)
		if u.GetUID() == "first" { // re-created just before our patch
			u.SetUID("second")
			u.SetResourceVersion("2")
			if err := c.Tracker().Update(gvr, u, "default"); err != nil {
				return true, nil, err
			}
		}
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), "a", errors.New("the object has been modified"))
	})
	store := newStateStore()
	p := state.Primary{Remote: objmeta.Remote{Cluster: "ws1", Namespace: "default", Name: "a"}, APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	if err := store.Put(context.Background(), p, map[string]any{"spec": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	rel := &release{
		urls:    []string{"https://shard"},
		clients: func(string, string) (dynamic.Interface, error) { return c, nil },
		served:  func(string, schema.GroupResource) (schema.GroupVersionKind, bool, error) { return gvk, true, nil },
		resourceOf: func(string, schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
			return gvr, true, nil
		},
		state: store,
		fin:   finalizer.For("agent"),
	}
	if n, err := rel.run(context.Background(), gvr.GroupResource()); err != nil || n != 0 {
		t.Fatalf("released %d, error %v; want 0 and no error", n, err)
	}
	got, err := c.Tracker().Get(gvr, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	if f := got.(*unstructured.Unstructured).GetFinalizers(); !slices.Equal(f, []string{keys.CleanupFinalizer}) {
		t.Errorf("finalizers of the re-created object %v, want ours kept", f)
	}
}

// TestReleaseRelatedAfterATakeover: another agent took the PublishedResource
// over (same namespace) and rewrote this agent's related record as its own.
// The release still removes this agent's finalizer from the source (and
// only its own), and leaves the other agent's record alone.
func TestReleaseRelatedAfterATakeover(t *testing.T) {
	ctx := context.Background()
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	thingGK := schema.GroupKind{Group: "kcp.example.com", Kind: "Thing"}
	own, theirs := finalizer.For("agent").Own, finalizer.For("another-agent").Own
	c := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		configMapSource("cfg", own, theirs))

	store := newStateStore()
	rec := state.Related{
		Primary: state.Primary{Remote: objmeta.Remote{Cluster: "ws1", Namespace: "default", Name: "a"}, APIVersion: "kcp.example.com/v1", Kind: "Thing"},
		RelatedRecord: state.RelatedRecord{Identifier: "config", OriginSide: "kcp", Finalizer: theirs,
			Origin:      state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cfg"},
			Destination: state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ws1", Name: "cfg"}},
	}
	other := *store
	other.AgentName = "another-agent"
	if err := other.PutRelated(ctx, rec, map[string]any{"data": map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	rel := &release{
		urls:    []string{"https://shard"},
		clients: func(string, string) (dynamic.Interface, error) { return c, nil },
		resourceOf: func(string, schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
			return cmGVR, true, nil
		},
		state: store,
		fin:   finalizer.For("agent"),
	}
	if err := rel.releaseRelated(ctx, thingGK); err != nil {
		t.Fatal(err)
	}
	got, err := c.Resource(cmGVR).Namespace("default").Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.GetFinalizers(), []string{theirs}) {
		t.Errorf("the source's finalizers %v, want only the other agent's", got.GetFinalizers())
	}
	if r, err := store.StoredRecord(ctx, rec, true); err != nil || r == nil {
		t.Errorf("the other agent's record: %v, %v; want it kept", r, err)
	}
}

// TestReleaseOnlyLeavesAnotherSyncer: with its sync controller disabled
// the agent adds its finalizer to no PublishedResource and releases one
// that carries it (it synced it before). When the finalizer comes back (an
// agent of the same name syncs it), it leaves it and says so instead of
// releasing again.
func TestReleaseOnlyLeavesAnotherSyncer(t *testing.T) {
	s := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ours := keys.ReleaseFinalizer("x")
	held := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "held", UID: "held-uid", Labels: map[string]string{"agent": "x"}, Finalizers: []string{ours}}}
	free := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "free", UID: "free-uid", Labels: map[string]string{"agent": "x"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(held, free).WithStatusSubresource(&syncagentv1alpha1.PublishedResource{}).Build()
	events := record.NewFakeRecorder(10)
	r := &reconciler{Options: Options{AgentName: "x", Selector: labels.SelectorFromSet(labels.Set{"agent": "x"}), Target: &kcp.Target{EndpointSliceName: "slice"}, ReleaseOnly: true},
		releases: startedReleases(t), client: c, kcpCache: c, fleet: newFleetHarness(t).fleet, log: logr.Discard(), prEvents: events,
		status: &conditions.Writer{Client: c, Reader: c, FieldOwner: ControllerName, Log: logr.Discard()},
		warned: map[string]bool{}, releasing: map[string]int{}, notServed: map[string]int{}}
	ctx := context.Background()
	finalizers := func(name string) []string {
		t.Helper()
		got := &syncagentv1alpha1.PublishedResource{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
			t.Fatal(err)
		}
		return got.Finalizers
	}
	reconcileOnce := func(name string) {
		t.Helper()
		if res, err := reconcileReleased(t, r, name); err != nil || !res.IsZero() {
			t.Fatalf("reconcile %s: %+v, %v", name, res, err)
		}
	}
	reconcileOnce("free")
	reconcileOnce("held")
	if got := finalizers("free"); len(got) != 0 {
		t.Errorf("a PublishedResource the agent never synced got finalizers %v", got)
	}
	if got := finalizers("held"); len(got) != 0 {
		t.Errorf("the released PublishedResource keeps finalizers %v", got)
	}
	if len(events.Events) != 0 {
		t.Errorf("Events of a plain release: %v", <-events.Events)
	}

	// An agent of the same name syncs it and puts the finalizer back.
	pr := &syncagentv1alpha1.PublishedResource{}
	if err := c.Get(ctx, types.NamespacedName{Name: "held"}, pr); err != nil {
		t.Fatal(err)
	}
	pr.Finalizers = []string{ours}
	if err := c.Update(ctx, pr); err != nil {
		t.Fatal(err)
	}
	reconcileOnce("held")
	if got := finalizers("held"); !slices.Equal(got, []string{ours}) {
		t.Errorf("finalizers after the other agent took it back: %v, want %v", got, []string{ours})
	}
	select {
	case e := <-events.Events:
		if !strings.Contains(e, ReasonReleaseFailed) || !strings.Contains(e, "another agent of the same name") {
			t.Errorf("Event %q, want a ReleaseFailed Warning naming the shared agent name", e)
		}
	default:
		t.Error("no Event says that another agent of the same name syncs it")
	}
}

// TestReleaseRunsOffTheWorker: a deleted PublishedResource's release is in
// flight (many objects, a slow shard). Its reconcile returns at once and
// shows the progress in SyncReady (Releasing), another PublishedResource
// is reconciled meanwhile on the same single worker, and once the release
// ends the deleted one loses the agent's finalizer.
func TestReleaseRunsOffTheWorker(t *testing.T) {
	s := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ours := keys.ReleaseFinalizer("x")
	now := metav1.Now()
	deleted := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "deleted", Labels: map[string]string{"agent": "x"},
		Finalizers: []string{ours}, DeletionTimestamp: &now}}
	other := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"agent": "x"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(deleted, other).WithStatusSubresource(&syncagentv1alpha1.PublishedResource{}).Build()
	releases := startedReleases(t)
	r := &reconciler{Options: Options{AgentName: "x", Selector: labels.SelectorFromSet(labels.Set{"agent": "x"}), Target: &kcp.Target{EndpointSliceName: "slice"}},
		releases: releases, client: c, kcpCache: c, fleet: newFleetHarness(t).fleet, log: logr.Discard(), prEvents: record.NewFakeRecorder(10),
		status: &conditions.Writer{Client: c, Reader: c, FieldOwner: ControllerName, Log: logr.Discard()},
		warned: map[string]bool{}, releasing: map[string]int{}, notServed: map[string]int{}}
	ctx := context.Background()
	// The release of "deleted" is under way: 2000 objects found, 700 released.
	unblock := make(chan struct{})
	if _, err := releases.start(ctx, allOf("deleted"), func(_ context.Context, p *releaseProgress) error {
		p.count(2000, 700)
		<-unblock
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *syncagentv1alpha1.PublishedResource {
		t.Helper()
		got := &syncagentv1alpha1.PublishedResource{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	var res reconcile.Result
	var err error
	// Reconciles may find the job before its progress is counted.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if res, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "deleted"}}); err != nil {
			t.Fatal(err)
		}
		if c := findSyncReady(get("deleted")); c != nil && strings.Contains(c.Message, "700 released of the 2000 found so far") || time.Now().After(deadline) {
			break
		}
	}
	if res.RequeueAfter != releaseProgressInterval {
		t.Errorf("a reconcile during the release: %+v, want a look again after %s", res, releaseProgressInterval)
	}
	cond := findSyncReady(get("deleted"))
	if cond == nil || cond.Reason != syncagentv1alpha1.ReasonReleasing || !strings.Contains(cond.Message, "700 released of the 2000 found so far") {
		t.Errorf("SyncReady during the release: %+v, want Releasing with its progress", cond)
	}
	if !slices.Contains(get("deleted").Finalizers, ours) {
		t.Error("the release finalizer went before the release ended")
	}
	// The single worker is free for the others meanwhile.
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(get("other").Finalizers, ours) {
		t.Error("the other PublishedResource was not reconciled during the release")
	}
	close(unblock)
	if res, err := reconcileReleased(t, r, "deleted"); err != nil || !res.IsZero() {
		t.Fatalf("after the release: %+v, %v", res, err)
	}
	// Its last finalizer gone, the deleted PublishedResource is removed.
	if err := c.Get(ctx, types.NamespacedName{Name: "deleted"}, &syncagentv1alpha1.PublishedResource{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted PublishedResource after its release: %v, want it gone", err)
	}
}
