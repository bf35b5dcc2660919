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
// workspace that is gone is deleted once two sweeps in a row found it
// empty (the root CA bundle Kubernetes adds does not count); one that holds
// something, one of an engaged workspace, one of another agent, one not
// created by an agent, and one the agent cannot prove empty stay.
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
	service := fake.NewClientBuilder().WithScheme(s).WithObjects(
		created("empty", "me", "gone"), created("holds", "me", "gone"), created("engaged", "me", "engaged"),
		created("theirs", "other", "gone"), created("unlabelled", "", ""), created("secret", "me", "gone"),
	).Build()

	configMap := func(ns, name string) runtime.Object {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	ms := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(ms); err != nil {
		t.Fatal(err)
	}
	var objects []runtime.Object
	for _, ns := range []string{"empty", "holds", "engaged", "theirs", "unlabelled", "secret"} {
		objects = append(objects, configMap(ns, "kube-root-ca.crt"))
	}
	metadata := metadatafake.NewSimpleMetadataClient(ms, append(objects, configMap("holds", "settings"))...)
	metadata.PrependReactor("list", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "secret" {
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

	left := func() []string {
		var list corev1.NamespaceList
		if err := service.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ns := range list.Items {
			names = append(names, ns.Name)
		}
		slices.Sort(names)
		return names
	}
	all := left()
	sw.createdNamespaces(context.Background())
	if diff := cmp.Diff(all, left()); diff != "" {
		t.Errorf("after the first sweep (-want +got):\n%s", diff)
	}
	sw.createdNamespaces(context.Background())
	if diff := cmp.Diff([]string{"engaged", "holds", "secret", "theirs", "unlabelled"}, left()); diff != "" {
		t.Errorf("after the second sweep (-want +got):\n%s", diff)
	}
}
