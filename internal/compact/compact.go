// Package compact shrinks the objects the agent's informers cache. Every
// cached object is decoded on its own, so each one carries its own copy of
// strings that thousands of others repeat: the keys of every map ("metadata",
// "labels", "syncagent.kcp.io/remote-object-cluster", …), the apiVersion,
// kind and namespace, label and annotation values, finalizers. Transform
// drops managedFields (no code reads them from a cache) and makes the
// object share one copy of each such string with the objects cached before
// it.
//
// Values that are unique to an object (its name, uid, resourceVersion and
// timestamps) are left alone, and so are long strings. The pool of shared
// strings is bounded: when it is full it is started afresh, so strings
// that are not repeated cannot make it grow; the objects keep the strings
// they share.
package compact

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// maxPooled is the number of strings the pool holds before it starts
	// afresh (at most about 1 MiB with the longest strings).
	maxPooled = 1 << 14
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
// for one object's walk, never across I/O.
type Pool struct {
	mu      sync.Mutex
	strings map[string]any
	max     int
}

// NewPool returns an empty pool of at most max strings.
func NewPool(max int) *Pool {
	return &Pool{strings: make(map[string]any), max: max}
}

// shared is the pool of the agent's caches.
var shared = NewPool(maxPooled)

// Transform is the cache transform of the agent's informers
// (toolscache.TransformFunc): managedFields dropped, repeated strings
// shared.
func Transform(obj any) (any, error) { return shared.Transform(obj), nil }

// Transform compacts obj in place and returns it. Objects other than
// unstructured ones, Secrets and typed objects with metadata are returned
// unchanged.
func (p *Pool) Transform(obj any) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		o.Object = p.root(o.Object)
	case *unstructured.UnstructuredList, *metav1.PartialObjectMetadataList:
		// Lists are not cached; informers store their items one by one.
	case *corev1.Secret:
		p.objectMeta(&o.ObjectMeta)
		o.Type = corev1.SecretType(p.string(string(o.Type)))
		if len(o.Data) > 0 {
			data := make(map[string][]byte, len(o.Data))
			for k, v := range o.Data {
				data[p.string(k)] = v
			}
			o.Data = data
		}
	case metav1.ObjectMetaAccessor:
		if m := o.GetObjectMeta(); m != nil {
			if om, ok := m.(*metav1.ObjectMeta); ok {
				p.objectMeta(om)
			}
		}
	}
	return obj
}

// root returns the object m with its keys and values pooled and its
// managedFields dropped.
func (p *Pool) root(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if md, ok := v.(map[string]any); ok && k == "metadata" {
			out[p.string(k)] = p.metadata(md)
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

// value returns v with its strings pooled.
func (p *Pool) value(v any) any {
	switch t := v.(type) {
	case string:
		return p.boxed(t, v)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[p.string(k)] = p.value(e)
		}
		return out
	case []any:
		for i := range t {
			t[i] = p.value(t[i])
		}
		return t
	}
	return v
}

func (p *Pool) objectMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	m.Namespace = p.string(m.Namespace)
	m.Labels = p.stringMap(m.Labels)
	m.Annotations = p.stringMap(m.Annotations)
	for i := range m.Finalizers {
		m.Finalizers[i] = p.string(m.Finalizers[i])
	}
	for i := range m.OwnerReferences {
		ref := &m.OwnerReferences[i]
		ref.APIVersion, ref.Kind = p.string(ref.APIVersion), p.string(ref.Kind)
	}
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

// boxed returns the pool's boxed copy of s, adding s (boxed as v, or
// anew if v is nil) if it has none. Strings too long to share, and the
// empty string, come back as v.
func (p *Pool) boxed(s string, v any) any {
	if s == "" || len(s) > maxLen {
		return v
	}
	if pooled, ok := p.strings[s]; ok {
		return pooled
	}
	if len(p.strings) >= p.max {
		p.strings = make(map[string]any, p.max)
	}
	if v == nil {
		v = s
	}
	p.strings[s] = v
	return v
}
