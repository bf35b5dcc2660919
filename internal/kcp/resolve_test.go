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

package kcp

import (
	"testing"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPartitionValid: a slice that names a Partition kcp finds invalid is
// refused (the agent waits, not ready); one without a Partition, or whose
// Partition is valid or not judged yet, is taken.
func TestPartitionValid(t *testing.T) {
	slice := func(partition string, status corev1.ConditionStatus) *kcpapisv1alpha1.APIExportEndpointSlice {
		s := &kcpapisv1alpha1.APIExportEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "things-eu"}}
		s.Spec.Partition = partition
		if status != "" {
			s.Status.Conditions = conditionsv1alpha1.Conditions{{Type: kcpapisv1alpha1.PartitionValid, Status: status, Reason: kcpapisv1alpha1.PartitionInvalidReferenceReason}}
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		slice   *kcpapisv1alpha1.APIExportEndpointSlice
		wantErr bool
	}{
		{"no partition", slice("", corev1.ConditionFalse), false},
		{"valid", slice("eu", corev1.ConditionTrue), false},
		{"not judged yet", slice("eu", ""), false},
		{"invalid", slice("eu", corev1.ConditionFalse), true},
	} {
		if err := partitionValid(tc.slice); (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want one: %v", tc.name, err, tc.wantErr)
		}
	}
}
