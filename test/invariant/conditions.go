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

package invariant

import (
	"context" //nolint:gosec // the contract fixes SHA-1 for the remote-object hash labels.
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// checkConditions reports PublishedResources that do not say they sync
// (Resource.Conditions).
func (c *Checker) checkConditions(ctx context.Context) ([]Violation, error) {
	var out []Violation
	for _, r := range c.Resources {
		if !r.Conditions {
			continue
		}
		pr := &unstructured.Unstructured{}
		pr.SetGroupVersionKind(schema.GroupVersionKind{Group: "syncagent.kcp.io", Version: "v1alpha1", Kind: "PublishedResource"})
		if err := c.Service.Get(ctx, ctrlruntimeclient.ObjectKey{Name: r.Name}, pr); err != nil {
			return nil, fmt.Errorf("failed to get PublishedResource %s: %w", r.Name, err)
		}
		conditions, _, _ := unstructured.NestedSlice(pr.Object, "status", "conditions")
		seen := map[string]string{}
		for _, item := range conditions {
			cond, _ := item.(map[string]any)
			t, _ := cond["type"].(string)
			status, _ := cond["status"].(string)
			reason, _ := cond["reason"].(string)
			seen[t] = status + "/" + reason
		}
		wants := [][2]string{{"Ready", "True"}, {"SyncReady", "True/Running"}}
		if len(c.Partitions) > 0 {
			wants = wants[:1]
			for _, p := range c.Partitions {
				wants = append(wants, [2]string{"SyncReady." + p, "True/Running"})
			}
			if got, found := seen["SyncReady"]; found {
				out = append(out, Violation{RuleConditions, "PublishedResource " + r.Name, "no SyncReady beside SyncReady.<partition>", "SyncReady=" + got})
			}
		}
		for _, want := range wants {
			if got := seen[want[0]]; got != want[1] && !strings.HasPrefix(got, want[1]+"/") {
				out = append(out, Violation{RuleConditions, "PublishedResource " + r.Name, want[0] + "=" + want[1], want[0] + "=" + got})
			}
		}
	}
	return out, nil
}
