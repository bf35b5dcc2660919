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

package sdk_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/sdk/clientset/versioned/fake"
	"github.com/kcp-syncagent/api-syncagent/sdk/informers/externalversions"
)

// TestFakeClientset: the fake clientset for unit tests of tools built on
// the SDK (NewSimpleClientset: the generated NewClientset needs an OpenAPI
// schema of the types, which the SDK does not generate) creates, gets and
// lists PublishedResources, and an informer factory on it sees them.
func TestFakeClientset(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewSimpleClientset() //nolint:staticcheck // see above.
	prs := cs.SyncagentV1alpha1().PublishedResources()
	pr := &syncagentv1alpha1.PublishedResource{
		ObjectMeta: metav1.ObjectMeta{Name: "things"},
		Spec:       syncagentv1alpha1.PublishedResourceSpec{Resource: syncagentv1alpha1.SourceResourceDescriptor{APIGroup: "example.com", Kind: "Thing"}},
	}
	if _, err := prs.Create(ctx, pr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := prs.Get(ctx, "things", metav1.GetOptions{})
	if err != nil || got.Spec.Resource.Kind != "Thing" {
		t.Fatalf("get: %v, %+v", err, got)
	}

	factory := externalversions.NewSharedInformerFactory(cs, 0)
	lister := factory.Syncagent().V1alpha1().PublishedResources().Lister()
	stop := make(chan struct{})
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	list, err := lister.List(labels.Everything())
	if err != nil || len(list) != 1 || list[0].Name != "things" {
		t.Errorf("the lister has %d PublishedResources (%v), want things", len(list), err)
	}
}
