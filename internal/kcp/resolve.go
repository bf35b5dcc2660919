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

package kcp

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	"github.com/kcp-dev/kcp/sdk/apis/core"
	kcpcorev1alpha1 "github.com/kcp-dev/kcp/sdk/apis/core/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Ref names the kcp object the agent is wired to. Exactly one field is set.
type Ref struct {
	APIExportEndpointSlice string
	APIExport              string
}

// Workspace identifies a kcp workspace.
type Workspace struct {
	// Name is the logical cluster name, e.g. 1084s8ceexsehjm2.
	Name string
	// Path is the workspace path, e.g. root:org (from the kcp.io/path annotation).
	Path string
}

func (w Workspace) String() string {
	if w.Path == "" {
		return w.Name
	}
	return w.Path + " (" + w.Name + ")"
}

// Target is the result of the start-up resolution.
type Target struct {
	// Workspace is the workspace of the kcp kubeconfig.
	Workspace Workspace
	// Config points to Workspace (by logical cluster name).
	Config *rest.Config

	// EndpointSliceName is the APIExportEndpointSlice that lists the virtual
	// workspace URLs. In --apiexport-ref mode it is the export's name, and the
	// slice may not exist (then the export's status URLs are used).
	EndpointSliceName string
	// Partition is the Partition the endpoint slice names (spec.partition),
	// read at start: the slice lists only that partition's shards. Empty
	// without one, and in --apiexport-ref mode.
	Partition string

	// APIExportMode is set with --apiexport-ref: the endpoint slice may be
	// missing, and then the export's status.virtualWorkspaces are used.
	APIExportMode bool
	// APIExportName and APIExportWorkspace locate the APIExport.
	APIExportName      string
	APIExportWorkspace Workspace
	// APIExportConfig points to APIExportWorkspace.
	APIExportConfig *rest.Config

	// EndpointRewrites turn the virtual workspace URLs kcp lists into ones
	// the agent can reach (--endpoint-url-rewrite).
	EndpointRewrites Rewrites
}

// resolveBackoff paces start-up retries: kcp may still be starting, or an
// admin may not have created the slice yet; the agent waits instead of
// crash-looping, and logs every failure.
var resolveBackoff = wait.Backoff{Duration: 500 * 1e6, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 30 * 1e9}

// Resolve finds the kubeconfig's workspace and the APIExport behind ref,
// retrying transient failures until ctx is done. cfg must point to a
// /clusters/<workspace> URL.
func Resolve(ctx context.Context, log logr.Logger, cfg *rest.Config, ref Ref) (*Target, error) {
	var target *Target
	err := wait.ExponentialBackoffWithContext(ctx, resolveBackoff, func(ctx context.Context) (bool, error) {
		t, err := resolveOnce(ctx, cfg, ref)
		if err != nil {
			log.Info("Failed to resolve the kcp workspace, retrying", "error", err.Error())
			return false, nil
		}
		target = t
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to resolve the kcp workspace: %w", err)
	}
	return target, nil
}

// ResolveOnce is Resolve without retries: one attempt, its error as is.
func ResolveOnce(ctx context.Context, cfg *rest.Config, ref Ref) (*Target, error) {
	return resolveOnce(ctx, cfg, ref)
}

func resolveOnce(ctx context.Context, cfg *rest.Config, ref Ref) (*Target, error) {
	ws, wsConfig, err := workspaceOf(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t := &Target{Workspace: ws, Config: wsConfig}

	if ref.APIExport != "" {
		t.EndpointSliceName = ref.APIExport
		t.APIExportMode = true
		t.APIExportName = ref.APIExport
		t.APIExportWorkspace = ws
		t.APIExportConfig = wsConfig
		return t, nil
	}

	c, err := ctrlruntimeclient.New(wsConfig, ctrlruntimeclient.Options{Scheme: NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("failed to create kcp client: %w", err)
	}
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{}
	if err := c.Get(ctx, types.NamespacedName{Name: ref.APIExportEndpointSlice}, slice); err != nil {
		return nil, fmt.Errorf("failed to get APIExportEndpointSlice %q: %w", ref.APIExportEndpointSlice, err)
	}
	t.EndpointSliceName = slice.Name
	t.Partition = slice.Spec.Partition
	if err := partitionValid(slice); err != nil {
		return nil, err
	}
	t.APIExportName = slice.Spec.APIExport.Name

	exportPath := slice.Spec.APIExport.Path
	if exportPath == "" || exportPath == ws.Path || exportPath == ws.Name {
		t.APIExportWorkspace = ws
		t.APIExportConfig = wsConfig
		return t, nil
	}
	exportCfg, err := RetargetConfig(cfg, exportPath)
	if err != nil {
		return nil, err
	}
	t.APIExportWorkspace, t.APIExportConfig, err = workspaceOf(ctx, exportCfg)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve the APIExport workspace %q: %w", exportPath, err)
	}
	return t, nil
}

// workspaceOf reads the LogicalCluster of the workspace cfg points to and
// returns it plus a config that addresses it by its logical cluster name
// (stable even if the workspace is moved).
func workspaceOf(ctx context.Context, cfg *rest.Config) (Workspace, *rest.Config, error) {
	c, err := ctrlruntimeclient.New(cfg, ctrlruntimeclient.Options{Scheme: NewScheme()})
	if err != nil {
		return Workspace{}, nil, fmt.Errorf("failed to create kcp client: %w", err)
	}
	lc := &kcpcorev1alpha1.LogicalCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: kcpcorev1alpha1.LogicalClusterName}, lc); err != nil {
		return Workspace{}, nil, fmt.Errorf("failed to get LogicalCluster %q: %w", kcpcorev1alpha1.LogicalClusterName, err)
	}
	ws := Workspace{Name: lc.Annotations["kcp.io/cluster"], Path: lc.Annotations[core.LogicalClusterPathAnnotationKey]}
	if ws.Name == "" {
		return Workspace{}, nil, fmt.Errorf("LogicalCluster %q carries no kcp.io/cluster annotation", kcpcorev1alpha1.LogicalClusterName)
	}
	byName, err := RetargetConfig(cfg, ws.Name)
	if err != nil {
		return Workspace{}, nil, err
	}
	return ws, byName, nil
}

// Ping checks that kcp answers in the agent's workspace.
func Ping(ctx context.Context, c ctrlruntimeclient.Client) error {
	lc := &kcpcorev1alpha1.LogicalCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: kcpcorev1alpha1.LogicalClusterName}, lc); err != nil {
		return fmt.Errorf("kcp is not reachable: %w", err)
	}
	return nil
}

// partitionValid fails while kcp finds the Partition a slice names invalid
// (PartitionValid=False: it does not exist, say): the slice lists no
// endpoint then, and an agent that started on it would put its partition's
// finalizer and condition on every PublishedResource for nothing.
func partitionValid(slice *kcpapisv1alpha1.APIExportEndpointSlice) error {
	if slice.Spec.Partition == "" {
		return nil
	}
	for _, c := range slice.Status.Conditions {
		if c.Type == kcpapisv1alpha1.PartitionValid && c.Status == corev1.ConditionFalse {
			return fmt.Errorf("APIExportEndpointSlice %s names Partition %q, which kcp finds invalid (%s: %s)", slice.Name, slice.Spec.Partition, c.Reason, c.Message)
		}
	}
	return nil
}
