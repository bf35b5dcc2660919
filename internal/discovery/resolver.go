// Package discovery finds the source type of a PublishedResource on the
// service cluster and returns it as a CRD: the real CRD when one exists,
// otherwise one built from discovery and the OpenAPI v3 document (built-in
// and aggregated types). Discovery results are cached; Invalidate refreshes
// them (the apiresourceschema controller calls it on CRD events).
package discovery

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/projection"
)

// AnnotationAPIApproved is the annotation Kubernetes requires on CRDs of
// protected groups.
const AnnotationAPIApproved = "api-approved.kubernetes.io"

// NotFoundError means the service cluster does not serve the group/kind.
type NotFoundError struct{ GK schema.GroupKind }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("the service cluster does not serve %s", e.GK)
}

// Resolver resolves group/kinds to source CRDs.
type Resolver struct {
	mu    sync.Mutex
	disco discovery.CachedDiscoveryInterface
	crds  ctrlruntimeclient.Reader
}

// NewResolver returns a Resolver with a memory-cached discovery client for
// cfg; CRDs are read through crds (normally the manager's cache).
func NewResolver(cfg *rest.Config, crds ctrlruntimeclient.Reader) (*Resolver, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create discovery client: %w", err)
	}
	return &Resolver{disco: memory.NewMemCacheClient(dc), crds: crds}, nil
}

// Invalidate drops the cached discovery information.
func (r *Resolver) Invalidate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disco.Invalidate()
}

// servedVersion is one group version that serves the kind.
type servedVersion struct {
	version   string
	resource  metav1.APIResource
	hasStatus bool
	hasScale  bool
}

// Resolve returns the source CRD of gk. The result is owned by the caller.
// It returns a *NotFoundError when the kind is not served.
func (r *Resolver) Resolve(ctx context.Context, gk schema.GroupKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	r.mu.Lock()
	defer r.mu.Unlock()

	served, preferred, err := r.lookup(gk)
	if err != nil {
		return nil, err
	}
	plural := served[0].resource.Name

	crdGroup := gk.Group
	if crdGroup == "" {
		crdGroup = "core"
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err = r.crds.Get(ctx, types.NamespacedName{Name: plural + "." + crdGroup}, crd)
	switch {
	case err == nil:
		return fromCRD(crd), nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get CRD %s.%s: %w", plural, crdGroup, err)
	}
	return r.fromOpenAPI(gk, served, preferred)
}

// lookup finds every group version that serves gk, using the GroupVersion
// of each resource list (not APIResource.Version, which aggregated APIs may
// leave empty).
func (r *Resolver) lookup(gk schema.GroupKind) ([]servedVersion, string, error) {
	groups, lists, err := r.disco.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, "", fmt.Errorf("failed to discover the service cluster's APIs: %w", err)
	}
	// Partial failures (an unavailable aggregated API) only matter if they
	// hide our kind; then the kind is reported as not found.

	var served []servedVersion
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || gv.Group != gk.Group {
			continue
		}
		for _, res := range list.APIResources {
			if res.Kind != gk.Kind || strings.Contains(res.Name, "/") {
				continue
			}
			sv := servedVersion{version: gv.Version, resource: res}
			for _, sub := range list.APIResources {
				switch sub.Name {
				case res.Name + "/status":
					sv.hasStatus = true
				case res.Name + "/scale":
					sv.hasScale = true
				}
			}
			served = append(served, sv)
		}
	}
	if len(served) == 0 {
		r.disco.Invalidate() // it may appear soon; do not keep a stale answer
		return nil, "", &NotFoundError{GK: gk}
	}
	slices.SortFunc(served, func(a, b servedVersion) int { return version.CompareKubeAwareVersionStrings(a.version, b.version) })

	preferred := served[len(served)-1].version
	for _, g := range groups {
		if g.Name == gk.Group && g.PreferredVersion.Version != "" {
			for _, sv := range served {
				if sv.version == g.PreferredVersion.Version {
					preferred = sv.version
				}
			}
		}
	}
	return served, preferred, nil
}

// fromCRD keeps what the schema depends on: name, the api-approved
// annotation, generation and the spec (with conversion None; the
// conversion strategy is not published). Versions without a schema of a
// non-structural CRD get one that preserves unknown fields.
func fromCRD(in *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Generation: in.Generation},
		Spec:       *in.Spec.DeepCopy(),
	}
	if v, ok := in.Annotations[AnnotationAPIApproved]; ok {
		out.Annotations = map[string]string{AnnotationAPIApproved: v}
	}
	nonStructural := false
	for _, c := range in.Status.Conditions {
		if c.Type == apiextensionsv1.NonStructuralSchema && c.Status == apiextensionsv1.ConditionTrue {
			nonStructural = true
		}
	}
	if nonStructural {
		for i, v := range out.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				out.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()},
				}
			}
		}
	}
	out.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	return out
}

// fromOpenAPI builds a CRD for a built-in or aggregated type: names and
// scope from discovery, every served version (sorted in Kubernetes version
// order, the preferred version as storage) with its schema from the OpenAPI
// v3 document, status and scale subresources from discovery, and the API
// server's CRD defaults applied.
func (r *Resolver) fromOpenAPI(gk schema.GroupKind, served []servedVersion, preferred string) (*apiextensionsv1.CustomResourceDefinition, error) {
	paths, err := r.disco.OpenAPIV3().Paths()
	if err != nil {
		return nil, fmt.Errorf("failed to list OpenAPI v3 paths: %w", err)
	}

	res := served[0].resource
	singular := res.SingularName
	if singular == "" {
		singular = strings.ToLower(gk.Kind)
	}
	scope := apiextensionsv1.ClusterScoped
	if res.Namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	crdGroup := gk.Group
	if crdGroup == "" {
		crdGroup = "core"
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: res.Name + "." + crdGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gk.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: res.Name, Singular: singular, Kind: gk.Kind, ListKind: gk.Kind + "List",
				ShortNames: res.ShortNames, Categories: res.Categories,
			},
			Scope:      scope,
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
		},
	}
	if projection.IsProtectedGroup(gk.Group) {
		crd.Annotations = map[string]string{AnnotationAPIApproved: "https://github.com/kcp-dev/kubernetes/pull/4"}
	}

	for _, sv := range served {
		path := "apis/" + gk.Group + "/" + sv.version
		if gk.Group == "" {
			path = "api/" + sv.version
		}
		gvDoc, ok := paths[path]
		if !ok {
			return nil, fmt.Errorf("the service cluster publishes no OpenAPI v3 document for %s", path)
		}
		doc, err := gvDoc.Schema("application/json")
		if err != nil {
			return nil, fmt.Errorf("failed to fetch OpenAPI v3 document %s: %w", path, err)
		}
		props, err := schemaForKind(doc, gk.WithVersion(sv.version))
		if err != nil {
			return nil, err
		}
		v := apiextensionsv1.CustomResourceDefinitionVersion{
			Name:    sv.version,
			Served:  true,
			Storage: sv.version == preferred,
			Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
		}
		if sv.hasStatus || sv.hasScale {
			v.Subresources = &apiextensionsv1.CustomResourceSubresources{}
			if sv.hasStatus {
				v.Subresources.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
			}
			if sv.hasScale {
				v.Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}
			}
		}
		crd.Spec.Versions = append(crd.Spec.Versions, v)
	}

	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	return crd, nil
}
