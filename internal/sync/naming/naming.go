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

// Package naming computes the name and namespace of local copies (contract
// §2.5): a pattern containing "{{" is a Go text/template with .Object,
// .ClusterName and .ClusterPath; any other pattern is a legacy string with
// $remote... placeholders. Patterns are compiled once per PublishedResource
// (NewNamer), not per object.
package naming

import (
	"crypto/sha1" //nolint:gosec // the legacy placeholders are defined as SHA-1 prefixes.
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"

	"github.com/kcp-syncagent/api-syncagent/internal/templating"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Context is what naming templates see.
type Context struct {
	// Object is the kcp object (after spec mutations) as a generic map.
	Object map[string]any
	// ClusterName is the logical cluster of the consumer workspace.
	ClusterName string
	// ClusterPath is the workspace path, empty unless workspace paths are enabled.
	ClusterPath string
}

// pattern is one compiled naming pattern.
type pattern struct {
	tpl    *template.Template // nil for legacy patterns
	legacy string
}

// Namer computes local names for one PublishedResource.
type Namer struct {
	name, namespace pattern
}

// NewNamer compiles the PublishedResource's naming patterns (empty fields
// use the defaults).
func NewNamer(naming *syncagentv1alpha1.ResourceNaming) (*Namer, error) {
	nameText, namespaceText := syncagentv1alpha1.DefaultNamingName, syncagentv1alpha1.DefaultNamingNamespace
	if naming != nil {
		if naming.Name != "" {
			nameText = naming.Name
		}
		if naming.Namespace != "" {
			namespaceText = naming.Namespace
		}
	}
	name, err := compile("naming.name", nameText)
	if err != nil {
		return nil, err
	}
	namespace, err := compile("naming.namespace", namespaceText)
	if err != nil {
		return nil, err
	}
	return &Namer{name: name, namespace: namespace}, nil
}

func compile(what, text string) (pattern, error) {
	if !strings.Contains(text, "{{") {
		return pattern{legacy: text}, nil
	}
	tpl, err := templating.Parse(what, text)
	if err != nil {
		return pattern{}, fmt.Errorf("invalid %s template: %w", what, err)
	}
	return pattern{tpl: tpl}, nil
}

// Name returns the local name.
func (n *Namer) Name(ctx Context) (string, error) { return n.name.render(ctx) }

// Namespace returns the local namespace (used for namespaced local types).
func (n *Namer) Namespace(ctx Context) (string, error) { return n.namespace.render(ctx) }

// NamespaceEmbedsClusterName reports whether every namespace the pattern
// gives contains the workspace's cluster name as it is (the default does):
// then no other workspace's copies can be in it. A legacy pattern does if
// it names the cluster.
func (n *Namer) NamespaceEmbedsClusterName() bool {
	if n.namespace.tpl == nil {
		//nolint:staticcheck // the deprecated placeholder names the workspace.
		return strings.Contains(n.namespace.legacy, syncagentv1alpha1.PlaceholderRemoteClusterName)
	}
	return templating.EmbedsClusterName(n.namespace.tpl)
}

func (p pattern) render(ctx Context) (string, error) {
	if p.tpl == nil {
		return strings.TrimSpace(legacy(p.legacy, ctx)), nil
	}
	var b strings.Builder
	if err := p.tpl.Execute(&b, ctx); err != nil {
		return "", fmt.Errorf("failed to render %s: %w", p.tpl.Name(), err)
	}
	return strings.TrimSpace(b.String()), nil
}

// legacy replaces the $remote... placeholders; longer tokens go first so
// that $remoteNamespaceHash is not read as $remoteNamespace + "Hash".
func legacy(s string, ctx Context) string {
	name, namespace := objectName(ctx.Object)
	//nolint:staticcheck // the deprecated placeholders must keep working (contract §2.9).
	return strings.NewReplacer(
		syncagentv1alpha1.PlaceholderRemoteClusterName, ctx.ClusterName,
		syncagentv1alpha1.PlaceholderRemoteNamespaceHash, sha1Prefix(namespace),
		syncagentv1alpha1.PlaceholderRemoteNamespace, namespace,
		syncagentv1alpha1.PlaceholderRemoteNameHash, sha1Prefix(name),
		syncagentv1alpha1.PlaceholderRemoteName, name,
	).Replace(s)
}

func objectName(obj map[string]any) (name, namespace string) {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ = meta["name"].(string)
	namespace, _ = meta["namespace"].(string)
	return name, namespace
}

// sha1Prefix returns the first 20 hex characters of the SHA-1 of s.
func sha1Prefix(s string) string {
	sum := sha1.Sum([]byte(s)) //nolint:gosec // see import.
	return hex.EncodeToString(sum[:])[:20]
}
