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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// checkState reports state Secrets of this agent whose primary is not a
// live kcp object of any checked resource.
func (c *Checker) checkState(ctx context.Context, live map[string]bool) ([]Violation, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "SecretList"})
	if err := c.Service.List(ctx, list, ctrlruntimeclient.InNamespace(c.AgentNamespace), ctrlruntimeclient.MatchingLabels{labelState: "true"}); err != nil {
		return nil, fmt.Errorf("failed to list the state Secrets: %w", err)
	}
	var out []Violation
	for i := range list.Items {
		s := &list.Items[i]
		l := s.GetLabels()
		if owner := l[labelAgent]; owner != "" && owner != c.AgentName {
			continue
		}
		key := l[labelCluster] + "|" + l[labelNameHash] + "|" + l[labelNamespaceHash]
		if _, related := l[labelRelated]; !related {
			key = s.GetName() // a primary's own state: its name says which kind
		}
		if !live[key] {
			out = append(out, Violation{RuleOrphanState, objectName(s), "no state without a live kcp object", "a state Secret of cluster " + l[labelCluster]})
		}
	}
	return out, nil
}

func stateKey(k Key) string {
	ns := ""
	if k.Namespace != "" {
		ns = hash(k.Namespace)
	}
	return k.Cluster + "|" + hash(k.Name) + "|" + ns
}
