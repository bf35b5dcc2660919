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
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// TestReleaseUnrecordedSources: a kcp-origin source gets the agent's
// finalizer before its first copy; one whose copy was never written has no
// record. The release of its PublishedResource removes the agent's own
// finalizer from such sources, and leaves those a record of another
// primary still names, the legacy finalizer (without a record it may be
// another agent's) and other agents' finalizers.
func TestReleaseUnrecordedSources(t *testing.T) {
	ctx := context.Background()
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	own, theirs := finalizer.For("agent").Own, finalizer.For("another-agent").Own
	c := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"},
		configMapSource("unrecorded", own), configMapSource("held", own), configMapSource("legacy", keys.CleanupFinalizer), configMapSource("theirs", theirs, own))
	store := newStateStore()
	held := state.Related{
		Primary: state.Primary{Remote: objmeta.Remote{Cluster: "ws1", Namespace: "default", Name: "g"}, APIVersion: "kcp.example.com/v1", Kind: "Gadget"},
		RelatedRecord: state.RelatedRecord{Identifier: "config", OriginSide: "kcp", Finalizer: own,
			Origin:      state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "held"},
			Destination: state.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ws1", Name: "held"}},
	}
	if err := store.PutRelated(ctx, held, map[string]any{"data": map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	rel := &release{
		urls:    []string{"https://shard"},
		clients: func(string, string) (dynamic.Interface, error) { return c, nil },
		state:   store,
		fin:     finalizer.For("agent"),
	}
	n, err := rel.releaseUnrecorded(ctx, "https://shard", cmGVR)
	if err != nil || n != 2 {
		t.Fatalf("released %d, %v; want 2 (the unrecorded source, and our finalizer next to another agent's)", n, err)
	}
	want := map[string][]string{"unrecorded": nil, "held": {own}, "legacy": {keys.CleanupFinalizer}, "theirs": {theirs}}
	for name, finalizers := range want {
		got, err := c.Resource(cmGVR).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.GetFinalizers(), finalizers) {
			t.Errorf("%s: finalizers %v, want %v", name, got.GetFinalizers(), finalizers)
		}
	}
}

// TestSourceInUseElsewhere: the sources of a released PublishedResource
// that no record names are left alone while another selected
// PublishedResource reads the same resource as a kcp-origin source (its
// passes may be between the finalizer and the record) or syncs it.
func TestSourceInUseElsewhere(t *testing.T) {
	s := kcp.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	secrets := syncagentv1alpha1.RelatedResourceSpec{Identifier: "creds", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Version: "v1", Resource: "secrets"}
	released := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "released", Labels: map[string]string{"agent": "x"}},
		Spec: syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{secrets}}}
	reader := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: map[string]string{"agent": "x"}},
		Spec: syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{secrets}}}
	unselected := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "unselected", Labels: map[string]string{"agent": "y"}},
		Spec: syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{{Identifier: "cm", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Version: "v1", Resource: "configmaps"}}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(released, reader, unselected).Build()
	r := &reconciler{Options: Options{AgentName: "x", Selector: labels.SelectorFromSet(labels.Set{"agent": "x"})}, client: c}
	for gr, want := range map[schema.GroupResource]bool{{Resource: "secrets"}: true, {Resource: "configmaps"}: false} {
		got, err := r.sourceInUseElsewhere(context.Background(), gr, "released")
		if err != nil || got != want {
			t.Errorf("sourceInUseElsewhere(%s) = %v, %v; want %v", gr, got, err, want)
		}
	}
	if got := kcpSourceResources(released); len(got) != 1 || got[0] != (schema.GroupVersionResource{Version: "v1", Resource: "secrets"}) {
		t.Errorf("kcpSourceResources = %v, want v1 secrets", got)
	}
}

// configMapSource is a kcp-origin related ConfigMap default/name of
// workspace ws1, as the virtual workspace lists it, with finalizers.
func configMapSource(name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	u.SetNamespace("default")
	u.SetName(name)
	u.SetResourceVersion("1")
	u.SetAnnotations(map[string]string{"kcp.io/cluster": "ws1"})
	u.SetFinalizers(finalizers)
	return u
}
