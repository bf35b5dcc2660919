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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	syncctrl "github.com/kcp-syncagent/api-syncagent/internal/controller/sync"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

// TestSweepKeepsStateWhileItsCopyExists (soak seed 43, sixth run): a widget
// deleted while its PublishedResource was deselected keeps its copy and
// state; once the PublishedResource syncs again, the sweep must not delete
// the state while the copy is still there (Vanished needs it to clean the
// copy up, and a later same-named object needs it as the three-way base).
func TestSweepKeepsStateWhileItsCopyExists(t *testing.T) {
	remoteGVK := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Widget"}
	localGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(remoteGVK)
	stored.SetName("obj-6")
	stored.SetLabels(map[string]string{"team": "black"})
	data, _ := json.Marshal(stored.Object)
	remote := objmeta.Remote{Cluster: "ws1", Name: "obj-6"}
	stateLabels := remote.Labels("me")
	stateLabels[keys.ObjectState] = "true"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-ns", Name: "obj-state-ws1-x", Labels: stateLabels},
		Data: map[string][]byte{"k": data}}
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(localGVK)
	cp.SetName("ws1-obj-6")
	cpLabels := remote.Labels("me")
	cpLabels["team"] = "black"
	cp.SetLabels(cpLabels)

	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	service := fake.NewClientBuilder().WithScheme(s).WithObjects(secret, cp).Build()
	f := newFleet(logr.Discard(), nil, nil, 0)
	// The kcp object is gone on the server (deleted while released).
	cl := sweepCluster{server: fake.NewClientBuilder().Build(), cache: fake.NewClientBuilder().Build()}
	f.clusters["ws1"] = engaged{ctx: context.Background(), ws: syncctrl.Workspace{Name: "ws1", Cluster: cl}}
	f.controllers["widgets"] = &running{key: controllerKey{remoteGVK: remoteGVK, localGVK: localGVK}}
	sw := &sweeper{fleet: f, client: service, reader: service, namespace: "agent-ns", agentName: "me", log: logr.Discard()}
	sw.sweep(context.Background())
	err := service.Get(context.Background(), types.NamespacedName{Namespace: "agent-ns", Name: secret.Name}, &corev1.Secret{})
	if apierrors.IsNotFound(err) {
		t.Fatal("the sweep deleted the state of a kcp object whose local copy still exists: the copy can no longer be cleaned up (Vanished needs state) and a later same-named object takes it over without a base (team=black stays)")
	}
	if err != nil {
		t.Fatal(err)
	}
}
