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

package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestPublishedResourcesReady(t *testing.T) {
	pr := func(name string, selected bool, ready metav1.ConditionStatus) *syncagentv1alpha1.PublishedResource {
		p := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if selected {
			p.Labels = map[string]string{"team": "a"}
		}
		if ready != "" {
			reason := syncagentv1alpha1.ReasonReady
			if ready != metav1.ConditionTrue {
				reason = syncagentv1alpha1.ReasonNoEndpoints
			}
			p.Status.Conditions = []metav1.Condition{{Type: syncagentv1alpha1.ConditionReady, Status: ready, Reason: reason, LastTransitionTime: metav1.Now()}}
		}
		return p
	}
	c := fake.NewClientBuilder().WithScheme(NewServiceScheme()).WithObjects(
		pr("ready", true, metav1.ConditionTrue),
		pr("failing", true, metav1.ConditionFalse),
		pr("new", true, ""),
		pr("other-agent", false, metav1.ConditionTrue),
	).Build()
	got := publishedResourcesReady(c, labels.SelectorFromSet(labels.Set{"team": "a"}))()
	want := map[string]metrics.Readiness{
		"ready":   {Ready: true, Reason: "Ready"},
		"failing": {Reason: "NoEndpoints"},
		"new":     {Reason: "Unknown"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
}
