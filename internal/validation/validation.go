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

// Package validation checks what the CRD cannot (contract §2.10): templates,
// regular expressions and CEL expressions that do not compile, empty mutation
// paths, identifiers that cannot be used in annotation keys, and
// configurations that work but are ambiguous. The result is the
// PublishedResource's ConfigValid condition; it is computed once per
// PublishedResource generation, not per object.
package validation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/template/parse"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/mutation"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/references"
	"github.com/kcp-syncagent/api-syncagent/internal/templating"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// identifierPattern is what an identifier must look like to be a segment of
// the related-resources.syncagent.kcp.io/<identifier>.<n> annotation key.
var identifierPattern = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_.-]{0,58}[a-zA-Z0-9])?$`)

// Result collects the problems of one PublishedResource.
type Result struct {
	// Invalid problems make the configuration fail at runtime.
	Invalid []string
	// Ambiguous problems are accepted; the message says what is ignored.
	Ambiguous []string
	// Deprecated inputs work (contract §2.9); the message names their
	// replacement.
	Deprecated []string
}

// ServiceNaming is a spec.naming.name for Services: the default's hashes
// (as unique), behind a letter.
const ServiceNaming = "svc-{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}"

// Input is what Check needs besides the PublishedResource itself.
type Input struct {
	// KcpScope is the scope of the projected type, if known.
	KcpScope apiextensionsv1.ResourceScope
	// LocalScope is the scope of the local (source) type, if known.
	LocalScope apiextensionsv1.ResourceScope
	// SharedSourceWith names other selected PublishedResources with the same
	// source group/kind.
	SharedSourceWith []string
}

// Check validates pr.
func Check(pr *syncagentv1alpha1.PublishedResource, in Input) Result {
	c := &checker{}
	spec := &pr.Spec

	//nolint:staticcheck // the deprecated fields must keep working (contract §2.9); here they are reported.
	if spec.Resource.Version != "" {
		c.deprecated("spec.resource.version is deprecated; use spec.resource.versions")
	}
	//nolint:staticcheck // see above.
	if spec.Projection != nil && spec.Projection.Version != "" {
		c.deprecated("spec.projection.version is deprecated; use spec.projection.versions")
	}
	if n := spec.Naming; n != nil {
		c.pattern("spec.naming.name", n.Name)
		c.pattern("spec.naming.namespace", n.Namespace)
	}
	if in.LocalScope == apiextensionsv1.ClusterScoped && !namesPerWorkspace(spec.Naming) {
		c.ambiguous("spec.naming.name does not depend on the workspace (.ClusterName, .ClusterPath or $remoteClusterName) and the local type is cluster-scoped: " +
			"objects with the same name in two workspaces get the same local name, and only the first one syncs (ObjectConflict)")
	}
	// (A cluster-scoped kcp object's default name begins with the hash of
	// "", a7ffc6f8bf…: a letter.)
	if spec.Resource.APIGroup == "" && spec.Resource.Kind == "Service" && (spec.Naming == nil || spec.Naming.Name == "") && in.KcpScope != apiextensionsv1.ClusterScoped {
		c.ambiguous("the default spec.naming.name is made of hashes and, for most kcp namespaces, begins with a digit, which a Service's name may not: " +
			"such copies are refused by the service cluster; set a spec.naming.name that begins with a letter, such as " + ServiceNaming)
	}
	if in.LocalScope != apiextensionsv1.ClusterScoped && !copyNamespaceEmbedsClusterName(spec.Naming) {
		for i, rel := range spec.Related {
			if rel.Origin != syncagentv1alpha1.RelatedResourceOriginKcp && rel.Object.Namespace == nil && len(rel.AllowedNamespaces) == 0 {
				c.ambiguous("spec.naming.namespace does not always contain the workspace's cluster name ({{ .ClusterName }} at its top level), so the local copies of several workspaces may share a namespace: "+
					"spec.related[%d] (origin service) is read in a local copy's namespace only where it contains the cluster name or allowedNamespaces lists it, "+
					"since a consumer could otherwise name another workspace's object", i)
			}
		}
	}
	if f := spec.Filter; f != nil {
		c.selector("spec.filter.resource", f.Resource)
		c.selector("spec.filter.namespace", f.Namespace)
		if f.Namespace != nil && in.KcpScope == apiextensionsv1.ClusterScoped {
			c.ambiguous("spec.filter.namespace is ignored: the type is cluster-scoped in kcp")
		}
	}
	c.mutations("spec.mutation", spec.Mutation)
	if _, err := references.Compile(spec.References); err != nil {
		c.invalid("%v", err)
	}

	for i, rel := range spec.Related {
		path := fmt.Sprintf("spec.related[%d]", i)
		if !identifierPattern.MatchString(rel.Identifier) {
			c.invalid("%s.identifier %q must be 1-60 alphanumerics, '-', '_' or '.', starting and ending alphanumeric", path, rel.Identifier)
		}
		//nolint:staticcheck // see above.
		if rel.Kind != "" {
			c.deprecated("%s.kind is deprecated; use group, version and resource", path)
		}
		c.locator(path+".object", &rel.Object.RelatedResourceObjectSpec)
		if rel.Object.Namespace != nil {
			c.locator(path+".object.namespace", rel.Object.Namespace)
		}
		for j, ns := range rel.AllowedNamespaces {
			c.allowedNamespace(fmt.Sprintf("%s.allowedNamespaces[%d]", path, j), ns)
		}
		c.mutations(path+".mutation", rel.Mutation)
		if rel.Watch != nil {
			c.selector(path+".watch.bySelector", rel.Watch.BySelector)
		}
	}

	if len(in.SharedSourceWith) > 0 {
		c.ambiguous("the source kind is also published by %s; their local copies cannot be told apart, so only one of them syncs (see SyncReady)", strings.Join(in.SharedSourceWith, ", "))
	}
	return c.Result
}

// Condition turns the result into the ConfigValid condition.
func (r Result) Condition() metav1.Condition {
	switch {
	case len(r.Invalid) > 0:
		return conditions.New(syncagentv1alpha1.ConditionConfigValid, metav1.ConditionFalse, syncagentv1alpha1.ReasonInvalidConfiguration, strings.Join(r.Invalid, "; "))
	case len(r.Ambiguous) > 0:
		return conditions.New(syncagentv1alpha1.ConditionConfigValid, metav1.ConditionTrue, syncagentv1alpha1.ReasonAmbiguousConfiguration, strings.Join(append(r.Ambiguous, r.Deprecated...), "; "))
	case len(r.Deprecated) > 0:
		return conditions.New(syncagentv1alpha1.ConditionConfigValid, metav1.ConditionTrue, syncagentv1alpha1.ReasonValid, "The configuration is valid; "+strings.Join(r.Deprecated, "; "))
	default:
		return conditions.New(syncagentv1alpha1.ConditionConfigValid, metav1.ConditionTrue, syncagentv1alpha1.ReasonValid, "The configuration is valid.")
	}
}

type checker struct{ Result }

func (c *checker) invalid(format string, args ...any) {
	c.Invalid = append(c.Invalid, fmt.Sprintf(format, args...))
}

func (c *checker) ambiguous(format string, args ...any) {
	c.Ambiguous = append(c.Ambiguous, fmt.Sprintf(format, args...))
}

func (c *checker) deprecated(format string, args ...any) {
	c.Deprecated = append(c.Deprecated, fmt.Sprintf(format, args...))
}

// pattern checks a naming pattern: a template if it contains "{{", else a
// legacy placeholder string (always valid).
func (c *checker) pattern(path, p string) {
	switch {
	case strings.Contains(p, "{{"):
		c.template(path, p)
	case usesLegacyPlaceholder(p):
		c.deprecated("%s uses the legacy $remote… placeholders; use a Go template", path)
	}
}

//nolint:staticcheck // the deprecated placeholders are what is looked for.
var legacyPlaceholders = []string{syncagentv1alpha1.PlaceholderRemoteClusterName, syncagentv1alpha1.PlaceholderRemoteNamespace,
	syncagentv1alpha1.PlaceholderRemoteNamespaceHash, syncagentv1alpha1.PlaceholderRemoteName, syncagentv1alpha1.PlaceholderRemoteNameHash}

func usesLegacyPlaceholder(p string) bool {
	return slices.ContainsFunc(legacyPlaceholders, func(ph string) bool { return strings.Contains(p, ph) })
}

func (c *checker) template(path, text string) {
	tpl, err := templating.Parse(path, text)
	if err != nil {
		c.invalid("%s: invalid template: %v", path, err)
		return
	}
	if tpl.Tree != nil && callsFunction(tpl.Root, "shortHash") {
		c.deprecated("%s uses the function shortHash; use sha3short", path)
	}
	if v := templating.Volatile(tpl); len(v) > 0 {
		c.ambiguous("%s calls %s, whose output changes on every call: what it shapes is never in line and is rewritten on every pass", path, strings.Join(v, ", "))
	}
}

// namesPerWorkspace reports whether the local name pattern tells workspaces
// apart (the default does not: it hashes the kcp namespace and name only).
// A template that does not parse is reported as invalid elsewhere.
func namesPerWorkspace(n *syncagentv1alpha1.ResourceNaming) bool {
	if n == nil || n.Name == "" {
		return false
	}
	if !strings.Contains(n.Name, "{{") {
		//nolint:staticcheck // the deprecated placeholder names the workspace too.
		return strings.Contains(n.Name, syncagentv1alpha1.PlaceholderRemoteClusterName)
	}
	tpl, err := templating.Parse("spec.naming.name", n.Name)
	if err != nil {
		return true
	}
	return templating.MentionsWorkspace(tpl)
}

// copyNamespaceEmbedsClusterName reports whether every namespace of local
// copies contains the workspace's cluster name (the default does). A
// pattern that does not compile is reported as invalid elsewhere.
func copyNamespaceEmbedsClusterName(n *syncagentv1alpha1.ResourceNaming) bool {
	namer, err := naming.NewNamer(n)
	return err != nil || namer.NamespaceEmbedsClusterName()
}

// allowedNamespace checks an allowedNamespaces entry: a template that sees
// only the workspace, never the consumer's object.
func (c *checker) allowedNamespace(path, text string) {
	tpl, err := templating.Parse(path, text)
	if err != nil {
		c.invalid("%s: invalid template: %v", path, err)
		return
	}
	if !templating.ReadsOnlyWorkspace(tpl, "") {
		c.invalid("%s: may use only .ClusterName and .ClusterPath", path)
	}
}

// callsFunction reports whether the template tree calls the function name
// (not merely mentions it in text, a string or a comment).
func callsFunction(root parse.Node, name string) bool {
	return templating.AnyNode(root, func(n parse.Node) bool {
		id, ok := n.(*parse.IdentifierNode)
		return ok && id.Ident == name
	})
}

func (c *checker) regex(path, pattern string) {
	if pattern == "" {
		return
	}
	if _, err := regexp.Compile(pattern); err != nil {
		c.invalid("%s: invalid regular expression: %v", path, err)
	}
}

func (c *checker) cel(path, expression string) {
	if err := mutation.CompileCEL(expression); err != nil {
		c.invalid("%s: invalid CEL expression: %v", path, err)
	}
}

// mutationPath checks the path of a mutation member: neither gjson nor sjson
// accepts an empty one.
func (c *checker) mutationPath(path, p string) {
	if p == "" {
		c.invalid("%s: must not be empty", path)
	}
}

// member is one of several mutually exclusive fields.
type member struct {
	name string
	set  bool
}

// used reports every set member after the first as ignored; members are
// given in precedence order.
func (c *checker) used(path string, members ...member) {
	var set []string
	for _, m := range members {
		if m.set {
			set = append(set, m.name)
		}
	}
	if len(set) > 1 {
		c.ambiguous("%s sets %s; only %s is used", path, strings.Join(set, ", "), set[0])
	}
}

func (c *checker) mutations(path string, spec *syncagentv1alpha1.ResourceMutationSpec) {
	if spec == nil {
		return
	}
	lists := []struct {
		name  string
		items []syncagentv1alpha1.ResourceMutation
	}{{"spec", spec.Spec}, {"status", spec.Status}}
	for _, list := range lists {
		for i, m := range list.items {
			p := fmt.Sprintf("%s.%s[%d]", path, list.name, i)
			c.used(p, member{"delete", m.Delete != nil}, member{"regex", m.Regex != nil}, member{"template", m.Template != nil}, member{"cel", m.CEL != nil})
			if m.Delete != nil {
				c.mutationPath(p+".delete.path", m.Delete.Path)
			}
			if m.Regex != nil {
				c.mutationPath(p+".regex.path", m.Regex.Path)
				c.regex(p+".regex.pattern", m.Regex.Pattern)
			}
			if m.Template != nil {
				c.mutationPath(p+".template.path", m.Template.Path)
				c.template(p+".template.template", m.Template.Template)
			}
			if m.CEL != nil {
				c.mutationPath(p+".cel.path", m.CEL.Path)
				c.cel(p+".cel.expression", m.CEL.Expression)
			}
		}
	}
}

// selector checks a label selector (nil is fine).
func (c *checker) selector(path string, sel *metav1.LabelSelector) {
	if sel == nil {
		return
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		c.invalid("%s: invalid label selector: %v", path, err)
	}
}

func (c *checker) locator(path string, spec *syncagentv1alpha1.RelatedResourceObjectSpec) {
	c.used(path, member{"reference", spec.Reference != nil}, member{"selector", spec.Selector != nil}, member{"template", spec.Template != nil})
	if r := spec.Reference; r != nil && r.Regex != nil {
		c.regex(path+".reference.regex.pattern", r.Regex.Pattern)
	}
	if t := spec.Template; t != nil {
		c.template(path+".template.template", t.Template)
	}
	if s := spec.Selector; s != nil {
		// matchLabels are templates, rendered per object; the expressions
		// are used as written.
		c.selector(path+".selector.matchExpressions", &metav1.LabelSelector{MatchExpressions: s.MatchExpressions})
		for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
			c.pattern(path+".selector.matchLabels key", k)
			c.pattern(path+".selector.matchLabels["+k+"]", s.MatchLabels[k])
		}
		rw := s.Rewrite
		c.used(path+".selector.rewrite", member{"regex", rw.Regex != nil}, member{"template", rw.Template != nil})
		if rw.Regex != nil {
			c.regex(path+".selector.rewrite.regex.pattern", rw.Regex.Pattern)
		}
		if rw.Template != nil {
			c.template(path+".selector.rewrite.template.template", rw.Template.Template)
		}
	}
}
