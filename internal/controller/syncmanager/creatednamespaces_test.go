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
	"errors"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	"github.com/kcp-syncagent/api-syncagent/internal/emptyns"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// serviceTypes stands in for the service cluster's discovery.
type serviceTypes []*metav1.APIResourceList

func (t serviceTypes) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return t, nil
}
func (serviceTypes) Invalidate() {}

// TestSweepCreatedNamespaces: a namespace this agent created for a
// workspace that is gone (in no endpoint's binding list, not engaged) is
// marked once a sweep finds it empty (the root CA bundle Kubernetes adds
// does not count) and deleted by the next sweep over the same endpoints if
// it did not change since. One that holds something, one of a bound or
// engaged workspace, one several workspaces share (its name does not name
// the workspace), one of another agent, one not created by an agent, and
// one the agent cannot prove empty stay; a sweep that cannot read the
// bindings, or reads other endpoints, starts again.
func TestSweepCreatedNamespaces(t *testing.T) {
	created := func(name, agent, cluster string) *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
		if agent != "" {
			ns.Labels = map[string]string{keys.CreatedBy: agent, keys.CreatedForCluster: cluster}
		}
		return ns
	}
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	holds := created("holds-ws2", "me", "ws2")
	holds.Annotations = map[string]string{keys.DeletionCandidate: "earlier"}
	service := fake.NewClientBuilder().WithScheme(s).WithObjects(
		created("empty-ws1", "me", "ws1"), created("touched-ws3", "me", "ws3"), holds,
		created("engaged", "me", "engaged"), created("bound", "me", "bound"), created("shared", "me", "ws1"),
		created("theirs-ws1", "other", "ws1"), created("unlabelled", "", ""), created("secret-ws4", "me", "ws4"),
	).Build()

	configMap := func(ns, name string) runtime.Object {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	ms := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(ms); err != nil {
		t.Fatal(err)
	}
	var objects []runtime.Object
	for _, ns := range []string{"empty-ws1", "touched-ws3", "holds-ws2", "engaged", "bound", "shared", "theirs-ws1", "unlabelled", "secret-ws4"} {
		objects = append(objects, configMap(ns, "kube-root-ca.crt"))
	}
	metadata := metadatafake.NewSimpleMetadataClient(ms, append(objects, configMap("holds-ws2", "settings"))...)
	metadata.PrependReactor("list", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "secret-ws4" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))
		}
		return false, nil, nil
	})
	discovery := serviceTypes{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Verbs: []string{"list"}},
		{Name: "secrets", Namespaced: true, Verbs: []string{"list"}},
	}}}

	f := newFleet(logr.Discard(), nil, nil, 0)
	f.clusters["engaged"] = engaged{ctx: context.Background(), ws: syncctrl.Workspace{Name: "engaged", Cluster: sweepCluster{}}}
	sw := &sweeper{fleet: f, client: service, reader: service, agentName: "me", log: logr.Discard(),
		emptyNS: &emptyns.Checker{Discovery: discovery, Metadata: metadata}, discovery: discovery}
	ctx := context.Background()

	left := func() (names, marked []string) {
		var list corev1.NamespaceList
		if err := service.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		for _, ns := range list.Items {
			names = append(names, ns.Name)
			if _, ok := ns.Annotations[keys.DeletionCandidate]; ok {
				marked = append(marked, ns.Name)
			}
		}
		slices.Sort(names)
		slices.Sort(marked)
		return names, marked
	}
	all, _ := left()
	ok := &bindings{bound: map[string]bool{"bound": true}, endpoints: "https://shard-a"}
	steps := []struct {
		name       string
		bindings   *bindings
		before     func()
		wantLeft   []string
		wantMarked []string
	}{
		{name: "bindings unreadable: nothing", bindings: &bindings{err: errors.New("shard down"), endpoints: "https://shard-a"},
			wantLeft: all, wantMarked: []string{"holds-ws2"}},
		{name: "first sweep: the empty ones of gone workspaces are marked, a stale mark removed", bindings: ok,
			wantLeft: all, wantMarked: []string{"empty-ws1", "touched-ws3"}},
		{name: "other endpoints: marked again, not deleted", bindings: &bindings{bound: map[string]bool{"bound": true}, endpoints: "https://shard-b"},
			wantLeft: all, wantMarked: []string{"empty-ws1", "touched-ws3"}},
		{name: "the same endpoints again: the unchanged one goes, the one changed since its mark is marked again", bindings: &bindings{bound: map[string]bool{"bound": true}, endpoints: "https://shard-b"},
			before: func() {
				ns := &corev1.Namespace{}
				if err := service.Get(ctx, types.NamespacedName{Name: "touched-ws3"}, ns); err != nil {
					t.Fatal(err)
				}
				ns.Annotations["someone"] = "was here"
				if err := service.Update(ctx, ns); err != nil {
					t.Fatal(err)
				}
			},
			wantLeft:   []string{"bound", "engaged", "holds-ws2", "secret-ws4", "shared", "theirs-ws1", "touched-ws3", "unlabelled"},
			wantMarked: []string{"touched-ws3"}},
		{name: "and then it goes too", bindings: &bindings{bound: map[string]bool{"bound": true}, endpoints: "https://shard-b"},
			wantLeft: []string{"bound", "engaged", "holds-ws2", "secret-ws4", "shared", "theirs-ws1", "unlabelled"}},
	}
	for _, step := range steps {
		if step.before != nil {
			step.before()
		}
		sw.createdNamespaces(ctx, func() *bindings { return step.bindings })
		names, marked := left()
		if diff := cmp.Diff(step.wantLeft, names); diff != "" {
			t.Errorf("%s: namespaces left (-want +got):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(step.wantMarked, marked); diff != "" {
			t.Errorf("%s: namespaces marked (-want +got):\n%s", step.name, diff)
		}
	}
}
