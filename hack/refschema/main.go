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

// Command refschema computes, against a live kube-apiserver, the CRDs that
// the reference agent builds for built-in types (OpenAPI v2 models converted
// with kcp's crdpuller, names, versions and subresources from discovery;
// see referenceCRD for the one place it departs from v0.7.0) and writes them
// with the inputs they came from:
//
//	discovery.json    the discovery lists of the kinds' groups, as client-go returns them
//	openapi-v2.json   the OpenAPI v2 document, cut down to the kinds' definitions
//	<Kind>.<group>.json  the reference's CRD of each kind
//	names.json        the APIResourceSchema name of each kind projected to --projection-group
//
// internal/discovery's golden tests read these files; the e2e suite runs
// this program against its service cluster and compares.
package main

import (
	"context"
	"crypto/sha1" //nolint:gosec // the schema name format is SHA-1 (contract §3.3).
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/kcp-dev/kcp/pkg/crdpuller"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kube-openapi/pkg/util/proto"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the kube-apiserver")
	out := flag.String("out", "", "output directory")
	kinds := flag.String("kinds", "ConfigMap,Secret,Service,rbac.authorization.k8s.io/Role,apps/Deployment,autoscaling/HorizontalPodAutoscaler", "comma-separated kinds: Kind or group/Kind")
	group := flag.String("projection-group", "golden.example.com", "group the kinds are projected to for names.json")
	flag.Parse()
	if err := run(*kubeconfig, *out, strings.Split(*kinds, ","), *group); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// discoverySnapshot is what discovery.json holds.
type discoverySnapshot struct {
	GroupsAndResources []*metav1.APIResourceList `json:"groupsAndResources"`
	PreferredResources []*metav1.APIResourceList `json:"preferredResources"`
}

func run(kubeconfig, out string, kindArgs []string, projectionGroup string) error {
	if kubeconfig == "" || out == "" {
		return errors.New("--kubeconfig and --out are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	var gks []schema.GroupKind
	groups := sets.New[string]()
	for _, k := range kindArgs {
		gk := schema.GroupKind{Kind: k}
		if i := strings.LastIndex(k, "/"); i >= 0 {
			gk = schema.GroupKind{Group: k[:i], Kind: k[i+1:]}
		}
		gks = append(gks, gk)
		groups.Insert(gk.Group)
	}

	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		return err
	}
	preferred, err := dc.ServerPreferredResources()
	if err != nil {
		return err
	}
	// Each resource is in one preferred list, so their order does not
	// matter; client-go builds them from maps, so sort them for stable files.
	preferred = ofGroups(preferred, groups)
	for _, l := range preferred {
		sort.Slice(l.APIResources, func(i, j int) bool { return l.APIResources[i].Name < l.APIResources[j].Name })
	}
	snapshot := discoverySnapshot{GroupsAndResources: ofGroups(lists, groups), PreferredResources: preferred}

	raw, err := dc.RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").Do(context.Background()).Raw()
	if err != nil {
		return fmt.Errorf("failed to get /openapi/v2: %w", err)
	}
	pruned, err := prune(raw, gks)
	if err != nil {
		return err
	}
	doc, err := openapi_v2.ParseDocument(pruned)
	if err != nil {
		return err
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		return err
	}
	byGVK, err := openapi.GetModelsByGKV(models)
	if err != nil {
		return err
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(out, "discovery.json"), snapshot); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "openapi-v2.json"), pruned, 0o644); err != nil {
		return err
	}
	names := map[string]string{}
	for _, gk := range gks {
		crd, err := referenceCRD(gk, snapshot, byGVK)
		if err != nil {
			return fmt.Errorf("%s: %w", gk, err)
		}
		id := gk.Kind + "." + coreName(gk.Group)
		if err := writeJSON(filepath.Join(out, id+".json"), crd); err != nil {
			return err
		}
		if names[id], err = schemaName(crd.Spec, projectionGroup); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(out, "names.json"), names)
}

func coreName(group string) string {
	if group == "" {
		return "core"
	}
	return group
}

func ofGroups(lists []*metav1.APIResourceList, groups sets.Set[string]) []*metav1.APIResourceList {
	var out []*metav1.APIResourceList
	for _, l := range lists {
		if gv, err := schema.ParseGroupVersion(l.GroupVersion); err == nil && groups.Has(gv.Group) {
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GroupVersion < out[j].GroupVersion })
	return out
}

// prune keeps the definitions of the kinds (every version) and everything
// they reference, and no paths.
func prune(raw []byte, gks []schema.GroupKind) ([]byte, error) {
	var doc struct {
		Swagger     string                     `json:"swagger"`
		Info        json.RawMessage            `json:"info"`
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	keep := map[string]json.RawMessage{}
	var visit func(name string) error
	visit = func(name string) error {
		if _, ok := keep[name]; ok {
			return nil
		}
		def, ok := doc.Definitions[name]
		if !ok {
			return fmt.Errorf("definition %s is referenced but missing", name)
		}
		keep[name] = def
		for _, ref := range refs(def) {
			if err := visit(ref); err != nil {
				return err
			}
		}
		return nil
	}
	for name, def := range doc.Definitions {
		var d struct {
			GVKs []struct{ Group, Kind string } `json:"x-kubernetes-group-version-kind"`
		}
		if err := json.Unmarshal(def, &d); err != nil {
			return nil, err
		}
		for _, g := range d.GVKs {
			if g.Group == "core" {
				g.Group = ""
			}
			if slices.Contains(gks, schema.GroupKind{Group: g.Group, Kind: g.Kind}) {
				if err := visit(name); err != nil {
					return nil, err
				}
			}
		}
	}
	return json.MarshalIndent(map[string]any{"swagger": doc.Swagger, "info": doc.Info, "paths": map[string]any{}, "definitions": keep}, "", " ")
}

// refs returns the names of the definitions a JSON schema references.
func refs(def json.RawMessage) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if r, ok := t["$ref"].(string); ok {
				out = append(out, strings.TrimPrefix(r, "#/definitions/"))
			}
			for _, c := range t {
				walk(c)
			}
		case []any:
			for _, c := range t {
				walk(c)
			}
		}
	}
	var v any
	_ = json.Unmarshal(def, &v)
	walk(v)
	return out
}

// referenceCRD builds a built-in type's CRD as the reference agent does
// (its discovery client's OpenAPI path), with subresources keyed by the
// version of the list that names them (the reference's releases up to
// v0.7.0 keyed them by the subresource's own, empty, version and so lost a
// built-in type's status; its issue #130). It repeats what
// internal/discovery's builtinCRD does on purpose: the golden files are a
// second, independent reading of the reference, with kcp's own converter.
func referenceCRD(gk schema.GroupKind, snap discoverySnapshot, byGVK openapi.ModelsByGKV) (*apiextensionsv1.CustomResourceDefinition, error) {
	var resource *metav1.APIResource
	versions := sets.New[string]()
	subresources := map[string]sets.Set[string]{}
	for _, list := range snap.GroupsAndResources {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		if gv.Group != gk.Group {
			continue
		}
		for i := range list.APIResources {
			res := list.APIResources[i]
			if res.Kind != gk.Kind {
				continue
			}
			if _, sub, ok := strings.Cut(res.Name, "/"); ok {
				if subresources[gv.Version] == nil {
					subresources[gv.Version] = sets.New[string]()
				}
				subresources[gv.Version].Insert(sub)
			} else {
				resource = &res
			}
			versions.Insert(gv.Version)
		}
	}
	if resource == nil {
		return nil, fmt.Errorf("%v is not served", gk)
	}
	preferred := ""
	for _, list := range snap.PreferredResources {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		if gv.Group != gk.Group || preferred != "" {
			continue
		}
		for _, res := range list.APIResources {
			if res.Name == resource.Name {
				preferred = gv.Version
				break
			}
		}
	}
	if preferred == "" {
		return nil, errors.New("no preferred version")
	}

	scope := apiextensionsv1.ClusterScoped
	if resource.Namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: resource.Name + "." + coreName(gk.Group)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gk.Group,
			Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: resource.Name, Kind: resource.Kind, Categories: resource.Categories,
				ShortNames: resource.ShortNames, Singular: resource.SingularName,
			},
		},
	}
	sorted := versions.UnsortedList()
	slices.SortFunc(sorted, version.CompareKubeAwareVersionStrings)
	for _, v := range sorted {
		model := byGVK[gk.WithVersion(v)]
		if model == nil {
			return nil, fmt.Errorf("no model for %s", gk.WithVersion(v))
		}
		props := apiextensionsv1.JSONSchemaProps{}
		if errs := crdpuller.Convert(model, &props); len(errs) > 0 {
			return nil, utilerrors.NewAggregate(errs)
		}
		sub := &apiextensionsv1.CustomResourceSubresources{}
		if subresources[v].Has("status") {
			sub.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
		}
		if subresources[v].Has("scale") {
			sub.Scale = &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}
		}
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == preferred,
			Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &props},
			Subresources: sub,
		})
	}
	apiextensionsv1.SetDefaults_CustomResourceDefinition(crd)
	if apihelpers.IsProtectedCommunityGroup(gk.Group) {
		crd.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "https://github.com/kcp-dev/kubernetes/pull/4"}
	}
	return crd, nil
}

// schemaName is the APIResourceSchema name of spec projected to group
// (contract §3.3): "v" + 8 hex of the SHA-1 of the encoded spec without
// conversion + "." + plural + "." + group.
func schemaName(spec apiextensionsv1.CustomResourceDefinitionSpec, group string) (string, error) {
	spec = *spec.DeepCopy()
	spec.Group = group
	spec.Conversion = nil
	h := sha1.New() //nolint:gosec // see import.
	if err := json.NewEncoder(h).Encode(spec); err != nil {
		return "", err
	}
	return "v" + hex.EncodeToString(h.Sum(nil))[:8] + "." + spec.Names.Plural + "." + group, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
