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

// Package related compiles the spec.related entries of a PublishedResource
// and resolves, for one primary, which origin objects an entry selects and
// what their destination copies are called (contract §2.8, §6.13 steps
// 1-5). Templates and regular expressions are compiled once per
// PublishedResource generation; an Entry is read-only afterwards, so
// templated selectors are rendered into fresh values per primary and never
// into the shared PublishedResource (contract §7 #2).
package related

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/mutation"
	"github.com/kcp-syncagent/api-syncagent/internal/templating"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Side names one side of the sync.
type Side string

// The two sides.
const (
	SideKcp     Side = "kcp"
	SideService Side = "service"
)

// Types are the types of one related entry on both sides.
type Types struct {
	Kcp, Service Type
}

// Type is a related resource type as served on one side.
type Type struct {
	GVR schema.GroupVersionResource
	discovery.TypeInfo
}

// Entry is one compiled spec.related item.
type Entry struct {
	Identifier string
	Origin     Side
	Cleanup    bool
	SyncStatus bool
	// Kcp and Service are the type on each side.
	Kcp, Service Type
	// Mutator applies the related spec mutations (never nil).
	Mutator *mutation.Mutator
	// Watch is the spec's watch setting (nil: none).
	Watch *syncagentv1alpha1.RelatedResourceWatch

	names      locator
	namespaces *locator
	// allowedNamespaces are the compiled spec.related[].allowedNamespaces;
	// staticNamespace is object.namespace's template when it is plain text.
	allowedNamespaces []*template.Template
	staticNamespace   string
	// serviceNamespaceFixed: object.namespace renders on the service side
	// from nothing the consumer controls (templating.ReadsOnlyWorkspace
	// with .Side "service"): the owner chose that namespace.
	serviceNamespaceFixed bool
}

// OriginType and DestinationType return the type on each end of the copy.
func (e *Entry) OriginType() Type {
	if e.Origin == SideKcp {
		return e.Kcp
	}
	return e.Service
}

// DestinationType returns the type on the destination side.
func (e *Entry) DestinationType() Type {
	if e.Origin == SideKcp {
		return e.Service
	}
	return e.Kcp
}

// Destination returns the side opposite to the origin.
func (e *Entry) Destination() Side { return e.Origin.Opposite() }

// Opposite returns the other side.
func (s Side) Opposite() Side {
	if s == SideKcp {
		return SideService
	}
	return SideKcp
}

// GVRs returns the kcp-side and the service-side resource of rel: the
// origin resource (from group/version/resource or the deprecated kind) and
// the destination resource (the origin one with the projection's parts).
func GVRs(rel *syncagentv1alpha1.RelatedResourceSpec) (kcp, service schema.GroupVersionResource) {
	origin := schema.GroupVersionResource{Group: rel.Group, Version: rel.Version, Resource: rel.Resource}
	//nolint:staticcheck // the deprecated kind form must keep working (contract §2.9).
	switch rel.Kind {
	case syncagentv1alpha1.RelatedResourceKindConfigMap:
		origin = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	case syncagentv1alpha1.RelatedResourceKindSecret:
		origin = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	}
	dest := origin
	if p := rel.Projection; p != nil {
		if p.Group != "" {
			dest.Group = p.Group
		}
		if p.Version != "" {
			dest.Version = p.Version
		}
		if p.Resource != "" {
			dest.Resource = p.Resource
		}
	}
	if rel.Origin == syncagentv1alpha1.RelatedResourceOriginKcp {
		return origin, dest
	}
	return dest, origin
}

// Compile compiles rel with the types it resolves to on both sides.
func Compile(rel *syncagentv1alpha1.RelatedResourceSpec, kcp, service Type) (*Entry, error) {
	e := &Entry{
		Identifier: rel.Identifier,
		Origin:     SideService,
		Cleanup:    rel.Cleanup,
		SyncStatus: rel.SyncStatus,
		Kcp:        kcp,
		Service:    service,
		Watch:      rel.Watch,
	}
	if rel.Origin == syncagentv1alpha1.RelatedResourceOriginKcp {
		e.Origin = SideKcp
	}
	var err error
	var specRules []syncagentv1alpha1.ResourceMutation
	if rel.Mutation != nil {
		specRules = rel.Mutation.Spec
	}
	if e.Mutator, err = mutation.Compile(specRules); err != nil {
		return nil, fmt.Errorf("related %q: spec mutation: %w", rel.Identifier, err)
	}
	names, err := compileLocator(&rel.Object.RelatedResourceObjectSpec)
	if err != nil {
		return nil, fmt.Errorf("related %q: object: %w", rel.Identifier, err)
	}
	e.names = *names
	if rel.Object.Namespace != nil {
		if e.namespaces, err = compileLocator(rel.Object.Namespace); err != nil {
			return nil, fmt.Errorf("related %q: object.namespace: %w", rel.Identifier, err)
		}
		e.staticNamespace = staticValue(rel.Object.Namespace)
		e.serviceNamespaceFixed = e.namespaces.template != nil && e.namespaces.reference == nil && e.namespaces.selector == nil &&
			templating.ReadsOnlyWorkspace(e.namespaces.template, string(SideService))
	}
	for i, text := range rel.AllowedNamespaces {
		t, err := templating.Parse("allowed namespace", text)
		if err != nil {
			return nil, fmt.Errorf("related %q: allowedNamespaces[%d]: %w", rel.Identifier, i, err)
		}
		e.allowedNamespaces = append(e.allowedNamespaces, t)
	}
	return e, nil
}

// staticValue returns the value a locator gives whatever the object: a
// plain-text template, or a reference whose regex has no pattern (its
// replacement is the value). "" if it depends on the object.
func staticValue(spec *syncagentv1alpha1.RelatedResourceObjectSpec) string {
	switch {
	case spec.Reference != nil:
		if re := spec.Reference.Regex; re != nil && re.Pattern == "" && !strings.Contains(re.Replacement, "$") {
			return re.Replacement
		}
	case spec.Selector != nil:
	case spec.Template != nil:
		if !strings.Contains(spec.Template.Template, "{{") {
			return spec.Template.Template
		}
	}
	return ""
}

// locator is one compiled RelatedResourceObjectSpec. Exactly one of
// reference, selector and template is used, in that order of precedence.
type locator struct {
	reference *reference
	selector  *selector
	template  *template.Template
}

type reference struct {
	path    string
	rewrite *rewrite // only its regex part is used
}

type selector struct {
	// labelKeys and labelValues are the templated matchLabels, sorted by key.
	labelKeys, labelValues []*template.Template
	expressions            []metav1.LabelSelectorRequirement
	rewrite                rewrite
}

// rewrite maps a found name to the destination name.
type rewrite struct {
	regex       *regexp.Regexp
	replacement string
	// constant: a regex with an empty pattern returns the replacement.
	constant bool
	template *template.Template
}

func compileLocator(spec *syncagentv1alpha1.RelatedResourceObjectSpec) (*locator, error) {
	switch {
	case spec.Reference != nil:
		ref := &reference{path: spec.Reference.Path}
		if spec.Reference.Regex != nil {
			rw, err := compileRegex(spec.Reference.Regex)
			if err != nil {
				return nil, fmt.Errorf("reference.regex: %w", err)
			}
			ref.rewrite = rw
		}
		return &locator{reference: ref}, nil
	case spec.Selector != nil:
		sel, err := compileSelector(spec.Selector)
		if err != nil {
			return nil, err
		}
		return &locator{selector: sel}, nil
	case spec.Template != nil:
		t, err := templating.Parse("template", spec.Template.Template)
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		return &locator{template: t}, nil
	}
	return nil, fmt.Errorf("one of reference, selector or template is required")
}

func compileRegex(re *syncagentv1alpha1.RegularExpression) (*rewrite, error) {
	if re.Pattern == "" {
		return &rewrite{constant: true, replacement: re.Replacement}, nil
	}
	compiled, err := regexp.Compile(re.Pattern)
	if err != nil {
		return nil, err
	}
	return &rewrite{regex: compiled, replacement: re.Replacement}, nil
}

func compileSelector(spec *syncagentv1alpha1.RelatedResourceObjectSelector) (*selector, error) {
	sel := &selector{}
	keys := make([]string, 0, len(spec.MatchLabels))
	for k := range spec.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		kt, err := templating.Parse("selector key", k)
		if err != nil {
			return nil, fmt.Errorf("selector.matchLabels key %q: %w", k, err)
		}
		vt, err := templating.Parse("selector value", spec.MatchLabels[k])
		if err != nil {
			return nil, fmt.Errorf("selector.matchLabels[%s]: %w", k, err)
		}
		sel.labelKeys = append(sel.labelKeys, kt)
		sel.labelValues = append(sel.labelValues, vt)
	}
	for _, req := range spec.MatchExpressions {
		sel.expressions = append(sel.expressions, *req.DeepCopy())
	}
	// The expressions are used as written: a bad one is a configuration
	// error now, not an error of every object in every workspace later.
	if _, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: sel.expressions}); err != nil {
		return nil, fmt.Errorf("selector.matchExpressions: %w", err)
	}
	switch rw := spec.Rewrite; {
	case rw.Regex != nil:
		compiled, err := compileRegex(rw.Regex)
		if err != nil {
			return nil, fmt.Errorf("selector.rewrite.regex: %w", err)
		}
		sel.rewrite = *compiled
	case rw.Template != nil:
		t, err := templating.Parse("rewrite", rw.Template.Template)
		if err != nil {
			return nil, fmt.Errorf("selector.rewrite.template: %w", err)
		}
		sel.rewrite = rewrite{template: t}
	default:
		return nil, fmt.Errorf("selector.rewrite needs regex or template")
	}
	return sel, nil
}

// missingValue is what text/template prints for a missing map key.
const missingValue = "<no value>"

// render executes t and returns its trimmed output. An output that used a
// missing field is empty ("nothing yet"), never a name like
// "<no value>-credentials".
func render(t *template.Template, data any) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	out := strings.TrimSpace(b.String())
	if strings.Contains(out, missingValue) {
		return "", nil
	}
	return out, nil
}

// apply rewrites value with the regex (or returns the constant).
func (r *rewrite) applyRegex(value string) string {
	if r.constant {
		return r.replacement
	}
	return r.regex.ReplaceAllString(value, r.replacement)
}
