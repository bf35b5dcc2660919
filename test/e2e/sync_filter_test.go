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

//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestSyncFiltersNamesAndStatuslessTypes: only objects matching both
// filters sync; a 250-character name syncs; a type without a status
// subresource never gets a status written in kcp.
func TestSyncFiltersNamesAndStatuslessTypes(t *testing.T) {
	t.Parallel()
	plain := framework.TestCRD("example.com", "Plain", "v1")
	plain.Spec.Versions[0].Subresources = nil
	prs := []*syncagentv1alpha1.PublishedResource{
		thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Filter = &syncagentv1alpha1.ResourceFilter{
				Namespace: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
				Resource:  &metav1.LabelSelector{MatchLabels: map[string]string{"sync": "yes"}},
			}
		}),
		publishedResource("plains", "example.com", "Plain", func(s *syncagentv1alpha1.PublishedResourceSpec) {
			s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		}),
	}
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1"), plain}, prs, 1)
	ctx := t.Context()
	kcpc := ws[0].Client

	for name, labels := range map[string]map[string]string{"team-a": {"team": "a"}, "team-b": {"team": "b"}} {
		framework.Must(t, kcpc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}), "create namespace %s", name)
	}
	long := strings.Repeat("x", 250)
	create := func(namespace, name string, labels map[string]string) {
		obj := newObject(kcpThing, namespace, name, map[string]any{"color": "x"})
		obj.SetLabels(labels)
		framework.Must(t, kcpc.Create(ctx, obj), "create Thing %s/%s", namespace, name)
	}
	create("team-a", "match", map[string]string{"sync": "yes"})
	create("team-a", long, map[string]string{"sync": "yes"})
	create("team-a", "unlabelled", nil)
	create("team-b", "wrong-namespace", map[string]string{"sync": "yes"})

	waitLocal(t, f.Service.Client, localThing, ws[0].ClusterName, sha3short("team-a")+"-"+sha3short("match"))
	waitLocal(t, f.Service.Client, localThing, ws[0].ClusterName, sha3short("team-a")+"-"+sha3short(long))
	time.Sleep(3 * time.Second)
	items, err := localCopies(ctx, f.Service.Client, ws[0].ClusterName)
	framework.Must(t, err, "list local copies")
	if len(items) != 2 {
		var names []string
		for _, i := range items {
			names = append(names, i.GetAnnotations()["syncagent.kcp.io/remote-object-name"])
		}
		t.Errorf("synced objects = %v, want only the two matching ones", names)
	}

	// A type without a status subresource: the service's status stays local.
	kcpPlain := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Plain"}
	localPlain := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Plain"}
	framework.Must(t, kcpc.Create(ctx, newObject(kcpPlain, "default", "p1", map[string]any{"color": "x"})), "create Plain")
	local := waitLocal(t, f.Service.Client, localPlain, ws[0].ClusterName, sha3short("default")+"-"+sha3short("p1"))
	framework.Must(t, unstructured.SetNestedField(local.Object, "Ready", "status", "phase"), "set status")
	framework.Must(t, f.Service.Client.Update(ctx, local), "update local Plain")
	framework.WaitFor(t, syncTimeout, "the StatusSubresourceMissing warning", func(ctx context.Context) (bool, error) {
		return namespacedEventReasons(ctx, ws[0], "default", "p1")["StatusSubresourceMissing"], nil
	})
	remote := newObject(kcpPlain, "default", "p1", nil)
	framework.Must(t, kcpc.Get(ctx, types.NamespacedName{Namespace: "default", Name: "p1"}, remote), "get Plain")
	rv := remote.GetResourceVersion()
	time.Sleep(5 * time.Second)
	framework.Must(t, kcpc.Get(ctx, types.NamespacedName{Namespace: "default", Name: "p1"}, remote), "get Plain")
	if remote.GetResourceVersion() != rv {
		t.Errorf("the kcp object of a type without status subresource keeps being written")
	}
	if phase, _, _ := unstructured.NestedString(remote.Object, "status", "phase"); phase != "" {
		t.Errorf("status.phase = %q in kcp, want none", phase)
	}
}
