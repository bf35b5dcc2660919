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
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// syncedResources reads the kcp resources recorded on a PublishedResource.
func (r *reconciler) syncedResources(pr *syncagentv1alpha1.PublishedResource) []schema.GroupResource {
	var out []schema.GroupResource
	for _, s := range strings.Split(pr.Annotations[r.syncedResourcesKey()], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, schema.ParseGroupResource(s))
		}
	}
	return out
}

// setSyncedResources records the kcp resources on the PublishedResource,
// writing only if that changes it; locked, the write fails with a conflict
// if the PublishedResource changed since pr was read.
func (r *reconciler) setSyncedResources(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, grs []schema.GroupResource, locked bool) error {
	names := make([]string, 0, len(grs))
	for _, gr := range grs {
		names = append(names, gr.String())
	}
	slices.Sort(names)
	names = slices.Compact(names)
	value := strings.Join(names, ",")
	if pr.Annotations[r.syncedResourcesKey()] == value {
		return nil
	}
	var v any = value
	if value == "" {
		v = nil
	}
	meta := map[string]any{"annotations": map[string]any{r.syncedResourcesKey(): v}}
	if locked {
		meta["resourceVersion"] = pr.ResourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	err = r.client.Patch(ctx, pr, ctrlruntimeclient.RawPatch(types.MergePatchType, patch))
	if apierrors.IsForbidden(err) {
		// As with the finalizer: reported once, syncing goes on; an
		// earlier projection's objects are then released only while its
		// controller stops in this process.
		if r.warnOnce(pr.Name) {
			r.log.Error(err, "The agent may not patch PublishedResources", "publishedresource", pr.Name)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to record the synced resources of PublishedResource %s: %w", pr.Name, err)
	}
	return nil
}
