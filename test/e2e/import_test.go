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
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestImport: a service owner imports three Things that already run on the
// service cluster into two workspaces by labelling them; each appears in
// its workspace with its spec, becomes the kcp object's copy where it is,
// and from then on the usual rules hold: a kcp change arrives, a
// service-side change of another field stays, status goes up, deleting
// the kcp object deletes the copy. Requests that would move another
// workspace's data, or take a kcp name that is in use, are refused with
// an Event and change nothing.
func TestImport(t *testing.T) {
	t.Parallel()
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 2, "--enable-imports")
	ctx := t.Context()
	svc := f.Service.Client

	// Namespaces on both sides: the service owner's own, one the agent
	// (as it would) created for the second workspace, and the kcp
	// namespace of the first import.
	framework.Must(t, svc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}}), "create namespace legacy")
	framework.Must(t, svc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "for-ws1",
		Labels: map[string]string{"syncagent.kcp.io/created-for-cluster": ws[1].ClusterName}}}), "create namespace for-ws1")
	framework.Must(t, ws[0].Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}}), "create namespace legacy in kcp")
	taken := newObject(kcpThing, "default", "taken", map[string]any{"color": "consumer's"})
	framework.Must(t, ws[1].Client.Create(ctx, taken), "create a kcp Thing")

	legacy := func(namespace, name, into string, annotations map[string]string, spec map[string]any) {
		u := newObject(localThing, namespace, name, spec)
		u.SetLabels(map[string]string{"syncagent.kcp.io/import-into": into, "app": name})
		u.SetAnnotations(annotations)
		framework.Must(t, svc.Create(ctx, u), "create service-side Thing %s/%s", namespace, name)
	}
	legacy("legacy", "a", ws[0].ClusterName, nil, map[string]any{"color": "red", "size": "S"})
	legacy("legacy", "b", ws[0].ClusterName, map[string]string{"syncagent.kcp.io/import-name": "b-renamed", "syncagent.kcp.io/import-namespace": "default"}, map[string]any{"color": "green"})
	legacy("legacy", "c", ws[1].ClusterName, map[string]string{"syncagent.kcp.io/import-namespace": "default"}, map[string]any{"color": "blue", "size": "M"})
	// Refused: another workspace's namespace; a kcp name in use.
	legacy("for-ws1", "d", ws[0].ClusterName, map[string]string{"syncagent.kcp.io/import-namespace": "default"}, map[string]any{"color": "stolen"})
	legacy("legacy", "e", ws[1].ClusterName, map[string]string{"syncagent.kcp.io/import-name": "taken", "syncagent.kcp.io/import-namespace": "default"}, map[string]any{"color": "service's"})

	kcpSpec := func(w *framework.Workspace, namespace, name string) (map[string]any, error) {
		obj := newObject(kcpThing, namespace, name, nil)
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
			return nil, ctrlruntimeclient.IgnoreNotFound(err)
		}
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		return spec, nil
	}
	localObj := func(namespace, name string) (*unstructured.Unstructured, error) {
		u := newObject(localThing, namespace, name, nil)
		return u, svc.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u)
	}

	type imported struct {
		ws                        *framework.Workspace
		kcpNamespace, kcpName     string
		localNamespace, localName string
		spec                      map[string]any
	}
	for _, want := range []imported{
		{ws[0], "legacy", "a", "legacy", "a", map[string]any{"color": "red", "size": "S"}},
		{ws[0], "default", "b-renamed", "legacy", "b", map[string]any{"color": "green"}},
		{ws[1], "default", "c", "legacy", "c", map[string]any{"color": "blue", "size": "M"}},
	} {
		framework.WaitFor(t, syncTimeout, "Thing "+want.kcpName+" imported", func(ctx context.Context) (bool, error) {
			spec, err := kcpSpec(want.ws, want.kcpNamespace, want.kcpName)
			if err != nil || spec == nil {
				return false, err
			}
			local, err := localObj(want.localNamespace, want.localName)
			if err != nil {
				return false, err
			}
			l := local.GetLabels()
			_, asks := l["syncagent.kcp.io/import-into"]
			return !asks && l["syncagent.kcp.io/remote-object-cluster"] == want.ws.ClusterName && reflect.DeepEqual(spec, want.spec), nil
		})
		obj := newObject(kcpThing, want.kcpNamespace, want.kcpName, nil)
		framework.Must(t, want.ws.Client.Get(ctx, types.NamespacedName{Namespace: want.kcpNamespace, Name: want.kcpName}, obj), "get imported Thing")
		if !slices.Equal(obj.GetFinalizers(), []string{agentFinalizer(f)}) {
			t.Errorf("imported Thing %s has finalizers %v, want the agent's", want.kcpName, obj.GetFinalizers())
		}
		if obj.GetLabels()["app"] != want.localName {
			t.Errorf("imported Thing %s has labels %v, want the service object's app label", want.kcpName, obj.GetLabels())
		}
	}
	// The imported objects are the copies: no other copy was created (the
	// consumer's own Thing "taken" has its copy where the naming puts it).
	for i, want := range [][]string{{"a", "b"}, {"c"}} {
		copies, err := localCopies(ctx, svc, ws[i].ClusterName)
		framework.Must(t, err, "list copies")
		var names []string
		for _, c := range copies {
			if c.GetAnnotations()["syncagent.kcp.io/remote-object-name"] == "taken" {
				continue
			}
			names = append(names, c.GetNamespace()+"/"+c.GetName())
		}
		slices.Sort(names)
		var wantNames []string
		for _, n := range want {
			wantNames = append(wantNames, "legacy/"+n)
		}
		if !slices.Equal(names, wantNames) {
			t.Errorf("copies of workspace %d: %v, want %v", i, names, wantNames)
		}
	}

	// The refused requests: an Event each, nothing in kcp, the service
	// objects untouched, the kcp object in use untouched.
	framework.WaitFor(t, syncTimeout, "ImportRefused on the two refused objects", func(ctx context.Context) (bool, error) {
		return len(eventMessages(ctx, svc, "for-ws1", "d", "ImportRefused")) > 0 &&
			len(eventMessages(ctx, svc, "legacy", "e", "ImportRefused")) > 0, nil
	})
	if spec, err := kcpSpec(ws[0], "default", "d"); err != nil || spec != nil {
		t.Errorf("the Thing of another workspace's namespace reached kcp: %v (%v)", spec, err)
	}
	if spec, err := kcpSpec(ws[1], "default", "taken"); err != nil || !reflect.DeepEqual(spec, map[string]any{"color": "consumer's"}) {
		t.Errorf("the kcp Thing whose name an import asked for: %v (%v), want it untouched", spec, err)
	}
	for _, key := range []types.NamespacedName{{Namespace: "for-ws1", Name: "d"}, {Namespace: "legacy", Name: "e"}} {
		local, err := localObj(key.Namespace, key.Name)
		framework.Must(t, err, "get refused Thing")
		if _, synced := local.GetLabels()["syncagent.kcp.io/remote-object-cluster"]; synced {
			t.Errorf("the refused Thing %s became a copy", key)
		}
	}

	// From now on the usual rules: kcp changes color of a; the service
	// side changes size of c, then kcp changes color of c.
	setSpec := func(w *framework.Workspace, namespace, name, field, value string) {
		obj := newObject(kcpThing, namespace, name, nil)
		framework.Must(t, w.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj), "get Thing")
		framework.Must(t, unstructured.SetNestedField(obj.Object, value, "spec", field), "set field")
		framework.Must(t, w.Client.Update(ctx, obj), "update Thing in kcp")
	}
	setSpec(ws[0], "legacy", "a", "color", "purple")
	c, err := localObj("legacy", "c")
	framework.Must(t, err, "get c")
	framework.Must(t, unstructured.SetNestedField(c.Object, "XL", "spec", "size"), "set size")
	framework.Must(t, svc.Update(ctx, c), "update c on the service side")
	setSpec(ws[1], "default", "c", "color", "black")
	for _, want := range []struct {
		name string
		spec map[string]any
	}{
		{"a", map[string]any{"color": "purple", "size": "S"}},
		{"c", map[string]any{"color": "black", "size": "XL"}},
	} {
		framework.WaitFor(t, syncTimeout, "the copy "+want.name+" after changes", func(ctx context.Context) (bool, error) {
			local, err := localObj("legacy", want.name)
			if err != nil {
				return false, err
			}
			spec, _, _ := unstructured.NestedMap(local.Object, "spec")
			return reflect.DeepEqual(spec, want.spec), nil
		})
	}

	// Status goes up.
	b, err := localObj("legacy", "b")
	framework.Must(t, err, "get b")
	b.Object["status"] = map[string]any{"phase": "Running"}
	framework.Must(t, svc.Status().Update(ctx, b), "set status of b")
	framework.WaitFor(t, syncTimeout, "the status of b in kcp", func(ctx context.Context) (bool, error) {
		obj := newObject(kcpThing, "default", "b-renamed", nil)
		if err := ws[0].Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "b-renamed"}, obj); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		return phase == "Running", nil
	})

	// Deleting the kcp object deletes its copy, the imported object.
	framework.Must(t, ws[0].Client.Delete(ctx, newObject(kcpThing, "legacy", "a", nil)), "delete a in kcp")
	framework.WaitFor(t, syncTimeout, "the copy a to go with its kcp object", func(ctx context.Context) (bool, error) {
		_, err := localObj("legacy", "a")
		return ctrlruntimeclient.IgnoreNotFound(err) == nil && err != nil, nil
	})
	if msgs := eventMessages(ctx, svc, "legacy", "b", "ObjectImported"); len(msgs) == 0 {
		t.Error("no ObjectImported Event on the imported service object b")
	}
}

// eventMessages returns the messages of the Events with reason about the
// object namespace/name in the cluster or workspace c reads.
func eventMessages(ctx context.Context, c ctrlruntimeclient.Client, namespace, name, reason string) []string {
	var events corev1.EventList
	if err := c.List(ctx, &events, ctrlruntimeclient.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
