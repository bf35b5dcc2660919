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

package related

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Primaries are the two copies of the primary an entry is resolved for.
type Primaries struct {
	// Kcp is the kcp object, Service its local copy; both are required.
	Kcp, Service *unstructured.Unstructured
	ClusterName  string
	ClusterPath  string
}

func (p Primaries) on(side Side) *unstructured.Unstructured {
	if side == SideKcp {
		return p.Kcp
	}
	return p.Service
}

// Readers read objects on each side.
type Readers struct {
	Kcp, Service ctrlruntimeclient.Reader
}

func (r Readers) on(side Side) ctrlruntimeclient.Reader {
	if side == SideKcp {
		return r.Kcp
	}
	return r.Service
}

// Pair is an existing origin object and the name of its destination copy.
type Pair struct {
	Origin      *unstructured.Unstructured
	Destination types.NamespacedName
}

// namePair is an origin name and a destination name (in one of the
// namespace or name dimensions). found is the origin object if the
// selector listed it.
type namePair struct {
	origin, destination string
	found               *unstructured.Unstructured
}

// Resolve returns the existing origin objects the entry selects for the
// primary, with their destination names, sorted by origin namespace/name.
// Selected objects that do not exist yet are left out; that is not an
// error. Names and namespaces are validated, so that a value a consumer
// controls can never address anything but a plain object name.
func (e *Entry) Resolve(ctx context.Context, p Primaries, r Readers) ([]Pair, error) {
	if p.Kcp == nil || p.Service == nil {
		return nil, fmt.Errorf("both copies of the primary are needed")
	}
	res := &resolution{entry: e, primaries: p, readers: r}
	namespaces, err := res.namespaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("related %q: namespace: %w", e.Identifier, err)
	}
	var out []Pair
	seen := map[types.NamespacedName]types.NamespacedName{} // destination → origin
	// Service-origin objects in the local copy's namespace: checked before
	// a selector lists there, or once a reference or template names
	// something there (an entry whose reference is empty reads nothing).
	checkCopyNamespace := e.namespaces == nil && e.Origin == SideService
	lists := e.names.reference == nil && e.names.selector != nil
	for _, ns := range namespaces {
		if checkCopyNamespace && lists {
			if err := res.allowedOnService(ns.origin); err != nil {
				return nil, fmt.Errorf("related %q: namespace: %w", e.Identifier, err)
			}
		}
		names, err := res.names(ctx, ns)
		if err != nil {
			return nil, fmt.Errorf("related %q: %w", e.Identifier, err)
		}
		if checkCopyNamespace && !lists && len(names) > 0 {
			if err := res.allowedOnService(ns.origin); err != nil {
				return nil, fmt.Errorf("related %q: namespace: %w", e.Identifier, err)
			}
		}
		for _, n := range names {
			if err := validName(n.origin); err != nil {
				return nil, fmt.Errorf("related %q: origin name: %w", e.Identifier, err)
			}
			if err := validName(n.destination); err != nil {
				return nil, fmt.Errorf("related %q: destination name: %w", e.Identifier, err)
			}
			originKey := types.NamespacedName{Namespace: ns.origin, Name: n.origin}
			destKey := types.NamespacedName{Namespace: ns.destination, Name: n.destination}
			if prev, dup := seen[destKey]; dup {
				if prev == originKey {
					continue
				}
				return nil, fmt.Errorf("related %q: %s and %s map to the same destination %s", e.Identifier, prev, originKey, destKey)
			}
			seen[destKey] = originKey

			obj := n.found
			if obj == nil {
				if obj, err = res.get(ctx, originKey); err != nil {
					return nil, fmt.Errorf("related %q: %w", e.Identifier, err)
				}
				if obj == nil {
					continue
				}
			}
			out = append(out, Pair{Origin: obj, Destination: destKey})
		}
	}
	slices.SortFunc(out, func(a, b Pair) int {
		return cmp.Or(cmp.Compare(a.Origin.GetNamespace(), b.Origin.GetNamespace()), cmp.Compare(a.Origin.GetName(), b.Origin.GetName()))
	})
	return out, nil
}

// validName accepts what can be an object name: no path separators, no
// "." or "..", at most 253 characters.
func validName(name string) error {
	if name == "" || len(name) > validation.DNS1123SubdomainMaxLength {
		return fmt.Errorf("%q is not a valid object name", name)
	}
	if msgs := path.IsValidPathSegmentName(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid object name: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

func validNamespace(name string) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid namespace: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

// resolution is the state of one Resolve call.
type resolution struct {
	entry     *Entry
	primaries Primaries
	readers   Readers
	// json holds the marshalled primaries, per side.
	json map[Side][]byte
}

func (r *resolution) primaryJSON(side Side) ([]byte, error) {
	if data, ok := r.json[side]; ok {
		return data, nil
	}
	data, err := json.Marshal(r.primaries.on(side).Object)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the primary: %w", err)
	}
	if r.json == nil {
		r.json = map[Side][]byte{}
	}
	r.json[side] = data
	return data, nil
}

// namespaces returns origin → destination namespace pairs; one pair of ""
// for cluster-scoped related types.
func (r *resolution) namespaces(ctx context.Context) ([]namePair, error) {
	e := r.entry
	originNamespaced, destNamespaced := e.OriginType().Namespaced, e.DestinationType().Namespaced
	if !originNamespaced && !destNamespaced {
		return []namePair{{}}, nil
	}
	var pairs []namePair
	if e.namespaces == nil {
		origin, dest := r.primaries.on(e.Origin).GetNamespace(), r.primaries.on(e.Destination()).GetNamespace()
		if (originNamespaced && origin == "") || (destNamespaced && dest == "") {
			return nil, fmt.Errorf("object.namespace is required because the primary is cluster-scoped")
		}
		pairs = []namePair{{origin: origin, destination: dest}}
	} else {
		var err error
		if pairs, err = r.locate(ctx, e.namespaces, "", true); err != nil {
			return nil, err
		}
	}
	for i := range pairs {
		if !originNamespaced {
			pairs[i].origin = ""
		} else if err := validNamespace(pairs[i].origin); err != nil {
			return nil, err
		}
		if !destNamespaced {
			pairs[i].destination = ""
		} else if err := validNamespace(pairs[i].destination); err != nil {
			return nil, err
		}
		// A namespace object.namespace names is checked here; the local
		// copy's namespace only once something is to be read there
		// (Resolve).
		if e.namespaces != nil {
			service := pairs[i].origin
			if e.Origin == SideKcp {
				service = pairs[i].destination
			}
			if err := r.allowedOnService(service); err != nil {
				return nil, err
			}
		}
	}
	return pairs, nil
}

// NamespaceNotAllowedError is a service-side namespace that object.namespace
// resolved to but the PublishedResource does not allow.
type NamespaceNotAllowedError struct{ Namespace string }

func (e *NamespaceNotAllowedError) Error() string {
	return fmt.Sprintf("namespace %q of the service cluster is neither the workspace's own, nor fixed by the PublishedResource, nor allowed by allowedNamespaces", e.Namespace)
}

// allowedOnService reports whether a related object may be read or written
// in namespace ns of the service cluster: a namespace the owner chose
// (object.namespace in plain text, or rendered on the service side from
// nothing the consumer controls), the local copy's namespace if it is the
// workspace's own, that is, it contains the workspace's cluster name
// (kcp chooses cluster names, so no other workspace's copy namespace can
// contain it unless that workspace's own data puts it there; kcp-origin
// copies are written there whatever its name), or an entry of
// allowedNamespaces rendered for this workspace (never with the
// consumer's object). "" is a cluster-scoped service-side type.
func (r *resolution) allowedOnService(ns string) error {
	e := r.entry
	if ns == "" || ns == e.staticNamespace || e.serviceNamespaceFixed {
		return nil
	}
	if ns == r.primaries.Service.GetNamespace() && (e.Origin == SideKcp ||
		r.primaries.ClusterName != "" && strings.Contains(ns, r.primaries.ClusterName)) {
		return nil
	}
	data := map[string]any{"ClusterName": r.primaries.ClusterName, "ClusterPath": r.primaries.ClusterPath}
	for _, t := range e.allowedNamespaces {
		if allowed, err := render(t, data); err == nil && allowed == ns {
			return nil
		}
	}
	return &NamespaceNotAllowedError{Namespace: ns}
}

// ErrEmptySelector is a templated label selector that rendered empty for
// an object: it would select everything, so it selects nothing and is
// reported.
var ErrEmptySelector = errors.New("every templated key of the label selector rendered empty for this object; nothing is selected")

// names returns the origin → destination name pairs within one namespace pair.
func (r *resolution) names(ctx context.Context, ns namePair) ([]namePair, error) {
	return r.locate(ctx, &r.entry.names, ns.origin, false)
}

// locate runs one locator. For namespaces (forNamespaces), selectors list
// Namespaces; otherwise they list origin objects in originNamespace.
func (r *resolution) locate(ctx context.Context, l *locator, originNamespace string, forNamespaces bool) ([]namePair, error) {
	switch {
	case l.reference != nil:
		return r.byReference(l.reference)
	case l.selector != nil:
		return r.bySelector(ctx, l.selector, originNamespace, forNamespaces)
	default:
		return r.byTemplate(l)
	}
}

func (r *resolution) byReference(ref *reference) ([]namePair, error) {
	values := map[Side][]string{}
	for _, side := range []Side{SideKcp, SideService} {
		data, err := r.primaryJSON(side)
		if err != nil {
			return nil, err
		}
		result := gjson.GetBytes(data, ref.path)
		if !result.Exists() {
			return nil, nil // nothing yet
		}
		items := []gjson.Result{result}
		if result.IsArray() {
			items = result.Array()
		}
		for _, item := range items {
			v := strings.TrimSpace(item.String())
			if ref.rewrite != nil {
				v = ref.rewrite.applyRegex(v)
			}
			values[side] = append(values[side], v)
		}
	}
	origin, dest := values[r.entry.Origin], values[r.entry.Destination()]
	if len(origin) != len(dest) {
		return nil, fmt.Errorf("reference %q yields %d value(s) on the origin side and %d on the destination side", ref.path, len(origin), len(dest))
	}
	var pairs []namePair
	for i := range origin {
		if origin[i] != "" && dest[i] != "" {
			pairs = append(pairs, namePair{origin: origin[i], destination: dest[i]})
		}
	}
	return pairs, nil
}

func (r *resolution) byTemplate(l *locator) ([]namePair, error) {
	results := map[Side]string{}
	for _, side := range []Side{SideKcp, SideService} {
		out, err := render(l.template, map[string]any{
			"Side":        string(side),
			"Object":      r.primaries.on(side).Object,
			"ClusterName": r.primaries.ClusterName,
			"ClusterPath": r.primaries.ClusterPath,
		})
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		results[side] = out
	}
	origin, dest := results[r.entry.Origin], results[r.entry.Destination()]
	if origin == "" || dest == "" {
		return nil, nil
	}
	return []namePair{{origin: origin, destination: dest}}, nil
}

// selectorData is the template context of selectors and rewrites.
func (r *resolution) selectorData() map[string]any {
	return map[string]any{
		"LocalObject":  r.primaries.Service.Object,
		"RemoteObject": r.primaries.Kcp.Object,
		"ClusterName":  r.primaries.ClusterName,
		"ClusterPath":  r.primaries.ClusterPath,
	}
}

// renderSelector renders the templated matchLabels for this primary into
// a fresh selector.
func (r *resolution) renderSelector(sel *selector) (labels.Selector, error) {
	data := r.selectorData()
	matchLabels := map[string]string{}
	for i := range sel.labelKeys {
		k, err := render(sel.labelKeys[i], data)
		if err != nil {
			return nil, fmt.Errorf("selector key: %w", err)
		}
		if k == "" {
			continue
		}
		v, err := render(sel.labelValues[i], data)
		if err != nil {
			return nil, fmt.Errorf("selector value of %q: %w", k, err)
		}
		matchLabels[k] = v
	}
	if len(sel.labelKeys) > 0 && len(matchLabels) == 0 && len(sel.expressions) == 0 {
		// Every templated key rendered empty (from the consumer's data):
		// an empty selector would select everything.
		return nil, ErrEmptySelector
	}
	out, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: matchLabels, MatchExpressions: sel.expressions})
	if err != nil {
		return nil, fmt.Errorf("invalid rendered selector: %w", err)
	}
	return out, nil
}

func (r *resolution) bySelector(ctx context.Context, sel *selector, originNamespace string, forNamespaces bool) ([]namePair, error) {
	selector, err := r.renderSelector(sel)
	if err != nil {
		return nil, err
	}
	reader := r.readers.on(r.entry.Origin)
	var found []*unstructured.Unstructured
	if forNamespaces {
		list := &corev1.NamespaceList{}
		if err := reader.List(ctx, list, ctrlruntimeclient.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil, fmt.Errorf("failed to list namespaces: %w", err)
		}
		for i := range list.Items {
			found = append(found, &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": list.Items[i].Name}}})
		}
	} else {
		gvk := r.entry.OriginType().GVK
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []ctrlruntimeclient.ListOption{ctrlruntimeclient.MatchingLabelsSelector{Selector: selector}}
		if originNamespace != "" {
			opts = append(opts, ctrlruntimeclient.InNamespace(originNamespace))
		}
		if err := reader.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("failed to list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			found = append(found, &list.Items[i])
		}
	}

	var pairs []namePair
	for _, obj := range found {
		var dest string
		if sel.rewrite.template != nil {
			data := r.selectorData()
			data["Value"] = obj.GetName()
			data["RelatedObject"] = nil
			if !forNamespaces {
				data["RelatedObject"] = obj.Object
			}
			if dest, err = render(sel.rewrite.template, data); err != nil {
				return nil, fmt.Errorf("selector rewrite: %w", err)
			}
		} else {
			dest = sel.rewrite.applyRegex(obj.GetName())
		}
		if dest == "" {
			continue
		}
		pair := namePair{origin: obj.GetName(), destination: dest}
		if !forNamespaces {
			pair.found = obj
		}
		pairs = append(pairs, pair)
	}
	return pairs, nil
}

// get reads one origin object; nil if it does not exist.
func (r *resolution) get(ctx context.Context, key types.NamespacedName) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.entry.OriginType().GVK)
	err := r.readers.on(r.entry.Origin).Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get %s %s: %w", obj.GetKind(), key, err)
	}
	return obj, nil
}
