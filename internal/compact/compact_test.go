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

package compact

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kcpObject returns a decoded object as a kcp virtual workspace serves it.
func kcpObject(t testing.TB, i int) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data := fmt.Sprintf(`{"apiVersion":"bench.example.com/v1","kind":"Thing","metadata":{
		"annotations":{"kcp.io/cluster":"2x9q6ylfnq8dbw1k"},
		"creationTimestamp":"2026-11-26T10:00:00Z","finalizers":["syncagent.kcp.io/cleanup"],"generation":1,
		"managedFields":[{"apiVersion":"bench.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:color":{}}},"manager":"bench","operation":"Update"}],
		"name":"thing-%05d","namespace":"default","resourceVersion":"%d","uid":"0b6f3c2e-7a1d-4c3e-9f5a-%012d"},
		"spec":{"color":"blue","sizes":["s","m"]},"status":{"phase":"Ready","conditions":[{"type":"Ready","status":"True"}]}}`, i, 1000+i, i)
	if err := u.UnmarshalJSON([]byte(data)); err != nil {
		t.Fatal(err)
	}
	return u
}

// same reports whether a and b share their bytes.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestTransformSharesRepeatedStrings(t *testing.T) {
	p := NewPool(100)
	a, b := kcpObject(t, 1), kcpObject(t, 2)
	want := a.DeepCopy()
	unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")

	a, b = p.Transform(a).(*unstructured.Unstructured), p.Transform(b).(*unstructured.Unstructured)
	if diff := cmp.Diff(want.Object, a.Object); diff != "" {
		t.Errorf("content changed (-want +got):\n%s", diff)
	}
	for _, path := range [][]string{{"apiVersion"}, {"kind"}, {"metadata", "namespace"}, {"spec", "color"}, {"status", "phase"}} {
		va, _, _ := unstructured.NestedString(a.Object, path...)
		vb, _, _ := unstructured.NestedString(b.Object, path...)
		if !same(va, vb) {
			t.Errorf("%v: not shared", path)
		}
	}
	if !same(a.GetAnnotations()["kcp.io/cluster"], b.GetAnnotations()["kcp.io/cluster"]) || !same(a.GetFinalizers()[0], b.GetFinalizers()[0]) {
		t.Error("annotation values or finalizers are not shared")
	}
	keyOf := func(m map[string]any, want string) string {
		for k := range m {
			if k == want {
				return k
			}
		}
		return ""
	}
	if !same(keyOf(a.Object, "metadata"), keyOf(b.Object, "metadata")) {
		t.Error("map keys are not shared")
	}
	for _, s := range []string{"spec", "Ready", "2x9q6ylfnq8dbw1k"} {
		if _, ok := p.strings[s]; !ok {
			t.Errorf("%q is not pooled", s)
		}
	}
	// Values unique to an object are not pooled.
	for _, s := range []string{a.GetName(), string(a.GetUID()), a.GetResourceVersion(), "2026-11-26T10:00:00Z"} {
		if _, ok := p.strings[s]; ok {
			t.Errorf("%q is pooled", s)
		}
	}
	// A compacted object comes back as it is, also after the pool started
	// afresh; one of another pool is compacted again, to the same content.
	if again := p.Transform(a); again != a {
		t.Error("a compacted object was compacted again")
	}
	p.strings = map[string]any{}
	if again := p.Transform(a); again != a {
		t.Error("after the pool started afresh, a compacted object was compacted again")
	}
	if other := NewPool(100).Transform(a).(*unstructured.Unstructured); other == a || !cmp.Equal(want.Object, other.Object) {
		t.Errorf("another pool: a new object %t, content %v", other != a, other.Object)
	}
}

// The input is never written to: an informer may pass an object that is
// in its cache and being read.
func TestTransformLeavesItsInputAlone(t *testing.T) {
	p := NewPool(100)
	u := kcpObject(t, 1)
	want := u.DeepCopy()
	for range 2 { // the second time, the strings are the pool's
		out := p.Transform(u).(*unstructured.Unstructured)
		if diff := cmp.Diff(want.Object, u.Object); diff != "" {
			t.Errorf("unstructured input changed (-want +got):\n%s", diff)
		}
		if out == u {
			t.Fatal("the input came back")
		}
		// Equal values written in place would not show in the content:
		// no map or slice of the output is the input's.
		for _, path := range [][]string{{}, {"metadata"}, {"metadata", "annotations"}, {"metadata", "finalizers"}, {"spec"}, {"spec", "sizes"}, {"status", "conditions"}} {
			in, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
			got, _, _ := unstructured.NestedFieldNoCopy(out.Object, path...)
			if len(path) == 0 {
				in, got = u.Object, out.Object
			}
			if reflect.ValueOf(in).Pointer() == reflect.ValueOf(got).Pointer() {
				t.Errorf("%v is the input's", path)
			}
		}
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}, Data: map[string][]byte{"k": []byte("v")}}
	wantSec := sec.DeepCopy()
	p.Transform(sec)
	if diff := cmp.Diff(wantSec, sec); diff != "" {
		t.Errorf("Secret input changed (-want +got):\n%s", diff)
	}
}

func TestPoolIsBounded(t *testing.T) {
	p := NewPool(8)
	for i := range 100 {
		p.Transform(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"id": fmt.Sprint(i)}}})
		if len(p.strings) > 8 {
			t.Fatalf("after %d objects the pool holds %d strings, more than 8", i+1, len(p.strings))
		}
	}
	long := string(make([]byte, maxLen+1))
	p.Transform(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"long": long}}})
	if _, ok := p.strings[long]; ok {
		t.Error("a string longer than maxLen is pooled")
	}
}

func TestTransformTypedObjects(t *testing.T) {
	p := NewPool(100)
	mk := func() *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Name: "state-1", Labels: map[string]string{"syncagent.kcp.io/object-state": "true"},
				Finalizers:      []string{"f"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o"}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m"}}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"state": []byte("{}")},
		}
	}
	a, b := p.Transform(mk()).(*corev1.Secret), p.Transform(mk()).(*corev1.Secret)
	want := mk()
	want.ManagedFields = nil
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("content changed (-want +got):\n%s", diff)
	}
	if !same(a.Namespace, b.Namespace) || !same(a.Labels["syncagent.kcp.io/object-state"], b.Labels["syncagent.kcp.io/object-state"]) ||
		!same(string(a.Type), string(b.Type)) || !same(a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind) {
		t.Error("repeated strings are not shared")
	}
	// Other typed objects lose their managedFields only.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "agent", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	if got := p.Transform(cm); got != cm || cm.ManagedFields != nil {
		t.Error("a ConfigMap's managedFields are kept")
	}
	// Anything else passes through.
	if got := p.Transform("tombstone"); got != "tombstone" {
		t.Errorf("a string came back as %v", got)
	}
}

// Informers of different types transform at the same time, and one
// transforms objects of its cache again (a resync) while readers copy them
// (run with -race).
func TestTransformConcurrently(t *testing.T) {
	p := NewPool(16)
	objs := make([]*unstructured.Unstructured, 50)
	secrets := make([]*corev1.Secret, 50)
	for i := range objs {
		objs[i] = p.Transform(kcpObject(t, i)).(*unstructured.Unstructured)
		secrets[i] = p.Transform(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Labels: map[string]string{"i": fmt.Sprint(i)}}}).(*corev1.Secret)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				for i := range objs {
					if w%2 == 0 {
						p.Transform(objs[i])
						p.Transform(secrets[i])
						p.Transform(kcpObject(t, 1000*w+i))
					} else {
						_ = objs[i].DeepCopy()
						_ = secrets[i].DeepCopy()
					}
				}
			}
		}()
	}
	wg.Wait()
}
