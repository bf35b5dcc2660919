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

// Package compact shrinks the objects the agent's informers cache. Every
// cached object is decoded on its own, so each one carries its own copy of
// strings that thousands of others repeat: the keys of every map ("metadata",
// "labels", "syncagent.kcp.io/remote-object-cluster", …), the apiVersion,
// kind and namespace, label and annotation values, finalizers. Transform
// drops managedFields (no code reads them from a cache) and makes the
// object share one copy of each such string with the objects cached before
// it.
//
// The name, uid, resourceVersion and timestamps of an object's metadata
// are never repeated and are left alone, and so are strings longer than 64
// bytes. Other strings are pooled even if they are unique (a label with a
// hash, a condition's time): the pool is bounded and starts afresh when it
// is full, so strings that are not repeated cannot make it grow; the
// objects keep the strings they share.
package compact

import (
	"strings"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// PoolSize is the number of strings the agent's pool holds before it
	// starts afresh (about 2 MiB with the longest strings, the pool's map
	// included).
	PoolSize = 1 << 14
	// maxLen is the length of the longest string that is shared: longer
	// ones (messages, serialized configurations) are rarely repeated.
	maxLen = 64
)

// uniqueMetadata are the metadata fields whose values are (nearly) never
// repeated between objects: pooling them would only churn the pool.
var uniqueMetadata = map[string]bool{
	"name": true, "generateName": true, "uid": true, "resourceVersion": true,
	"creationTimestamp": true, "deletionTimestamp": true,
}

// Pool holds one copy of each shared string, also boxed in an interface
// (an unstructured object holds its string values as interfaces, and
// boxing a string allocates). Safe for concurrent use; the lock is held
// for one map operation.
type Pool struct {
	mu      sync.Mutex
	strings map[string]any
	max     int
	// metadataKey is the "metadata" key of every object the pool built,
	// kept across the pool's fresh starts: it tells those objects apart.
	metadataKey string
}

// NewPool returns an empty pool of at most max strings.
func NewPool(max int) *Pool {
	return &Pool{strings: make(map[string]any), max: max, metadataKey: strings.Clone("metadata")}
}

// shared is the pool of the agent's caches.
var shared = NewPool(PoolSize)

// Transform is the cache transform of the agent's informers
// (toolscache.TransformFunc): managedFields dropped, repeated strings
// shared.
func Transform(obj any) (any, error) { return shared.Transform(obj), nil }

// Transform returns obj compacted. It never writes to an unstructured
// object or a Secret it is given, but returns a new one: an informer may
// hand it an object that is already in its cache and being read (kcp's
// informers transform the objects of resyncs too). An unstructured object
// it compacted before comes back as it is. Other typed objects only lose
// their managedFields (written only if there are any), as with
// controller-runtime's TransformStripManagedFields; anything else (a
// tombstone) comes back unchanged.
func (p *Pool) Transform(obj any) any {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if p.compacted(o.Object) {
			return o
		}
		return &unstructured.Unstructured{Object: p.root(o.Object)}
	case *corev1.Secret:
		c := *o
		c.ObjectMeta = p.objectMeta(o.ObjectMeta)
		c.Type = corev1.SecretType(p.string(string(o.Type)))
		if o.Data != nil {
			c.Data = make(map[string][]byte, len(o.Data))
			for k, v := range o.Data {
				c.Data[p.string(k)] = v
			}
		}
		return &c
	}
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj
}

// compacted reports whether m was built by root: its "metadata" key is the
// pool's own string (a decoded object's strings are its own). A deep copy
// of such an object keeps the key and would pass too; informers never
// transform one.
func (p *Pool) compacted(m map[string]any) bool {
	for k := range m {
		if k == "metadata" {
			return unsafe.StringData(k) == unsafe.StringData(p.metadataKey)
		}
	}
	return false
}

// root returns a copy of the object m with its keys and values pooled and
// its managedFields dropped.
func (p *Pool) root(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if md, ok := v.(map[string]any); ok && k == "metadata" {
			out[p.metadataKey] = p.metadata(md)
			continue
		}
		out[p.string(k)] = p.value(v)
	}
	return out
}

func (p *Pool) metadata(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case k == "managedFields":
		case uniqueMetadata[k]:
			out[p.string(k)] = v
		default:
			out[p.string(k)] = p.value(v)
		}
	}
	return out
}

// value returns a copy of v with its strings pooled.
func (p *Pool) value(v any) any {
	switch t := v.(type) {
	case string:
		return p.boxed(t, v)
	case map[string]any:
		if t == nil {
			return t
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[p.string(k)] = p.value(e)
		}
		return out
	case []any:
		if t == nil {
			return t
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = p.value(e)
		}
		return out
	}
	return v
}

// objectMeta returns a copy of m without managedFields, with its repeated
// strings pooled.
func (p *Pool) objectMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ManagedFields = nil
	m.Namespace = p.string(m.Namespace)
	m.Labels = p.stringMap(m.Labels)
	m.Annotations = p.stringMap(m.Annotations)
	if m.Finalizers != nil {
		finalizers := make([]string, len(m.Finalizers))
		for i, f := range m.Finalizers {
			finalizers[i] = p.string(f)
		}
		m.Finalizers = finalizers
	}
	if m.OwnerReferences != nil {
		refs := make([]metav1.OwnerReference, len(m.OwnerReferences))
		for i, ref := range m.OwnerReferences {
			ref.APIVersion, ref.Kind = p.string(ref.APIVersion), p.string(ref.Kind)
			refs[i] = ref
		}
		m.OwnerReferences = refs
	}
	return m
}

func (p *Pool) stringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[p.string(k)] = p.string(v)
	}
	return out
}

// string returns the pool's copy of s.
func (p *Pool) string(s string) string {
	if v := p.boxed(s, nil); v != nil {
		return v.(string)
	}
	return s
}

// boxed returns the pool's boxed copy of s, adding s if it has none (a
// decoded string is an allocation of its own, never part of a larger one
// the pool would keep alive). Strings too long to share, and the empty
// string, come back as v.
func (p *Pool) boxed(s string, v any) any {
	if s == "" || len(s) > maxLen {
		return v
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pooled, ok := p.strings[s]; ok {
		return pooled
	}
	if len(p.strings) >= p.max {
		p.strings = make(map[string]any, p.max)
	}
	var pooled any = s
	p.strings[s] = pooled
	return pooled
}
