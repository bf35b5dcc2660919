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

// Package nsmeta holds the labels and annotations the agent puts on the
// service-cluster namespaces it creates (--namespace-label and
// --namespace-annotation): Go templates over the workspace, rendered per
// namespace, and the patch that brings a namespace the agent created in
// line with them. The values the agent set are recorded on the namespace
// (keys.NamespaceMetadata). It never overwrites or removes a value it did
// not set (one someone else wrote, or changed since), never touches the
// agent's, kcp's or Kubernetes' own keys whatever a record says, and must
// not be used on a namespace the agent did not create.
package nsmeta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/templating"
)

// Context is what the templates see.
type Context struct {
	// ClusterName is the logical cluster of the workspace the namespace
	// was created for.
	ClusterName string
	// Namespace is the namespace's name. A template that reads the
	// workspace is rendered only when it contains ClusterName: a namespace
	// whose name does not tell workspaces apart may hold the copies of
	// several, and one workspace's values would mislabel the others'.
	Namespace string
}

// Metadata is the compiled configuration; nil or empty sets nothing.
type Metadata struct {
	labels, annotations map[string]*template.Template
}

// maxAnnotationBytes bounds the configured annotations of one namespace
// (their keys and values, rendered, and the record of them): Kubernetes
// allows 256 KiB of annotations in all, and the rest is others'.
const maxAnnotationBytes = 64 << 10

// Parse compiles "key=template" pairs of labels and annotations. Keys must
// be qualified names outside the agent's and Kubernetes' own prefixes;
// every template is tried on a sample workspace, so that a template that
// cannot render (a field other than .ClusterName, an invalid label value)
// is refused at start.
func Parse(labels, annotations []string) (*Metadata, error) {
	m := &Metadata{}
	var err error
	if m.labels, err = compile("--namespace-label", labels); err != nil {
		return nil, err
	}
	if m.annotations, err = compile("--namespace-annotation", annotations); err != nil {
		return nil, err
	}
	sample, err := m.Render(Context{ClusterName: "1a2b3c4d5e6f7g8h", Namespace: "1a2b3c4d5e6f7g8h"})
	if err != nil {
		return nil, err
	}
	size := len(sample.record())
	for k, v := range sample.Annotations {
		size += len(k) + len(v)
	}
	if size > maxAnnotationBytes {
		return nil, fmt.Errorf("--namespace-annotation: the annotations and their record take %d bytes on a namespace, more than %d", size, maxAnnotationBytes)
	}
	return m, nil
}

func compile(flag string, pairs []string) (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, pair := range pairs {
		key, text, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("%s %q: want key=value", flag, pair)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: invalid key: %s", flag, key, strings.Join(errs, "; "))
		}
		if reserved(key) {
			return nil, fmt.Errorf("%s %q: the key is reserved (syncagent.kcp.io/, kcp.io/ and kubernetes.io/metadata.name are set by the agent, kcp or Kubernetes)", flag, key)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s %q: the key is given twice", flag, key)
		}
		tpl, err := templating.Parse(flag+" "+key, text)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", flag, key, err)
		}
		if v := templating.Volatile(tpl); len(v) > 0 {
			return nil, fmt.Errorf("%s %q: calls %s, whose output changes on every call: the namespace would be patched on every pass", flag, key, strings.Join(v, ", "))
		}
		out[key] = tpl.Option("missingkey=error")
	}
	return out, nil
}

func reserved(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == "syncagent.kcp.io" || prefix == "kcp.io" || strings.HasSuffix(prefix, ".kcp.io") ||
		key == "kubernetes.io/metadata.name")
}

// Empty reports whether nothing is configured.
func (m *Metadata) Empty() bool { return m == nil || len(m.labels)+len(m.annotations) == 0 }

// Rendered is the metadata of one namespace.
type Rendered struct {
	Labels, Annotations map[string]string
}

// Render renders the templates for ctx (those that read the workspace
// only when ctx.Namespace contains ctx.ClusterName); label values must be
// valid.
func (m *Metadata) Render(ctx Context) (Rendered, error) {
	r := Rendered{Labels: map[string]string{}, Annotations: map[string]string{}}
	if m == nil {
		return r, nil
	}
	for _, part := range []struct {
		what string
		tpls map[string]*template.Template
		out  map[string]string
	}{{"label", m.labels, r.Labels}, {"annotation", m.annotations, r.Annotations}} {
		for key, tpl := range part.tpls {
			if templating.MentionsWorkspace(tpl) && (ctx.ClusterName == "" || !strings.Contains(ctx.Namespace, ctx.ClusterName)) {
				continue
			}
			var buf bytes.Buffer
			if err := tpl.Execute(&buf, ctx); err != nil {
				return Rendered{}, fmt.Errorf("namespace %s %s: %w", part.what, key, err)
			}
			v := buf.String()
			if part.what == "label" {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					return Rendered{}, fmt.Errorf("namespace label %s: the value %q is not a valid label value: %s", key, v, strings.Join(errs, "; "))
				}
			}
			part.out[key] = v
		}
	}
	return r, nil
}

// record is what keys.NamespaceMetadata holds: the keys the agent set and
// the values it set them to.
type record struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// encode returns the annotation's value; "" for an empty record. JSON
// orders map keys, so one record has one encoding.
func (r record) encode() string {
	if len(r.Labels)+len(r.Annotations) == 0 {
		return ""
	}
	data, _ := json.Marshal(r) // maps of strings always encode
	return string(data)
}

func (r Rendered) record() string {
	return record{Labels: r.Labels, Annotations: r.Annotations}.encode()
}

// ForCreate returns the labels and annotations of a namespace the agent
// creates: r's, the record of them, and the given labels (the agent's own,
// which win).
func (r Rendered) ForCreate(own map[string]string) (labels, annotations map[string]string) {
	labels = maps.Clone(r.Labels)
	maps.Copy(labels, own)
	annotations = maps.Clone(r.Annotations)
	if rec := r.record(); rec != "" {
		annotations[keys.NamespaceMetadata] = rec
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	return labels, annotations
}

// Patch returns the JSON merge patch that brings a namespace the agent
// created, with these labels and annotations, in line with r, and the
// keys it leaves alone because someone else set them ("label team"). A key
// of r is set where it is missing or still holds the value the namespace's
// record says the agent set; a recorded key r no longer has is removed
// only where it still holds the recorded value; the record is renewed. A
// reserved key is never touched, whatever the record says, and an
// unreadable record counts as empty (nothing is removed). The patch is nil
// when nothing is to change.
func (r Rendered) Patch(labels, annotations map[string]string) (patch []byte, foreign []string) {
	var prev record
	if v, ok := annotations[keys.NamespaceMetadata]; ok {
		_ = json.Unmarshal([]byte(v), &prev)
	}
	next := record{Labels: map[string]string{}, Annotations: map[string]string{}}
	setLabels, foreignLabels := reconcile(labels, r.Labels, prev.Labels, next.Labels)
	setAnnotations, foreignAnnotations := reconcile(annotations, r.Annotations, prev.Annotations, next.Annotations)
	for _, k := range foreignLabels {
		foreign = append(foreign, "label "+k)
	}
	for _, k := range foreignAnnotations {
		foreign = append(foreign, "annotation "+k)
	}
	if rec := next.encode(); annotations[keys.NamespaceMetadata] != rec {
		if rec == "" {
			setAnnotations[keys.NamespaceMetadata] = nil
		} else {
			setAnnotations[keys.NamespaceMetadata] = rec
		}
	}
	if len(setLabels)+len(setAnnotations) == 0 {
		return nil, foreign
	}
	meta := map[string]any{}
	if len(setLabels) > 0 {
		meta["labels"] = setLabels
	}
	if len(setAnnotations) > 0 {
		meta["annotations"] = setAnnotations
	}
	// Maps of strings and nils always encode.
	data, _ := json.Marshal(map[string]any{"metadata": meta})
	return data, foreign
}

// reconcile returns the merge-patch map that turns have into want where
// the agent may write (see Patch), the wanted keys someone else holds
// (sorted), and fills next with what the agent's keys hold afterwards.
func reconcile(have, want, recorded, next map[string]string) (set map[string]any, foreign []string) {
	set = map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v := want[k]
		cur, present := have[k]
		was, ours := recorded[k]
		switch {
		case !present || (ours && cur == was):
			if !present || cur != v {
				set[k] = v
			}
			next[k] = v
		case cur != v:
			foreign = append(foreign, k)
		}
		// else: someone else set the wanted value; it stays theirs.
	}
	for k, was := range recorded {
		if _, wanted := want[k]; wanted || reserved(k) {
			continue
		}
		if cur, present := have[k]; present && cur == was {
			set[k] = nil
		}
	}
	return set, foreign
}
