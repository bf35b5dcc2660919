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

package framework

import (
	"context"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpcorev1alpha1 "github.com/kcp-dev/kcp/sdk/apis/core/v1alpha1"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelShard sets the region label of a shard (kcp's root workspace), by
// which the Partitions of CreatePartitions select shards.
func LabelShard(t T, k *Kcp, shard, region string) {
	t.Helper()
	Must(t, SetShardRegion(t.Context(), k, shard, region), "label shard %s", shard)
}

// SetShardRegion is LabelShard for callers that handle the error (a
// goroutine of a test).
func SetShardRegion(ctx context.Context, k *Kcp, shard, region string) error {
	root, err := k.AdminClient("root")
	if err != nil {
		return err
	}
	s := &kcpcorev1alpha1.Shard{}
	if err := root.Get(ctx, types.NamespacedName{Name: shard}, s); err != nil {
		return err
	}
	patch := ctrlruntimeclient.MergeFrom(s.DeepCopy())
	// Added to the shard's labels: workspaces are placed by its name label.
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels["region"] = region
	return root.Patch(ctx, s, patch)
}

// CreatePartitions creates in org, for each region, a Partition selecting
// the shards labelled with it and an endpoint slice of the export
// "<export>-<region>" naming that Partition, and lets the agent's user
// read the slices. It returns the slices' names.
func CreatePartitions(t T, org *Workspace, export string, regions ...string) []string {
	t.Helper()
	ctx := t.Context()
	var names []string
	for _, region := range regions {
		partition := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "topology.kcp.io/v1alpha1", "kind": "Partition",
			"metadata": map[string]any{"name": region},
			"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"region": region}}},
		}}
		Must(t, org.Client.Create(ctx, partition), "create Partition %s", region)
		slice := &kcpapisv1alpha1.APIExportEndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: export + "-" + region},
			Spec: kcpapisv1alpha1.APIExportEndpointSliceSpec{
				APIExport: kcpapisv1alpha1.ExportBindingReference{Path: org.Path, Name: export},
				Partition: region,
			},
		}
		Must(t, org.Client.Create(ctx, slice), "create endpoint slice %s", slice.Name)
		names = append(names, slice.Name)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "api-syncagent:partitions"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexportendpointslices"}, ResourceNames: names, Verbs: []string{"get", "list", "watch"}}},
	}
	Must(t, org.Client.Create(ctx, role), "create ClusterRole")
	Must(t, org.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: AgentUser}},
	}), "create ClusterRoleBinding")
	return names
}
