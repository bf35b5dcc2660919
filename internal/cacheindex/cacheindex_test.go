package cacheindex

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

const field = "example.com/owner"

func secret(ns, name, owner string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Labels: map[string]string{"owner": owner}}}
}

func ownerOf(o ctrlruntimeclient.Object) []string {
	if v := o.GetLabels()["owner"]; v != "" {
		return []string{v}
	}
	return nil
}

// newCache returns a started controller-runtime cache whose Secret
// informer lists objs and never talks to a server.
func newCache(t *testing.T, objs ...runtime.Object) cache.Cache {
	t.Helper()
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), apimeta.RESTScopeNamespace)
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:1"}, cache.Options{
		Scheme: scheme.Scheme, Mapper: mapper,
		NewInformer: func(_ toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			lw := &toolscache.ListWatch{
				ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
					list := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
					for _, o := range objs {
						list.Items = append(list.Items, *o.(*corev1.Secret))
					}
					return list, nil
				},
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not start")
	}
	return c
}

// The index serves controller-runtime's List with MatchingFields and no
// namespace: this fails if controller-runtime changes its index names or
// key format.
func TestListFindsIndexedObjects(t *testing.T) {
	c := newCache(t, secret("a", "one", "x"), secret("b", "two", "y"), secret("b", "three", "x"), secret("a", "four", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Add(ctx, c, &corev1.Secret{}, field, ownerOf); err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string][]string{"x": {"a/one", "b/three"}, "y": {"b/two"}, "z": nil} {
		list := &corev1.SecretList{}
		if err := c.List(ctx, list, ctrlruntimeclient.MatchingFields{field: value}); err != nil {
			t.Fatalf("%s: %v", value, err)
		}
		var got []string
		for _, s := range list.Items {
			got = append(got, s.Namespace+"/"+s.Name)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("objects of %q: got %v, want %v", value, got, want)
		}
	}
	if err := Add(ctx, c, &corev1.Secret{}, field, ownerOf); err == nil || !strings.Contains(err.Error(), "indexer conflict") {
		t.Errorf("adding the index twice: got %v, want an indexer conflict", err)
	}
}

func TestOneKeyPerValue(t *testing.T) {
	keys, err := Indexers(field, ownerOf)[indexPrefix+field](secret("ns", "n", "x"))
	if err != nil || strings.Join(keys, ",") != "__all_namespaces/x" {
		t.Errorf("keys: got %v, %v; want [__all_namespaces/x]", keys, err)
	}
	if _, err := Indexers(field, ownerOf)[indexPrefix+field]("not an object"); err == nil {
		t.Error("indexing a string: got no error")
	}
}
