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
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

var (
	configMapType = Type{
		GVR:      schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		TypeInfo: discovery.TypeInfo{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true},
	}
	clusterRoleType = Type{
		GVR:      schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		TypeInfo: discovery.TypeInfo{GVK: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}},
	}
)

func metaLabels(l map[string]string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: l}
}

func configMap(namespace, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Data:       map[string]string{"name": name},
	}
}

func clusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func newReader(t *testing.T, objs ...ctrlruntimeclient.Object) ctrlruntimeclient.Reader {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := rbacv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// primary returns a copy of the primary: the kcp object default/foo or its
// local copy abc/local-foo, each with its own spec values so that the tests
// see which side a value came from.
func primary(side Side) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if side == SideKcp {
		u.SetAPIVersion("kcp.example.com/v1")
		u.SetNamespace("default")
		u.SetName("foo")
		u.Object["spec"] = map[string]any{"configName": "app-config", "configs": []any{"b", "a"}, "ns": "team-a", "tier": "kcp-tier"}
	} else {
		u.SetAPIVersion("example.com/v1")
		u.SetNamespace("abc")
		u.SetName("local-foo")
		u.Object["spec"] = map[string]any{"configName": "local-config", "configs": []any{"lb", "la"}, "ns": "svc-a", "tier": "web"}
	}
	u.SetKind("Thing")
	return u
}

// setSpec sets spec.<field> on a primary copy; nil removes it.
func setSpec(field string, value any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if value == nil {
			unstructured.RemoveNestedField(u.Object, "spec", field)
			return
		}
		u.Object["spec"].(map[string]any)[field] = value
	}
}

func clusterScoped(u *unstructured.Unstructured) { u.SetNamespace("") }

func byReference(path string) syncagentv1alpha1.RelatedResourceObjectSpec {
	return syncagentv1alpha1.RelatedResourceObjectSpec{Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: path}}
}

func byTemplate(text string) syncagentv1alpha1.RelatedResourceObjectSpec {
	return syncagentv1alpha1.RelatedResourceObjectSpec{Template: &syncagentv1alpha1.TemplateExpression{Template: text}}
}

func bySelector(sel metav1.LabelSelector, rewrite syncagentv1alpha1.RelatedResourceSelectorRewrite) syncagentv1alpha1.RelatedResourceObjectSpec {
	return syncagentv1alpha1.RelatedResourceObjectSpec{Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{LabelSelector: sel, Rewrite: rewrite}}
}

func regexRewrite(pattern, replacement string) syncagentv1alpha1.RelatedResourceSelectorRewrite {
	return syncagentv1alpha1.RelatedResourceSelectorRewrite{Regex: &syncagentv1alpha1.RegularExpression{Pattern: pattern, Replacement: replacement}}
}

func templateRewrite(text string) syncagentv1alpha1.RelatedResourceSelectorRewrite {
	return syncagentv1alpha1.RelatedResourceSelectorRewrite{Template: &syncagentv1alpha1.TemplateExpression{Template: text}}
}

// pairStrings renders pairs as "<origin ns>/<name> -> <destination ns>/<name>".
func pairStrings(pairs []Pair) []string {
	var out []string
	for _, p := range pairs {
		out = append(out, fmt.Sprintf("%s/%s -> %s", p.Origin.GetNamespace(), p.Origin.GetName(), p.Destination))
	}
	return out
}

func TestEntry_Resolve(t *testing.T) {
	long := strings.Repeat("a", 254)

	testcases := []struct {
		name   string
		origin syncagentv1alpha1.RelatedResourceOrigin
		object syncagentv1alpha1.RelatedResourceObject
		// kcpType and serviceType default to ConfigMaps.
		kcpType, serviceType *Type
		kcpPrimary           []func(*unstructured.Unstructured)
		servicePrimary       []func(*unstructured.Unstructured)
		kcpObjects           []ctrlruntimeclient.Object
		serviceObjects       []ctrlruntimeclient.Object
		// allowed is spec.related[].allowedNamespaces.
		allowed []string
		want    []string
		wantErr string
	}{
		// reference
		{
			name:       "reference, origin kcp: the kcp value names the origin, the local value the copy",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", nil), configMap("abc", "local-config", nil)},
			want:       []string{"default/app-config -> abc/local-config"},
		},
		{
			name:           "reference, origin service: the local value names the origin, the kcp value the copy",
			origin:         "service",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			serviceObjects: []ctrlruntimeclient.Object{configMap("abc", "local-config", nil), configMap("default", "app-config", nil)},
			want:           []string{"abc/local-config -> default/app-config"},
		},
		{
			name:       "reference to arrays: N values give N pairs by index, sorted by origin name",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configs")},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "a", nil), configMap("default", "b", nil)},
			want:       []string{"default/a -> abc/la", "default/b -> abc/lb"},
		},
		{
			name:           "reference to arrays of different lengths is an error",
			origin:         "kcp",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configs")},
			servicePrimary: []func(*unstructured.Unstructured){setSpec("configs", []any{"lb"})},
			kcpObjects:     []ctrlruntimeclient.Object{configMap("default", "a", nil), configMap("default", "b", nil)},
			wantErr:        `related "rel": reference "spec.configs" yields 2 value(s) on the origin side and 1 on the destination side`,
		},
		{
			name:       "reference to a missing path is nothing yet",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.missing")},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", nil)},
		},
		{
			name:           "reference missing on one side is nothing yet",
			origin:         "kcp",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			servicePrimary: []func(*unstructured.Unstructured){setSpec("configName", nil)},
			kcpObjects:     []ctrlruntimeclient.Object{configMap("default", "app-config", nil)},
		},
		{
			name:           "reference values are trimmed and pairs with an empty side are skipped",
			origin:         "kcp",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configs")},
			kcpPrimary:     []func(*unstructured.Unstructured){setSpec("configs", []any{" a ", "", "c"})},
			servicePrimary: []func(*unstructured.Unstructured){setSpec("configs", []any{"la", "lb", " "})},
			kcpObjects:     []ctrlruntimeclient.Object{configMap("default", "a", nil), configMap("default", "c", nil)},
			want:           []string{"default/a -> abc/la"},
		},
		{
			name:           "reference: the same pair twice is one pair",
			origin:         "kcp",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configs")},
			kcpPrimary:     []func(*unstructured.Unstructured){setSpec("configs", []any{"a", "a"})},
			servicePrimary: []func(*unstructured.Unstructured){setSpec("configs", []any{"la", "la"})},
			kcpObjects:     []ctrlruntimeclient.Object{configMap("default", "a", nil)},
			want:           []string{"default/a -> abc/la"},
		},
		{
			name:   "reference regex rewrites every value on both sides",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.configName",
					Regex: &syncagentv1alpha1.RegularExpression{Pattern: "^(local-)?(.*)$", Replacement: "cfg-$2"}},
			}},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "cfg-app-config", nil)},
			want:       []string{"default/cfg-app-config -> abc/cfg-config"},
		},
		{
			name:   "reference regex with an empty pattern is the constant replacement",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.configName",
					Regex: &syncagentv1alpha1.RegularExpression{Replacement: "fixed"}},
			}},
			serviceObjects: []ctrlruntimeclient.Object{configMap("abc", "fixed", nil)},
			want:           []string{"abc/fixed -> default/fixed"},
		},
		{
			name:       "missing origin objects are left out",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configs")},
			kcpPrimary: []func(*unstructured.Unstructured){setSpec("configs", []any{"c", "b", "a"})},
			servicePrimary: []func(*unstructured.Unstructured){
				setSpec("configs", []any{"lc", "lb", "la"}),
			},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "c", nil), configMap("default", "a", nil)},
			want:       []string{"default/a -> abc/la", "default/c -> abc/lc"},
		},

		// template
		{
			name:   "template sees .Side, .Object, .ClusterName and .ClusterPath",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byTemplate(
				`{{ if eq .Side "kcp" }}{{ .Object.spec.configName }}{{ else }}{{ .ClusterName }}-{{ .ClusterPath | replace ":" "-" }}-{{ .Object.metadata.name }}{{ end }}`)},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", nil)},
			want:       []string{"default/app-config -> abc/abc-root-org-local-foo"},
		},
		{
			name:           "template, origin service",
			origin:         "service",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byTemplate(`{{ .Side }}-{{ .Object.spec.tier }}`)},
			serviceObjects: []ctrlruntimeclient.Object{configMap("abc", "service-web", nil)},
			want:           []string{"abc/service-web -> default/kcp-kcp-tier"},
		},
		{
			name:       "template empty on one side is nothing yet",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byTemplate(`{{ if eq .Side "kcp" }}app-config{{ end }}`)},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", nil)},
		},
		{
			name:       "template using a missing field is nothing yet, not a name with <no value>",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byTemplate("{{ .Object.spec.notThere }}-credentials")},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "<no value>-credentials", nil)},
		},
		{
			name:       "template output is trimmed",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byTemplate("\n  app-config \n")},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", nil)},
			want:       []string{"default/app-config -> abc/app-config"},
		},

		// selector
		{
			name:   "selector: templated keys and values are rendered for this primary, a key rendering empty is dropped",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(metaLabels(map[string]string{
				"owner":                               "{{ .RemoteObject.metadata.name }}",
				"{{ .ClusterName }}.example.com/tier": "{{ .LocalObject.spec.tier }}",
				"{{ if eq .ClusterName \"other\" }}never{{ end }}": "dropped",
			}), regexRewrite("^(.*)$", "$1-copy"))},
			kcpObjects: []ctrlruntimeclient.Object{
				configMap("default", "one", map[string]string{"owner": "foo", "abc.example.com/tier": "web"}),
				configMap("default", "two", map[string]string{"owner": "bar", "abc.example.com/tier": "web"}),
				configMap("default", "three", map[string]string{"owner": "foo"}),
				configMap("elsewhere", "four", map[string]string{"owner": "foo", "abc.example.com/tier": "web"}),
			},
			want: []string{"default/one -> abc/one-copy"},
		},
		{
			name:   "selector: matchExpressions, template rewrite with .Value and .RelatedObject",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "staging"}}},
			}, templateRewrite("{{ .Value }}-{{ .RelatedObject.metadata.labels.env }}-{{ .ClusterName }}-{{ .LocalObject.metadata.name }}"))},
			kcpObjects: []ctrlruntimeclient.Object{
				configMap("default", "c", map[string]string{"env": "staging"}),
				configMap("default", "b", map[string]string{"env": "dev"}),
				configMap("default", "a", map[string]string{"env": "prod"}),
			},
			want: []string{"default/a -> abc/a-prod-abc-local-foo", "default/c -> abc/c-staging-abc-local-foo"},
		},
		{
			name:   "selector, origin service: lists in the local primary's namespace",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(
				metaLabels(map[string]string{"owner": "{{ .RemoteObject.metadata.name }}"}),
				templateRewrite("{{ .RemoteObject.metadata.name }}-{{ .Value }}"))},
			serviceObjects: []ctrlruntimeclient.Object{
				configMap("abc", "x", map[string]string{"owner": "foo"}),
				configMap("default", "y", map[string]string{"owner": "foo"}),
			},
			want: []string{"abc/x -> default/foo-x"},
		},
		{
			name:   "selector: every templated key rendering empty selects nothing, not everything, and is reported",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(metaLabels(map[string]string{
				"{{ .LocalObject.spec.missing }}": "x",
			}), regexRewrite("^(.*)$", "$1"))},
			kcpObjects: []ctrlruntimeclient.Object{
				configMap("default", "one", map[string]string{"owner": "foo"}),
				configMap("default", "two", nil),
			},
			wantErr: "every templated key of the label selector rendered empty",
		},
		{
			name:   "selector: a rewrite rendering empty skips the object",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(
				metaLabels(map[string]string{"owner": "foo"}),
				templateRewrite(`{{ if ne .Value "b" }}{{ .Value }}{{ end }}`))},
			kcpObjects: []ctrlruntimeclient.Object{
				configMap("default", "a", map[string]string{"owner": "foo"}),
				configMap("default", "b", map[string]string{"owner": "foo"}),
			},
			want: []string{"default/a -> abc/a"},
		},
		{
			name:   "selector: a regex rewrite with an empty pattern is a constant",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(
				metaLabels(map[string]string{"owner": "foo"}), regexRewrite("", "the-copy"))},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "a", map[string]string{"owner": "foo"})},
			want:       []string{"default/a -> abc/the-copy"},
		},
		{
			name:   "two origin objects mapping to one destination are an error",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(
				metaLabels(map[string]string{"owner": "foo"}), regexRewrite("", "the-copy"))},
			kcpObjects: []ctrlruntimeclient.Object{
				configMap("default", "a", map[string]string{"owner": "foo"}),
				configMap("default", "b", map[string]string{"owner": "foo"}),
			},
			wantErr: "map to the same destination abc/the-copy",
		},
		{
			name:   "selector: a rendered label value that is invalid is an error",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(
				metaLabels(map[string]string{"owner": "{{ .RemoteObject.spec.configs }}"}), regexRewrite("", "x"))},
			wantErr: "invalid rendered selector",
		},

		// object.namespace
		{
			name:   "namespace by reference",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byReference("spec.ns")),
			},
			kcpObjects: []ctrlruntimeclient.Object{configMap("team-a", "app-config", nil), configMap("default", "app-config", nil)},
			allowed:    []string{"svc-a"},
			want:       []string{"team-a/app-config -> svc-a/local-config"},
		},
		{
			name:   "namespace by template, origin service",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byTemplate(`{{ if eq .Side "kcp" }}team-a{{ else }}{{ .ClusterName }}-ns{{ end }}`)),
			},
			serviceObjects: []ctrlruntimeclient.Object{configMap("abc-ns", "local-config", nil)},
			allowed:        []string{"{{ .ClusterName }}-ns"},
			want:           []string{"abc-ns/local-config -> team-a/app-config"},
		},
		{
			name:   "namespace by selector lists origin namespaces; .RelatedObject is nil; sorted by namespace",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace: ptr(bySelector(
					metaLabels(map[string]string{"team": "{{ .RemoteObject.metadata.name }}"}),
					templateRewrite(`{{ if .RelatedObject }}unexpected{{ else }}{{ .ClusterName }}-{{ .Value }}{{ end }}`))),
			},
			kcpObjects: []ctrlruntimeclient.Object{
				namespace("ns-b", map[string]string{"team": "foo"}),
				namespace("ns-a", map[string]string{"team": "foo"}),
				namespace("ns-c", map[string]string{"team": "bar"}),
				configMap("ns-b", "app-config", nil),
				configMap("ns-a", "app-config", nil),
				configMap("ns-c", "app-config", nil),
			},
			allowed: []string{"{{ .ClusterName }}-ns-a", "{{ .ClusterName }}-ns-b"},
			want:    []string{"ns-a/app-config -> abc-ns-a/local-config", "ns-b/app-config -> abc-ns-b/local-config"},
		},
		{
			name:   "namespace by selector with a regex rewrite",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace: ptr(bySelector(
					metaLabels(map[string]string{"team": "foo"}), regexRewrite("^svc-(.*)$", "kcp-$1"))),
			},
			serviceObjects: []ctrlruntimeclient.Object{
				namespace("svc-a", map[string]string{"team": "foo"}),
				configMap("svc-a", "local-config", nil),
			},
			allowed: []string{"svc-a"},
			want:    []string{"svc-a/local-config -> kcp-a/app-config"},
		},
		{
			name:       "a cluster-scoped kcp primary needs object.namespace",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			kcpPrimary: []func(*unstructured.Unstructured){clusterScoped},
			wantErr:    `related "rel": namespace: object.namespace is required because the primary is cluster-scoped`,
		},
		{
			name:           "a cluster-scoped local primary needs object.namespace",
			origin:         "kcp",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			servicePrimary: []func(*unstructured.Unstructured){clusterScoped},
			wantErr:        "object.namespace is required because the primary is cluster-scoped",
		},
		{
			name:   "cluster-scoped primaries with object.namespace",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byReference("spec.ns")),
			},
			kcpPrimary:     []func(*unstructured.Unstructured){clusterScoped},
			servicePrimary: []func(*unstructured.Unstructured){clusterScoped},
			kcpObjects:     []ctrlruntimeclient.Object{configMap("team-a", "app-config", nil)},
			allowed:        []string{"svc-a"},
			want:           []string{"team-a/app-config -> svc-a/local-config"},
		},
		{
			name:   "a service-side namespace the consumer names is refused unless allowed (origin service)",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byReference("spec.ns")),
			},
			serviceObjects: []ctrlruntimeclient.Object{configMap("svc-a", "local-config", nil)},
			allowed:        []string{"{{ .Object.spec.ns }}", "other"},
			wantErr:        `namespace "svc-a" of the service cluster is neither the workspace's own, nor fixed by the PublishedResource, nor allowed by allowedNamespaces`,
		},
		{
			name:   "a service-side namespace the consumer names is refused unless allowed (origin kcp: no write there)",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byReference("spec.ns")),
			},
			kcpObjects: []ctrlruntimeclient.Object{configMap("team-a", "app-config", nil)},
			wantErr:    `namespace "svc-a" of the service cluster is neither the workspace's own`,
		},
		{
			name:           "shared copy namespace: another workspace's object there is not read (origin service)",
			origin:         "service",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			servicePrimary: []func(*unstructured.Unstructured){func(u *unstructured.Unstructured) { u.SetNamespace("shared") }},
			serviceObjects: []ctrlruntimeclient.Object{configMap("shared", "local-config", nil)},
			wantErr:        `namespace "shared" of the service cluster is neither the workspace's own`,
		},
		{
			name:           "a copy namespace that contains the cluster name is the workspace's own (origin service)",
			origin:         "service",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			servicePrimary: []func(*unstructured.Unstructured){func(u *unstructured.Unstructured) { u.SetNamespace("abc-default") }},
			serviceObjects: []ctrlruntimeclient.Object{configMap("abc-default", "local-config", nil)},
			want:           []string{"abc-default/local-config -> default/app-config"},
		},
		{
			name:           "shared copy namespace: an entry that names nothing reads nothing and is no error",
			origin:         "service",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.missing")},
			servicePrimary: []func(*unstructured.Unstructured){func(u *unstructured.Unstructured) { u.SetNamespace("shared") }},
		},
		{
			name:   "shared copy namespace: a selector does not list there (origin service)",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(metaLabels(map[string]string{"app": "x"}),
				templateRewrite("{{ .Value }}"))},
			servicePrimary: []func(*unstructured.Unstructured){func(u *unstructured.Unstructured) { u.SetNamespace("shared") }},
			serviceObjects: []ctrlruntimeclient.Object{configMap("shared", "other-tenant", map[string]string{"app": "x"})},
			wantErr:        `namespace "shared" of the service cluster is neither the workspace's own`,
		},
		{
			name:           "shared copy namespace the owner allowed (origin service)",
			origin:         "service",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			servicePrimary: []func(*unstructured.Unstructured){func(u *unstructured.Unstructured) { u.SetNamespace("shared") }},
			serviceObjects: []ctrlruntimeclient.Object{configMap("shared", "local-config", nil)},
			allowed:        []string{"shared"},
			want:           []string{"shared/local-config -> default/app-config"},
		},
		{
			name:           "shared copy namespace: copies are still written there (origin kcp)",
			origin:         "kcp",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			servicePrimary: []func(*unstructured.Unstructured){func(u *unstructured.Unstructured) { u.SetNamespace("shared") }},
			kcpObjects:     []ctrlruntimeclient.Object{configMap("default", "app-config", nil)},
			want:           []string{"default/app-config -> shared/local-config"},
		},
		{
			name:   "a namespace fixed on the service side by .Side is the owner's choice (origin service)",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byTemplate(`{{ if eq .Side "kcp" }}{{ .Object.metadata.namespace }}{{ else }}credentials{{ end }}`)),
			},
			serviceObjects: []ctrlruntimeclient.Object{configMap("credentials", "local-config", nil)},
			want:           []string{"credentials/local-config -> default/app-config"},
		},
		{
			name:   "a namespace fixed on the service side by .Side is the owner's choice (origin kcp)",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byTemplate(`{{ if ne .Side "service" }}{{ .Object.metadata.namespace }}{{ else }}vault-input{{ end }}`)),
			},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "app-config", nil)},
			want:       []string{"default/app-config -> vault-input/local-config"},
		},
		{
			name:   "a service-side namespace from the consumer's object behind .Side is refused",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byTemplate(`{{ if eq .Side "service" }}{{ .Object.spec.ns }}{{ else }}default{{ end }}`)),
			},
			serviceObjects: []ctrlruntimeclient.Object{configMap("svc-a", "local-config", nil)},
			wantErr:        `namespace "svc-a" of the service cluster is neither the workspace's own`,
		},
		{
			name:   "a plain-text object.namespace is the owner's choice",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byTemplate("shared")),
			},
			serviceObjects: []ctrlruntimeclient.Object{configMap("shared", "local-config", nil)},
			want:           []string{"shared/local-config -> shared/app-config"},
		},
		{
			name:   "a reference whose regex has no pattern gives a constant: the owner's choice",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace: ptr(syncagentv1alpha1.RelatedResourceObjectSpec{Reference: &syncagentv1alpha1.RelatedResourceObjectReference{
					Path: "metadata.name", Regex: &syncagentv1alpha1.RegularExpression{Replacement: "shared"},
				}}),
			},
			serviceObjects: []ctrlruntimeclient.Object{configMap("shared", "local-config", nil)},
			want:           []string{"shared/local-config -> shared/app-config"},
		},
		{
			name:   "object.namespace that resolves to the local copy's namespace needs no allow-list",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byTemplate("{{ .Object.metadata.namespace }}")),
			},
			serviceObjects: []ctrlruntimeclient.Object{configMap("abc", "local-config", nil)},
			want:           []string{"abc/local-config -> default/app-config"},
		},
		{
			name:        "cluster-scoped related types ignore namespaces, also of cluster-scoped primaries",
			origin:      "kcp",
			object:      syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			kcpType:     &clusterRoleType,
			serviceType: &clusterRoleType,
			kcpPrimary:  []func(*unstructured.Unstructured){clusterScoped},
			kcpObjects:  []ctrlruntimeclient.Object{clusterRole("app-config")},
			want:        []string{"/app-config -> /local-config"},
		},
		{
			name:   "cluster-scoped related types ignore object.namespace",
			origin: "service",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byReference("spec.ns")),
			},
			kcpType:        &clusterRoleType,
			serviceType:    &clusterRoleType,
			serviceObjects: []ctrlruntimeclient.Object{clusterRole("local-config")},
			want:           []string{"/local-config -> /app-config"},
		},
		{
			name:       "cluster-scoped origin type, namespaced destination type",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			kcpType:    &clusterRoleType,
			kcpObjects: []ctrlruntimeclient.Object{clusterRole("app-config")},
			want:       []string{"/app-config -> abc/local-config"},
		},

		// validation
		{
			name:       "an origin name with a slash is refused",
			origin:     "kcp",
			object:     syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byTemplate(`{{ if eq .Side "kcp" }}a/b{{ else }}ok{{ end }}`)},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "ok", nil)},
			wantErr:    `related "rel": origin name: "a/b" is not a valid object name`,
		},
		{
			name:    "a destination name .. is refused",
			origin:  "kcp",
			object:  syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byTemplate(`{{ if eq .Side "kcp" }}ok{{ else }}..{{ end }}`)},
			wantErr: `related "rel": destination name: ".." is not a valid object name`,
		},
		{
			name:           "a name longer than 253 characters is refused",
			origin:         "service",
			object:         syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")},
			kcpPrimary:     []func(*unstructured.Unstructured){setSpec("configName", long)},
			serviceObjects: []ctrlruntimeclient.Object{configMap("abc", "local-config", nil)},
			wantErr:        "destination name: \"" + long + "\" is not a valid object name",
		},
		{
			name:   "a selected object's rewritten name with a slash is refused",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: bySelector(
				metaLabels(map[string]string{"owner": "foo"}), templateRewrite("../{{ .Value }}"))},
			kcpObjects: []ctrlruntimeclient.Object{configMap("default", "a", map[string]string{"owner": "foo"})},
			wantErr:    `destination name: "../a" is not a valid object name`,
		},
		{
			name:   "an invalid origin namespace is refused",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byReference("spec.ns")),
			},
			kcpPrimary: []func(*unstructured.Unstructured){setSpec("ns", "../kube-system")},
			wantErr:    `related "rel": namespace: "../kube-system" is not a valid namespace`,
		},
		{
			name:   "an invalid destination namespace is refused",
			origin: "kcp",
			object: syncagentv1alpha1.RelatedResourceObject{
				RelatedResourceObjectSpec: byReference("spec.configName"),
				Namespace:                 ptr(byTemplate(`{{ if eq .Side "kcp" }}team-a{{ else }}Team_A{{ end }}`)),
			},
			wantErr: `"Team_A" is not a valid namespace`,
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			kcpType, serviceType := configMapType, configMapType
			if tc.kcpType != nil {
				kcpType = *tc.kcpType
			}
			if tc.serviceType != nil {
				serviceType = *tc.serviceType
			}
			rel := &syncagentv1alpha1.RelatedResourceSpec{Identifier: "rel", Origin: tc.origin, Object: tc.object, AllowedNamespaces: tc.allowed}
			e, err := Compile(rel, kcpType, serviceType)
			if err != nil {
				t.Fatal(err)
			}
			p := Primaries{Kcp: primary(SideKcp), Service: primary(SideService), ClusterName: "abc", ClusterPath: "root:org"}
			for _, m := range tc.kcpPrimary {
				m(p.Kcp)
			}
			for _, m := range tc.servicePrimary {
				m(p.Service)
			}
			r := Readers{Kcp: newReader(t, tc.kcpObjects...), Service: newReader(t, tc.serviceObjects...)}

			pairs, err := e.Resolve(t.Context(), p, r)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pairStrings(pairs)); diff != "" {
				t.Errorf("pairs (-want +got):\n%s", diff)
			}
			for _, pair := range pairs {
				if gvk := pair.Origin.GroupVersionKind(); gvk != e.OriginType().GVK {
					t.Errorf("origin %s has GVK %v, want %v", pair.Origin.GetName(), gvk, e.OriginType().GVK)
				}
				if pair.Origin.GetUID() == "" && pair.Origin.GetResourceVersion() == "" {
					t.Errorf("origin %s is not the object read from the origin side: %v", pair.Origin.GetName(), pair.Origin.Object)
				}
			}
		})
	}
}

func TestEntry_Resolve_needsBothPrimaries(t *testing.T) {
	e, err := Compile(&syncagentv1alpha1.RelatedResourceSpec{Identifier: "rel", Origin: "kcp",
		Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byReference("spec.configName")}}, configMapType, configMapType)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Resolve(t.Context(), Primaries{Kcp: primary(SideKcp)}, Readers{}); err == nil {
		t.Error("Resolve without the local copy succeeded")
	}
}

func TestValidName(t *testing.T) {
	testcases := []struct {
		name    string
		wantErr bool
	}{
		{name: "plain"},
		{name: "with.dots-and:colons"},
		{name: strings.Repeat("a", 253)},
		{name: strings.Repeat("a", 254), wantErr: true},
		{name: "", wantErr: true},
		{name: "a/b", wantErr: true},
		{name: "..", wantErr: true},
		{name: ".", wantErr: true},
		{name: "a%2fb", wantErr: true},
	}
	for _, tc := range testcases {
		if err := validName(tc.name); (err != nil) != tc.wantErr {
			t.Errorf("validName(%q) = %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
}

func TestValidNamespace(t *testing.T) {
	testcases := []struct {
		name    string
		wantErr bool
	}{
		{name: "team-a"},
		{name: strings.Repeat("a", 63)},
		{name: strings.Repeat("a", 64), wantErr: true},
		{name: "", wantErr: true},
		{name: "Team_A", wantErr: true},
		{name: "a.b", wantErr: true},
		{name: "../x", wantErr: true},
	}
	for _, tc := range testcases {
		if err := validNamespace(tc.name); (err != nil) != tc.wantErr {
			t.Errorf("validNamespace(%q) = %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
}

// TestEntry_Resolve_concurrentPrimaries resolves two primaries with
// templated selectors at the same time through one Entry (contract §7 #2):
// each must get its own objects, and neither the Entry nor the spec it was
// compiled from may change. Run with -race.
func TestEntry_Resolve_concurrentPrimaries(t *testing.T) {
	rel := &syncagentv1alpha1.RelatedResourceSpec{
		Identifier: "rel", Origin: "kcp",
		Object: syncagentv1alpha1.RelatedResourceObject{
			RelatedResourceObjectSpec: bySelector(metav1.LabelSelector{
				MatchLabels: map[string]string{
					"owner":                      "{{ .RemoteObject.metadata.name }}",
					"{{ .ClusterName }}/cluster": "yes",
				},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"staging", "prod"}}},
			}, templateRewrite("{{ .RemoteObject.metadata.name }}-{{ .Value }}")),
			Namespace: ptr(byTemplate(`{{ if eq .Side "kcp" }}{{ .Object.metadata.namespace }}{{ else }}{{ .ClusterName }}{{ end }}`)),
		},
	}
	specBefore := rel.DeepCopy()
	e, err := Compile(rel, configMapType, configMapType)
	if err != nil {
		t.Fatal(err)
	}
	expressionsBefore := append([]metav1.LabelSelectorRequirement(nil), e.names.selector.expressions...)
	for i := range expressionsBefore {
		expressionsBefore[i] = *expressionsBefore[i].DeepCopy()
	}

	labels := func(owner string) map[string]string {
		return map[string]string{"owner": owner, "abc/cluster": "yes", "env": "prod"}
	}
	r := Readers{
		Kcp: newReader(t,
			configMap("default", "cm-foo", labels("foo")),
			configMap("default", "cm-bar", labels("bar")),
			configMap("default", "cm-both", map[string]string{"owner": "foo", "env": "dev"}),
		),
		Service: newReader(t),
	}
	primaries := func(name string) Primaries {
		p := Primaries{Kcp: primary(SideKcp), Service: primary(SideService), ClusterName: "abc"}
		p.Kcp.SetName(name)
		p.Service.SetName("local-" + name)
		return p
	}
	want := map[string][]string{
		"foo": {"default/cm-foo -> abc/foo-cm-foo"},
		"bar": {"default/cm-bar -> abc/bar-cm-bar"},
	}

	const rounds = 50
	var wg sync.WaitGroup
	errs := make(chan string, 2*rounds)
	for _, name := range []string{"foo", "bar"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				pairs, err := e.Resolve(t.Context(), primaries(name), r)
				if err != nil {
					errs <- fmt.Sprintf("%s: %v", name, err)
					return
				}
				if diff := cmp.Diff(want[name], pairStrings(pairs)); diff != "" {
					errs <- fmt.Sprintf("%s: pairs (-want +got):\n%s", name, diff)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}

	if diff := cmp.Diff(specBefore, rel); diff != "" {
		t.Errorf("the spec changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(expressionsBefore, e.names.selector.expressions); diff != "" {
		t.Errorf("the compiled selector expressions changed (-before +after):\n%s", diff)
	}
	if len(e.names.selector.labelKeys) != 2 || len(e.names.selector.labelValues) != 2 {
		t.Errorf("the compiled selector has %d keys and %d values, want 2 each", len(e.names.selector.labelKeys), len(e.names.selector.labelValues))
	}
}

func ptr[T any](v T) *T { return &v }
