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

package emptyns

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
)

type discoveryFunc func() ([]*metav1.APIResourceList, error)

func (f discoveryFunc) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return f()
}

func TestCheck(t *testing.T) {
	types := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list", "get"}},
			{Name: "serviceaccounts", Namespaced: true, Kind: "ServiceAccount", Verbs: []string{"list"}},
			{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"list"}},
			{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
			{Name: "secrets", Namespaced: true, Kind: "Secret", Verbs: []string{"list"}},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "things", Namespaced: true, Kind: "Thing", Verbs: []string{"list"}},
		}},
	}
	object := func(gv, kind, ns, name string) runtime.Object {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gv, Kind: kind}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	// What Kubernetes puts into every namespace, here "ns".
	builtin := []runtime.Object{object("v1", "ConfigMap", "ns", "kube-root-ca.crt"), object("v1", "ServiceAccount", "ns", "default"), object("v1", "Event", "ns", "x.123")}
	errUnavailable := errors.New("service unavailable")
	testcases := []struct {
		name      string
		objects   []runtime.Object
		discovery error
		forbidden string
		want      Verdict
	}{
		{name: "only what Kubernetes adds: empty", objects: builtin, want: Verdict{Empty: true}},
		{name: "a ConfigMap next to the root CA bundle", objects: append(builtin, object("v1", "ConfigMap", "ns", "settings")),
			want: Verdict{Holder: "configmaps/settings"}},
		{name: "the CA bundles of Istio and OpenShift too: empty",
			objects: append(builtin, object("v1", "ConfigMap", "ns", "istio-ca-root-cert"), object("v1", "ConfigMap", "ns", "openshift-service-ca.crt")), want: Verdict{Empty: true}},
		{name: "a ConfigMap behind every bundle", objects: append(builtin, object("v1", "ConfigMap", "ns", "istio-ca-root-cert"),
			object("v1", "ConfigMap", "ns", "openshift-service-ca.crt"), object("v1", "ConfigMap", "ns", "zz-settings")),
			want: Verdict{Holder: "configmaps/zz-settings"}},
		{name: "a service account of someone's", objects: append(builtin, object("v1", "ServiceAccount", "ns", "builder")),
			want: Verdict{Holder: "serviceaccounts/builder"}},
		{name: "a custom resource", objects: append(builtin, object("example.com/v1", "Thing", "ns", "mine")),
			want: Verdict{Holder: "things.example.com/mine"}},
		{name: "objects in other namespaces do not count", objects: append(builtin, object("v1", "Secret", "other", "s")), want: Verdict{Empty: true}},
		{name: "a type the agent may not list: cannot tell", objects: builtin, forbidden: "secrets",
			want: Verdict{Unknown: "the agent may not list secrets"}},
		{name: "a group whose discovery failed: cannot tell", objects: builtin,
			discovery: &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errUnavailable}},
			want:      Verdict{Unknown: "the discovery of metrics.k8s.io/v1beta1 failed"}},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := metav1.AddMetaToScheme(s); err != nil {
				t.Fatal(err)
			}
			client := metadatafake.NewSimpleMetadataClient(s, tc.objects...)
			if tc.forbidden != "" {
				client.PrependReactor("list", tc.forbidden, func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: tc.forbidden}, "", errors.New("no"))
				})
			}
			c := &Checker{Discovery: discoveryFunc(func() ([]*metav1.APIResourceList, error) { return types, tc.discovery }), Metadata: client}
			got, err := c.Check(context.Background(), "ns")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Check = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("discovery fails altogether: an error", func(t *testing.T) {
		c := &Checker{Discovery: discoveryFunc(func() ([]*metav1.APIResourceList, error) { return nil, errUnavailable })}
		if _, err := c.Check(context.Background(), "ns"); !errors.Is(err, errUnavailable) {
			t.Errorf("err = %v, want the discovery's", err)
		}
	})
}
