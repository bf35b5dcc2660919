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
