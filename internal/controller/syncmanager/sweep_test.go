package syncmanager

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// sweepCluster is a workspace whose cache (what the provider's
// GetAPIReader returns) is empty, as right after a reconnect, while the
// server has the object.
type sweepCluster struct {
	cluster.Cluster
	server, cache ctrlruntimeclient.Client
}

func (c sweepCluster) GetClient() ctrlruntimeclient.Client    { return c.server }
func (c sweepCluster) GetAPIReader() ctrlruntimeclient.Reader { return c.cache }
func (c sweepCluster) GetCache() cache.Cache                  { return emptyCache{} }

// emptyCache has nothing (a cache right after a reconnect).
type emptyCache struct{ cache.Cache }

func (emptyCache) Get(_ context.Context, key ctrlruntimeclient.ObjectKey, _ ctrlruntimeclient.Object, _ ...ctrlruntimeclient.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

// TestSweepReadsLive: the orphan sweep deletes a state Secret only when the
// server says the object is gone, not when an empty cache does.
func TestSweepReadsLive(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	thing := &unstructured.Unstructured{}
	thing.SetGroupVersionKind(gvk)
	thing.SetNamespace("default")
	thing.SetName("alive")
	stored, err := json.Marshal(thing.Object)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "obj-state-ws1-x", Labels: map[string]string{keys.RemoteObjectCluster: "ws1"}},
		Data:       map[string][]byte{"k": stored},
	}
	f := newFleet(logr.Discard(), nil, nil)
	cl := sweepCluster{server: fake.NewClientBuilder().WithObjects(thing.DeepCopy()).Build(), cache: fake.NewClientBuilder().Build()}
	f.clusters["ws1"] = engaged{ctx: context.Background(), ws: syncctrl.Workspace{Name: "ws1", Cluster: cl}}
	f.controllers["things"] = &running{key: controllerKey{remoteGVK: gvk}}
	s := &sweeper{fleet: f, log: logr.Discard()}
	if s.orphaned(context.Background(), secret) {
		t.Fatal("the state of an object the server has was taken for an orphan")
	}
	if err := cl.server.Delete(context.Background(), thing); err != nil {
		t.Fatal(err)
	}
	if !s.orphaned(context.Background(), secret) {
		t.Error("the state of an object the server does not have was kept")
	}
}
