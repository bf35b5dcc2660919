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

package syncer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kcp-syncagent/api-syncagent/internal/mutation"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/references"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Rules are a PublishedResource's compiled rules: naming, mutations,
// related entries, references and filters. The sync controller and the preview
// (api-syncagent preview) compile them the same way.
type Rules struct {
	Namer                      *naming.Namer
	SpecMutator, StatusMutator *mutation.Mutator
	Related                    []*related.Entry
	References                 []references.Reference
	// ResourceFilter and NamespaceFilter are spec.filter's selectors (nil:
	// none).
	ResourceFilter, NamespaceFilter labels.Selector
}

// Compile compiles pr's rules; types are the types of spec.related on both
// sides, index by index. Its errors name the field.
func Compile(pr *syncagentv1alpha1.PublishedResource, types []related.Types) (Rules, error) {
	var r Rules
	var err error
	if r.Namer, err = naming.NewNamer(pr.Spec.Naming); err != nil {
		return r, err
	}
	var specRules, statusRules []syncagentv1alpha1.ResourceMutation
	if m := pr.Spec.Mutation; m != nil {
		specRules, statusRules = m.Spec, m.Status
	}
	if r.SpecMutator, err = mutation.Compile(specRules); err != nil {
		return r, fmt.Errorf("spec.mutation.spec: %w", err)
	}
	if r.StatusMutator, err = mutation.Compile(statusRules); err != nil {
		return r, fmt.Errorf("spec.mutation.status: %w", err)
	}
	if r.References, err = references.Compile(pr.Spec.References); err != nil {
		return r, err
	}
	if len(types) != len(pr.Spec.Related) {
		return r, fmt.Errorf("the types of %d related entries are needed, got %d", len(pr.Spec.Related), len(types))
	}
	for i := range pr.Spec.Related {
		e, err := related.Compile(&pr.Spec.Related[i], types[i].Kcp, types[i].Service)
		if err != nil {
			return r, fmt.Errorf("spec.related[%d]: %w", i, err)
		}
		r.Related = append(r.Related, e)
	}
	if f := pr.Spec.Filter; f != nil {
		if f.Resource != nil {
			if r.ResourceFilter, err = metav1.LabelSelectorAsSelector(f.Resource); err != nil {
				return r, fmt.Errorf("spec.filter.resource: %w", err)
			}
		}
		if f.Namespace != nil {
			if r.NamespaceFilter, err = metav1.LabelSelectorAsSelector(f.Namespace); err != nil {
				return r, fmt.Errorf("spec.filter.namespace: %w", err)
			}
		}
	}
	return r, nil
}
