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

package syncmanager

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servedResource finds the version (the group's preferred one first) and
// kind in which an endpoint serves gr.
func (r *reconciler) servedResource(url string, gr schema.GroupResource) (schema.GroupVersionKind, bool, error) {
	dc, err := r.endpointDiscovery(url)
	if err != nil {
		return schema.GroupVersionKind{}, false, err
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		// (An answer whose body client-go cannot read, such as a stopped
		// shard's 403 through the front-proxy, reads "unknown": the
		// reason says which answer it was.)
		return schema.GroupVersionKind{}, false, fmt.Errorf("failed to discover the endpoint's API groups (%s): %w", apierrors.ReasonForError(err), err)
	}
	for _, g := range groups.Groups {
		if g.Name != gr.Group {
			continue
		}
		versions := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
		}
		for _, v := range versions {
			list, err := dc.ServerResourcesForGroupVersion(schema.GroupVersion{Group: gr.Group, Version: v}.String())
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return schema.GroupVersionKind{}, false, err
			}
			for _, res := range list.APIResources {
				if res.Name == gr.Resource {
					return schema.GroupVersionKind{Group: gr.Group, Version: v, Kind: res.Kind}, true, nil
				}
			}
		}
	}
	return schema.GroupVersionKind{}, false, nil
}

// resourceOfKind finds the resource of a kind on an endpoint.
func (r *reconciler) resourceOfKind(url string, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	dc, err := r.endpointDiscovery(url)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return schema.GroupVersionResource{}, false, nil
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	for _, res := range list.APIResources {
		if res.Kind == gvk.Kind && !strings.Contains(res.Name, "/") {
			return gvk.GroupVersion().WithResource(res.Name), true, nil
		}
	}
	return schema.GroupVersionResource{}, false, nil
}
