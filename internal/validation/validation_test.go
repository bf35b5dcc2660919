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

package validation

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func TestCheck(t *testing.T) {
	ref := syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
		Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.secret"},
	}}
	testcases := []struct {
		name       string
		spec       syncagentv1alpha1.PublishedResourceSpec
		in         Input
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    []string
	}{
		{
			name:       "valid",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Naming: &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name | sha3short 8 }}", Namespace: "$remoteClusterName"}},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name: "deprecated inputs work and are named",
			spec: syncagentv1alpha1.PublishedResourceSpec{
				Resource:   syncagentv1alpha1.SourceResourceDescriptor{APIGroup: "example.com", Kind: "Thing", Version: "v1"},
				Projection: &syncagentv1alpha1.ResourceProjection{Version: "v2"},
				Naming:     &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name | shortHash }}", Namespace: "$remoteClusterName"},
				Related: []syncagentv1alpha1.RelatedResourceSpec{{
					Identifier: "creds", Origin: "kcp", Kind: "Secret", Object: ref,
				}},
			},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
			wantMsg: []string{"The configuration is valid", "spec.resource.version is deprecated", "spec.projection.version is deprecated",
				"spec.naming.name uses the function shortHash", "spec.naming.namespace uses the legacy $remote", "spec.related[0].kind is deprecated"},
		},
		{
			name: "references: a path outside spec and status, a list element",
			spec: syncagentv1alpha1.PublishedResourceSpec{References: []syncagentv1alpha1.ResourceReference{
				{Path: "spec.configRef.name", Kind: "Widget", Group: "example.com"},
				{Path: "metadata.name", Kind: "Widget"},
				{Path: "spec.refs.#.name", Kind: "Widget"},
			}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{`spec.references[1]: path "metadata.name" must begin with "spec." or "status."`, "spec.references[2]: path"},
		},
		{
			name: "allowedNamespaces see only the workspace",
			spec: syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{{
				Identifier: "creds", Origin: "service", Version: "v1", Resource: "secrets", Object: ref,
				AllowedNamespaces: []string{"shared", "{{ .ClusterName }}-creds", "{{ .Object.spec.ns }}", "{{ $x := . }}{{ $x }}", "{{ if"},
			}}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{"spec.related[0].allowedNamespaces[2]: may use only .ClusterName and .ClusterPath", "spec.related[0].allowedNamespaces[3]: may use only",
				"spec.related[0].allowedNamespaces[4]: invalid template"},
		},
		{
			name: "bad selectors: filters, related watch and related object selector",
			spec: syncagentv1alpha1.PublishedResourceSpec{
				Filter: &syncagentv1alpha1.ResourceFilter{
					Resource:  &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Equals", Values: []string{"x"}}}},
					Namespace: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}},
				},
				Related: []syncagentv1alpha1.RelatedResourceSpec{{
					Identifier: "creds", Origin: "kcp", Kind: "Secret",
					Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
						Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{LabelSelector: metav1.LabelSelector{
							MatchLabels:      map[string]string{"app": "{{ .Object.metadata.name }}"},
							MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}},
						}},
					}},
					Watch: &syncagentv1alpha1.RelatedResourceWatch{BySelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: metav1.LabelSelectorOpExists, Values: []string{"y"}}}}},
				}},
			},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{"spec.filter.resource: invalid label selector", "spec.filter.namespace: invalid label selector",
				"spec.related[0].object.selector.matchExpressions: invalid label selector", "spec.related[0].watch.bySelector: invalid label selector"},
		},
		{
			name:       "broken naming template",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Naming: &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name | nosuchfunc }}"}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{"spec.naming.name: invalid template", "nosuchfunc"},
		},
		{
			name: "templates whose output changes on every call",
			spec: syncagentv1alpha1.PublishedResourceSpec{
				Naming: &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name }}-{{ randAlphaNum 4 }}"},
				Mutation: &syncagentv1alpha1.ResourceMutationSpec{
					Spec: []syncagentv1alpha1.ResourceMutation{{Template: &syncagentv1alpha1.ResourceTemplateMutation{Path: "a", Template: "{{ now }}"}}},
				}},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"spec.naming.name calls randAlphaNum", "spec.mutation.spec[0].template.template calls now", "rewritten on every pass"},
		},
		{
			name: "broken regex and template mutation",
			spec: syncagentv1alpha1.PublishedResourceSpec{Mutation: &syncagentv1alpha1.ResourceMutationSpec{
				Spec:   []syncagentv1alpha1.ResourceMutation{{Regex: &syncagentv1alpha1.ResourceRegexMutation{Path: "a", Pattern: "(unclosed"}}},
				Status: []syncagentv1alpha1.ResourceMutation{{Template: &syncagentv1alpha1.ResourceTemplateMutation{Path: "a", Template: "{{ .Value"}}},
			}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{"spec.mutation.spec[0].regex.pattern: invalid regular expression", "spec.mutation.status[0].template.template: invalid template"},
		},
		{
			name: "valid CEL mutations",
			spec: syncagentv1alpha1.PublishedResourceSpec{Mutation: &syncagentv1alpha1.ResourceMutationSpec{
				Spec:   []syncagentv1alpha1.ResourceMutation{{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "spec.x", Expression: `other == null ? value : self.metadata.name`}}},
				Status: []syncagentv1alpha1.ResourceMutation{{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "status.n", Expression: "size(self.status.items)"}}},
			}},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name: "broken CEL mutations",
			spec: syncagentv1alpha1.PublishedResourceSpec{
				Mutation: &syncagentv1alpha1.ResourceMutationSpec{
					Status: []syncagentv1alpha1.ResourceMutation{
						{Delete: &syncagentv1alpha1.ResourceDeleteMutation{Path: "status.x"}},
						{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "status.x", Expression: "1 +"}},
					},
				},
				Related: []syncagentv1alpha1.RelatedResourceSpec{{
					Identifier: "creds", Origin: "kcp", Kind: "Secret", Object: ref,
					Mutation: &syncagentv1alpha1.ResourceMutationSpec{
						Spec: []syncagentv1alpha1.ResourceMutation{{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "data.x", Expression: "object.data"}}},
					},
				}},
			},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{
				"spec.mutation.status[1].cel.expression: invalid CEL expression", "Syntax error",
				"spec.related[0].mutation.spec[0].cel.expression: invalid CEL expression", "undeclared reference to 'object'",
			},
		},
		{
			name: "empty mutation paths",
			spec: syncagentv1alpha1.PublishedResourceSpec{Mutation: &syncagentv1alpha1.ResourceMutationSpec{
				Spec: []syncagentv1alpha1.ResourceMutation{
					{Delete: &syncagentv1alpha1.ResourceDeleteMutation{}},
					{Regex: &syncagentv1alpha1.ResourceRegexMutation{Replacement: "x"}},
					{Template: &syncagentv1alpha1.ResourceTemplateMutation{Template: "x"}},
					{CEL: &syncagentv1alpha1.ResourceCELMutation{Expression: "1"}},
				},
			}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{
				"spec.mutation.spec[0].delete.path: must not be empty",
				"spec.mutation.spec[1].regex.path: must not be empty",
				"spec.mutation.spec[2].template.path: must not be empty",
				"spec.mutation.spec[3].cel.path: must not be empty",
			},
		},
		{
			name: "several mutation members are ambiguous",
			spec: syncagentv1alpha1.PublishedResourceSpec{Mutation: &syncagentv1alpha1.ResourceMutationSpec{
				Spec: []syncagentv1alpha1.ResourceMutation{{Delete: &syncagentv1alpha1.ResourceDeleteMutation{Path: "a"}, CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "a", Expression: "1"}}},
			}},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"spec.mutation.spec[0] sets delete, cel; only delete is used"},
		},
		{
			name:       "invalid identifier",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{{Identifier: "no/slash", Origin: "kcp", Kind: "Secret", Object: ref}}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{`spec.related[0].identifier "no/slash"`},
		},
		{
			name:       "overlong identifier",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{{Identifier: strings.Repeat("a", 61), Origin: "kcp", Kind: "Secret", Object: ref}}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
		},
		{
			name: "related locator with several mechanisms and a bad selector template",
			spec: syncagentv1alpha1.PublishedResourceSpec{Related: []syncagentv1alpha1.RelatedResourceSpec{{
				Identifier: "creds", Origin: "service", Kind: "Secret",
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Reference: ref.Reference,
					Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{
						LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "{{ .ClusterName"}},
						Rewrite:       syncagentv1alpha1.RelatedResourceSelectorRewrite{Template: &syncagentv1alpha1.TemplateExpression{Template: "x"}},
					},
				}},
			}}},
			wantStatus: metav1.ConditionFalse, wantReason: syncagentv1alpha1.ReasonInvalidConfiguration,
			wantMsg: []string{"spec.related[0].object.selector.matchLabels[app]: invalid template"},
		},
		{
			name:       "namespace filter on a cluster-scoped type",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Filter: &syncagentv1alpha1.ResourceFilter{Namespace: &metav1.LabelSelector{}}},
			in:         Input{KcpScope: apiextensionsv1.ClusterScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"spec.filter.namespace is ignored"},
		},
		{
			name:       "default naming of Services",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Resource: syncagentv1alpha1.SourceResourceDescriptor{Kind: "Service"}},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"a Service's name may not", "begins with a letter, such as svc-{{ .Object.metadata.namespace | sha3short }}-"},
		},
		{
			name:       "default naming of Services projected cluster-scoped",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Resource: syncagentv1alpha1.SourceResourceDescriptor{Kind: "Service"}},
			in:         Input{KcpScope: apiextensionsv1.ClusterScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name:       "a naming template for Services",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Resource: syncagentv1alpha1.SourceResourceDescriptor{Kind: "Service"}, Naming: &syncagentv1alpha1.ResourceNaming{Name: ServiceNaming}},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name:       "default naming of a cluster-scoped local type",
			in:         Input{LocalScope: apiextensionsv1.ClusterScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"spec.naming.name does not depend on the workspace", "only the first one syncs (ObjectConflict)"},
		},
		{
			name:       "a naming template without the workspace for a cluster-scoped local type",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Naming: &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name }}-{{ .Object.metadata.namespace }}"}},
			in:         Input{LocalScope: apiextensionsv1.ClusterScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"spec.naming.name does not depend on the workspace"},
		},
		{
			name:       "a naming template with the workspace for a cluster-scoped local type",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Naming: &syncagentv1alpha1.ResourceNaming{Name: "{{ .Object.metadata.name }}-{{ .ClusterName | sha3short }}"}},
			in:         Input{LocalScope: apiextensionsv1.ClusterScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name:       "a naming template with the workspace through $ for a cluster-scoped local type",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Naming: &syncagentv1alpha1.ResourceNaming{Name: "{{ $.ClusterName }}-{{ .Object.metadata.name }}"}},
			in:         Input{LocalScope: apiextensionsv1.ClusterScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name:       "a legacy naming pattern with the workspace for a cluster-scoped local type",
			spec:       syncagentv1alpha1.PublishedResourceSpec{Naming: &syncagentv1alpha1.ResourceNaming{Name: "$remoteClusterName-$remoteName"}},
			in:         Input{LocalScope: apiextensionsv1.ClusterScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name: "service-origin related objects read in a copy namespace that workspaces can share",
			spec: syncagentv1alpha1.PublishedResourceSpec{
				Naming: &syncagentv1alpha1.ResourceNaming{Namespace: "{{ .Object.metadata.namespace }}"},
				Related: []syncagentv1alpha1.RelatedResourceSpec{
					{Identifier: "in", Origin: "kcp", Version: "v1", Resource: "secrets", Object: ref},
					{Identifier: "out", Origin: "service", Version: "v1", Resource: "secrets", Object: ref},
				},
			},
			in:         Input{LocalScope: apiextensionsv1.NamespaceScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"spec.naming.namespace does not always contain the workspace's cluster name", "spec.related[1] (origin service) is read in a local copy's namespace only where"},
		},
		{
			name: "a copy namespace of the workspace alone that does not contain its cluster name is reported too",
			spec: syncagentv1alpha1.PublishedResourceSpec{
				Naming: &syncagentv1alpha1.ResourceNaming{Namespace: `org-{{ index (splitList ":" .ClusterPath) 1 }}`},
				Related: []syncagentv1alpha1.RelatedResourceSpec{
					{Identifier: "out", Origin: "service", Version: "v1", Resource: "secrets", Object: ref},
				},
			},
			in:         Input{LocalScope: apiextensionsv1.NamespaceScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"spec.related[0] (origin service) is read in a local copy's namespace only where"},
		},
		{
			name: "service-origin related objects in copy namespaces of their workspace",
			spec: syncagentv1alpha1.PublishedResourceSpec{
				Naming: &syncagentv1alpha1.ResourceNaming{Namespace: "{{ .ClusterName }}-{{ .Object.metadata.namespace }}"},
				Related: []syncagentv1alpha1.RelatedResourceSpec{
					{Identifier: "out", Origin: "service", Version: "v1", Resource: "secrets", Object: ref},
				},
			},
			in:         Input{LocalScope: apiextensionsv1.NamespaceScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name:       "default naming of a namespaced local type",
			in:         Input{LocalScope: apiextensionsv1.NamespaceScoped},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonValid,
		},
		{
			name:       "shared source kind",
			in:         Input{SharedSourceWith: []string{"other"}},
			wantStatus: metav1.ConditionTrue, wantReason: syncagentv1alpha1.ReasonAmbiguousConfiguration,
			wantMsg: []string{"also published by other"},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			pr := &syncagentv1alpha1.PublishedResource{Spec: tc.spec}
			got := Check(pr, tc.in).Condition()
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason {
				t.Fatalf("ConfigValid = %s/%s (%s), want %s/%s", got.Status, got.Reason, got.Message, tc.wantStatus, tc.wantReason)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q does not contain %q", got.Message, m)
				}
			}
			// The message must be deterministic, or controllers would rewrite it.
			for range 10 {
				if again := Check(pr, tc.in).Condition(); again.Message != got.Message {
					t.Fatalf("non-deterministic message: %q vs %q", got.Message, again.Message)
				}
			}
		})
	}
}
