package discovery

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// TypeInfo describes a served resource.
type TypeInfo struct {
	GVK        schema.GroupVersionKind
	Namespaced bool
	// HasStatus is set when the resource has a status subresource.
	HasStatus bool
}

// ResourceInfo looks gvr up in the resource list of its group version.
func ResourceInfo(dc discovery.DiscoveryInterface, gvr schema.GroupVersionResource) (TypeInfo, error) {
	list, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return TypeInfo{}, fmt.Errorf("%s is not served", gvr.GroupVersion())
	}
	if err != nil {
		return TypeInfo{}, fmt.Errorf("failed to discover %s: %w", gvr.GroupVersion(), err)
	}
	var info TypeInfo
	found := false
	for _, res := range list.APIResources {
		switch res.Name {
		case gvr.Resource:
			found = true
			info.GVK = gvr.GroupVersion().WithKind(res.Kind)
			info.Namespaced = res.Namespaced
		case gvr.Resource + "/status":
			info.HasStatus = true
		}
	}
	if !found {
		return TypeInfo{}, fmt.Errorf("%s does not serve %s", gvr.GroupVersion(), gvr.Resource)
	}
	return info, nil
}

// ResourceInfo looks gvr up on the service cluster (cached discovery; a
// miss drops the cache at most every missInvalidateInterval, so a type
// that appears later is found).
func (r *Resolver) ResourceInfo(gvr schema.GroupVersionResource) (TypeInfo, error) {
	r.fresh()
	info, err := ResourceInfo(r.disco, gvr)
	if err != nil && r.invalidateOnMiss() {
		info, err = ResourceInfo(r.disco, gvr)
	}
	return info, err
}
