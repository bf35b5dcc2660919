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

package compact_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/cacheindex"
	"github.com/kcp-syncagent/api-syncagent/internal/compact"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

// The three objects the agent caches for one synced namespaced object
// (the kcp object, its local copy, its state Secret), as the API servers
// send them, in the shape of the bench's objects.
func syncedObject(i int) (kcpObj, local []byte, state *corev1.Secret) {
	cluster := fmt.Sprintf("2x9q6ylfnq8dbw%02d", i%10)
	r := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: fmt.Sprintf("thing-%05d", i), Path: fmt.Sprintf("root:bench:ws-%d", i%10)}
	mf := `"managedFields":[{"apiVersion":"bench.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:finalizers":{".":{},"v:\"syncagent.kcp.io/cleanup\"":{}}}},"manager":"api-syncagent","operation":"Update","time":"2026-11-26T10:00:00Z"},{"apiVersion":"bench.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:color":{}}},"manager":"bench","operation":"Update","time":"2026-11-26T10:00:00Z"}]`
	kcpObj = fmt.Appendf(nil, `{"apiVersion":"bench.example.com/v1","kind":"Thing","metadata":{"annotations":{"kcp.io/cluster":%q},
		"creationTimestamp":"2026-11-26T10:00:00Z","finalizers":["syncagent.kcp.io/cleanup"],"generation":1,%s,
		"name":%q,"namespace":"default","resourceVersion":"%d","uid":"0b6f3c2e-7a1d-4c3e-9f5a-%012d"},"spec":{"color":"blue"}}`,
		cluster, mf, r.Name, 100000+i, i)
	labels, _ := json.Marshal(r.Labels("bench"))
	annotations, _ := json.Marshal(r.Annotations())
	local = fmt.Appendf(nil, `{"apiVersion":"bench.example.com/v1","kind":"Thing","metadata":{"annotations":%s,"labels":%s,
		"creationTimestamp":"2026-11-26T10:00:01Z","generation":1,%s,
		"name":"%s","namespace":"%s","resourceVersion":"%d","uid":"1c7f3c2e-7a1d-4c3e-9f5a-%012d"},"spec":{"color":"blue"}}`,
		annotations, labels, mf, objmeta.Hash(r.Name), objmeta.Hash(cluster), 200000+i, i)
	stateLabels := r.Labels("bench")
	stateLabels[keys.ObjectState] = "true"
	state = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agent", Name: "obj-state-" + objmeta.Hash(r.Name), Labels: stateLabels,
			ResourceVersion: fmt.Sprint(300000 + i), UID: "2d7f3c2e-7a1d-4c3e-9f5a-000000000000",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "api-syncagent", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"state": fmt.Appendf(nil, `{"apiVersion":"bench.example.com/v1","kind":"Thing","metadata":{"name":%q,"namespace":"default"},"spec":{"color":"blue"}}`, r.Name)},
	}
	return kcpObj, local, state
}

// controllerRuntimeIndex is the index controller-runtime's IndexField adds:
// two keys per value of a namespaced object.
func controllerRuntimeIndex(field string, extract ctrlruntimeclient.IndexerFunc) toolscache.Indexers {
	return toolscache.Indexers{"field:" + field: func(o any) ([]string, error) {
		obj := o.(ctrlruntimeclient.Object)
		var out []string
		for _, v := range extract(obj) {
			out = append(out, obj.GetNamespace()+"/"+v, "__all_namespaces/"+v)
		}
		return out, nil
	}}
}

// twoValues is the remote index before it had one value per object.
func twoValues(obj ctrlruntimeclient.Object) []string {
	l := obj.GetLabels()
	v := l[keys.RemoteObjectCluster] + "/" + l[keys.RemoteObjectNameHash]
	return []string{v, v + "/" + l[keys.RemoteObjectNamespaceHash]}
}

func strip() toolscache.TransformFunc { return stripManagedFields }

func pooled() toolscache.TransformFunc {
	p := compact.NewPool(compact.PoolSize)
	return func(obj any) (any, error) { return p.Transform(obj), nil }
}

func stripManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	}
	if s, ok := obj.(*corev1.Secret); ok {
		s.ManagedFields = nil
	}
	return obj, nil
}

// BenchmarkCacheMemory reports the live heap per synced object of the
// agent's caches (B/object), before (managedFields dropped, controller-
// runtime's index) and after this package and internal/cacheindex.
func BenchmarkCacheMemory(b *testing.B) {
	const n = 5000
	remoteIndex := func(extract ctrlruntimeclient.IndexerFunc, ours bool) toolscache.Indexers {
		if ours {
			return cacheindex.Indexers(objmeta.RemoteIndex, extract)
		}
		return controllerRuntimeIndex(objmeta.RemoteIndex, extract)
	}
	for _, tc := range []struct {
		name      string
		transform func() toolscache.TransformFunc // a new pool per pass
		ours      bool
		extract   ctrlruntimeclient.IndexerFunc
	}{
		{"before", strip, false, twoValues},
		{"one index value", strip, false, objmeta.RemoteIndexValues},
		{"one index key", strip, true, objmeta.RemoteIndexValues},
		{"compact", pooled, true, objmeta.RemoteIndexValues},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perObject float64
			for b.Loop() {
				kcpStore := toolscache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, toolscache.Indexers{
					kcpcache.ClusterIndexName:             kcpcache.ClusterIndexFunc,
					kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc,
				})
				copies := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, remoteIndex(tc.extract, tc.ours))
				states := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, remoteIndex(tc.extract, tc.ours))
				transform := tc.transform()
				before := liveHeap()
				for i := range n {
					kcpJSON, localJSON, state := syncedObject(i)
					for _, s := range []struct {
						store toolscache.Indexer
						obj   any
					}{{kcpStore, decode(b, kcpJSON)}, {copies, decode(b, localJSON)}, {states, state}} {
						obj, _ := transform(s.obj)
						if err := s.store.Add(obj); err != nil {
							b.Fatal(err)
						}
					}
				}
				perObject = float64(liveHeap()-before) / n
				runtime.KeepAlive(transform) // the pool counts
				runtime.KeepAlive(kcpStore)
				runtime.KeepAlive(copies)
				runtime.KeepAlive(states)
			}
			b.ReportMetric(perObject, "B/object")
		})
	}
}

func decode(b *testing.B, data []byte) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		b.Fatal(err)
	}
	return u
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
