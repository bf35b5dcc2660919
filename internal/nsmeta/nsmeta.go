// Package nsmeta holds the labels and annotations the agent puts on the
// service-cluster namespaces it creates (--namespace-label and
// --namespace-annotation): Go templates over the workspace, rendered per
// namespace, and the patch that brings a namespace the agent created in
// line with them. The keys the agent set are recorded on the namespace
// (keys.NamespaceMetadata): a key taken out of the configuration is
// removed, and a key the agent never set is never touched. It must not be
// used on a namespace the agent did not create.
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
}

// Metadata is the compiled configuration; nil or empty sets nothing.
type Metadata struct {
	labels, annotations map[string]*template.Template
}

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
	if _, err := m.Render(Context{ClusterName: "1a2b3c4d5e6f7g8h"}); err != nil {
		return nil, err
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

// Render renders every template for ctx; label values must be valid.
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

// record is what keys.NamespaceMetadata holds: the keys the agent set.
type record struct {
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

func (r Rendered) record() string {
	if len(r.Labels)+len(r.Annotations) == 0 {
		return ""
	}
	data, _ := json.Marshal(record{Labels: slices.Sorted(maps.Keys(r.Labels)), Annotations: slices.Sorted(maps.Keys(r.Annotations))})
	return string(data)
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
// created, with these labels and annotations, in line with r: r's keys
// set, the keys of the namespace's record that r no longer has removed,
// the record renewed. nil when nothing is to change. An unreadable record
// counts as empty (nothing is removed).
func (r Rendered) Patch(labels, annotations map[string]string) []byte {
	var prev record
	if v, ok := annotations[keys.NamespaceMetadata]; ok {
		_ = json.Unmarshal([]byte(v), &prev)
	}
	setLabels, setAnnotations := diff(labels, r.Labels, prev.Labels), diff(annotations, r.Annotations, prev.Annotations)
	if rec := r.record(); annotations[keys.NamespaceMetadata] != rec {
		if rec == "" {
			setAnnotations[keys.NamespaceMetadata] = nil
		} else {
			setAnnotations[keys.NamespaceMetadata] = rec
		}
	}
	if len(setLabels)+len(setAnnotations) == 0 {
		return nil
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
	return data
}

// diff is the merge-patch map that turns have into want for the keys of
// want and of recorded (keys recorded but no longer wanted are removed).
func diff(have, want map[string]string, recorded []string) map[string]any {
	out := map[string]any{}
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			out[k] = v
		}
	}
	for _, k := range recorded {
		if _, wanted := want[k]; wanted {
			continue
		}
		if _, ok := have[k]; ok {
			out[k] = nil
		}
	}
	return out
}
