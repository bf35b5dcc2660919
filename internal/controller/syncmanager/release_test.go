package syncmanager

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
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

	testcases := []struct {
		name         string
		endpoints    map[string]*fakedynamic.FakeDynamicClient
		unreachable  string
		wantReleased int
		wantErr      bool
	}{
		{
			name: "objects of workspaces on every endpoint lose our finalizer only",
			endpoints: map[string]*fakedynamic.FakeDynamicClient{
				"https://shard-1": newEndpoint(thing("ws1", "a", keys.CleanupFinalizer), thing("ws1", "b", "other.io/keep", keys.CleanupFinalizer), thing("ws2", "c")),
				"https://shard-2": newEndpoint(thing("ws3", "d", keys.CleanupFinalizer)),
			},
			wantReleased: 3,
		},
		{
			name: "an unreachable endpoint is an error, the others are released",
			endpoints: map[string]*fakedynamic.FakeDynamicClient{
				"https://shard-1": newEndpoint(thing("ws1", "a", keys.CleanupFinalizer)),
				"https://shard-2": newEndpoint(thing("ws3", "d", keys.CleanupFinalizer)),
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
				state: &state.Store{Client: fake.NewClientBuilder().Build(), Namespace: "kcp-system", AgentName: "agent"},
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
					if slices.Contains(o.GetFinalizers(), keys.CleanupFinalizer) {
						t.Errorf("%s %s still has our finalizer", url, o.GetName())
					}
					if o.GetName() == "b" && !slices.Equal(o.GetFinalizers(), []string{"other.io/keep"}) {
						t.Errorf("b's other finalizers: %v", o.GetFinalizers())
					}
				}
			}
		})
	}
}
