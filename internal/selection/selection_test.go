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

package selection

import (
	"context"
	"slices"
	"testing"

	"github.com/go-logr/logr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestCRDEventHandler(t *testing.T) {
	crd := func(group, kind string, generation int64, established apiextensionsv1.ConditionStatus) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "x." + group, Generation: generation},
			Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind}},
		}
		c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: established}}
		return c
	}
	things := crd("example.com", "Thing", 1, apiextensionsv1.ConditionTrue)
	s := runtime.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	prs := []runtime.Object{
		&syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things"},
			Spec: syncagentv1alpha1.PublishedResourceSpec{Resource: syncagentv1alpha1.SourceResourceDescriptor{APIGroup: "example.com", Kind: "Thing"}}},
		&syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "with-related"},
			Spec: syncagentv1alpha1.PublishedResourceSpec{Resource: syncagentv1alpha1.SourceResourceDescriptor{APIGroup: "apps", Kind: "Deployment"},
				Related: []syncagentv1alpha1.RelatedResourceSpec{{Identifier: "certs", Group: "certs.example.org", Version: "v1", Resource: "certificates"}}}},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRuntimeObjects(prs...).Build()

	testcases := []struct {
		name           string
		fire           func(h func(event.UpdateEvent), create func(event.CreateEvent))
		wantInvalidate bool
		wantQueued     []string
	}{
		{
			name: "a created CRD of a published group",
			fire: func(_ func(event.UpdateEvent), create func(event.CreateEvent)) {
				create(event.CreateEvent{Object: things})
			},
			wantInvalidate: true, wantQueued: []string{"things"},
		},
		{
			name: "a status update that changes nothing served keeps the cache",
			fire: func(update func(event.UpdateEvent), _ func(event.CreateEvent)) {
				newer := things.DeepCopy()
				newer.Status.StoredVersions = []string{"v1"}
				update(event.UpdateEvent{ObjectOld: things, ObjectNew: newer})
			},
			wantQueued: []string{"things"},
		},
		{
			name: "becoming established changes discovery",
			fire: func(update func(event.UpdateEvent), _ func(event.CreateEvent)) {
				update(event.UpdateEvent{ObjectOld: crd("example.com", "Thing", 1, apiextensionsv1.ConditionFalse), ObjectNew: things})
			},
			wantInvalidate: true, wantQueued: []string{"things"},
		},
		{
			name: "a spec change changes discovery",
			fire: func(update func(event.UpdateEvent), _ func(event.CreateEvent)) {
				update(event.UpdateEvent{ObjectOld: things, ObjectNew: crd("example.com", "Thing", 2, apiextensionsv1.ConditionTrue)})
			},
			wantInvalidate: true, wantQueued: []string{"things"},
		},
		{
			name: "a CRD of a related type's group",
			fire: func(_ func(event.UpdateEvent), create func(event.CreateEvent)) {
				create(event.CreateEvent{Object: crd("certs.example.org", "Certificate", 1, apiextensionsv1.ConditionTrue)})
			},
			wantInvalidate: true,
		},
		{
			name: "a CRD nothing uses",
			fire: func(_ func(event.UpdateEvent), create func(event.CreateEvent)) {
				create(event.CreateEvent{Object: crd("unrelated.io", "Widget", 1, apiextensionsv1.ConditionTrue)})
			},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			invalidated := false
			h := CRDEventHandler(c, labels.Everything(), func() { invalidated = true }, logr.Discard())
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			ctx := context.Background()
			tc.fire(func(e event.UpdateEvent) { h.Update(ctx, e, q) }, func(e event.CreateEvent) { h.Create(ctx, e, q) })
			if invalidated != tc.wantInvalidate {
				t.Errorf("invalidated = %v, want %v", invalidated, tc.wantInvalidate)
			}
			var got []string
			for q.Len() > 0 {
				req, _ := q.Get()
				got = append(got, req.Name)
				q.Done(req)
			}
			if !slices.Equal(got, tc.wantQueued) {
				t.Errorf("queued %v, want %v", got, tc.wantQueued)
			}
		})
	}
}
