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
	"fmt"
	"os"
	"path/filepath"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"
	kcpcorev1alpha1 "github.com/kcp-dev/kcp/sdk/apis/core/v1alpha1"
	kcptenancyv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/tenancy/v1alpha1"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Timeouts of the fixtures.
const (
	workspaceReadyTimeout = 2 * time.Minute
	bindingReadyTimeout   = time.Minute
)

// Scheme returns a scheme with everything the tests touch in kcp and in the
// service cluster.
func Scheme() *runtime.Scheme {
	s := kcp.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(kcptenancyv1alpha1.AddToScheme(s))
	utilruntime.Must(syncagentv1alpha1.AddToScheme(s))
	return s
}

// Workspace is a kcp workspace created by a fixture.
type Workspace struct {
	// Path is the workspace path, e.g. root:e2e-1a2b3c4d.
	Path string
	// ClusterName is the logical cluster name.
	ClusterName string
	// Client is an admin client for the workspace.
	Client ctrlruntimeclient.Client
}

// CreateWorkspace creates a workspace of the given type below parent (a
// path) and waits until it is ready. It is deleted when the test ends.
func (k *Kcp) CreateWorkspace(t T, parent, name, wsType string) *Workspace {
	t.Helper()
	return k.CreateWorkspaceOnShard(t, parent, name, wsType, k.shard)
}

// CreateWorkspaceOnShard is CreateWorkspace on the named shard (empty: kcp
// chooses).
func (k *Kcp) CreateWorkspaceOnShard(t T, parent, name, wsType, shard string) *Workspace {
	t.Helper()
	ctx := t.Context()
	parentClient, err := k.AdminClient(parent)
	if err != nil {
		t.Fatal(err)
	}
	ws := &kcptenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kcptenancyv1alpha1.WorkspaceSpec{
			Type: &kcptenancyv1alpha1.WorkspaceTypeReference{Name: kcptenancyv1alpha1.WorkspaceTypeName(wsType), Path: "root"},
		},
	}
	if shard != "" {
		// kcp labels every Shard with its name.
		ws.Spec.Location = &kcptenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": shard}}}
	}
	if err := parentClient.Create(ctx, ws); err != nil {
		t.Fatalf("failed to create workspace %s:%s: %v", parent, name, err)
	}
	t.Cleanup(func() {
		_ = parentClient.Delete(context.Background(), ws)
	})

	WaitFor(t, workspaceReadyTimeout, "workspace "+parent+":"+name+" to be ready", func(ctx context.Context) (bool, error) {
		if err := parentClient.Get(ctx, types.NamespacedName{Name: name}, ws); err != nil {
			return false, err
		}
		return ws.Status.Phase == kcpcorev1alpha1.LogicalClusterPhaseReady, nil
	})

	path := parent + ":" + name
	c, err := k.AdminClient(path)
	if err != nil {
		t.Fatal(err)
	}
	return &Workspace{Path: path, ClusterName: ws.Spec.Cluster, Client: c}
}

// CreateOrg creates an organisation workspace below root.
func (k *Kcp) CreateOrg(t T) *Workspace {
	t.Helper()
	return k.CreateWorkspace(t, "root", RandomName("e2e"), "organization")
}

// DefaultClaims are the permission claims the fixture's APIExport carries
// (contract §3.6: events always, namespaces for filters and related objects).
func DefaultClaims() []kcpapisv1alpha2.PermissionClaim {
	return []kcpapisv1alpha2.PermissionClaim{
		{GroupResource: kcpapisv1alpha2.GroupResource{Resource: "events"}, Verbs: []string{"*"}},
		{GroupResource: kcpapisv1alpha2.GroupResource{Resource: "namespaces"}, Verbs: []string{"*"}},
	}
}

// CreateAPIExport creates an empty APIExport (stored version v1alpha2) in ws
// and waits for the APIExportEndpointSlice that kcp creates with the same name.
func CreateAPIExport(t T, ws *Workspace, name string) *kcpapisv1alpha2.APIExport {
	t.Helper()
	ctx := t.Context()
	export := &kcpapisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kcpapisv1alpha2.APIExportSpec{PermissionClaims: DefaultClaims()},
	}
	if err := ws.Client.Create(ctx, export); err != nil {
		t.Fatalf("failed to create APIExport %q: %v", name, err)
	}
	WaitFor(t, bindingReadyTimeout, "APIExportEndpointSlice "+name, func(ctx context.Context) (bool, error) {
		return true, ws.Client.Get(ctx, types.NamespacedName{Name: name}, &kcpapisv1alpha1.APIExportEndpointSlice{})
	})
	return export
}

// GrantAgent gives the agent user the permissions of contract §8.2 in the
// APIExport's workspace: workspace access, its LogicalCluster, the endpoint
// slice and the export by name, schemas, Events and the export's virtual
// workspace content. Beyond docs/getting-started.md's role it grants the
// optional patch of schemas, so that the repair of a schema's agent label
// runs in the tests.
func GrantAgent(t T, ws *Workspace, exportName, sliceName string) {
	t.Helper()
	GrantAgentUser(t, ws, exportName, sliceName, AgentUser)
}

// GrantAgentUser is GrantAgent for the kcp user user; the ClusterRole and
// ClusterRoleBinding are named api-syncagent:<export>[:<user>].
func GrantAgentUser(t T, ws *Workspace, exportName, sliceName, user string) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: agentRoleName(exportName, user)},
		Rules: []rbacv1.PolicyRule{
			{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}},
			{APIGroups: []string{"core.kcp.io"}, Resources: []string{"logicalclusters"}, ResourceNames: []string{"cluster"}, Verbs: []string{"get"}},
			{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexportendpointslices"}, ResourceNames: []string{sliceName}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports"}, ResourceNames: []string{exportName}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiresourceschemas"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "create", "update", "patch"}},
			{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports/content"}, ResourceNames: []string{exportName}, Verbs: []string{"*"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, obj := range []ctrlruntimeclient.Object{role, binding} {
		if err := ws.Client.Create(ctx, obj); err != nil {
			t.Fatalf("failed to create %T: %v", obj, err)
		}
	}
}

// agentRoleName names the ClusterRole and ClusterRoleBinding of GrantAgentUser.
func agentRoleName(exportName, user string) string {
	if user == AgentUser {
		return "api-syncagent:" + exportName
	}
	return "api-syncagent:" + exportName + ":" + user
}

// RevokeAgentUser deletes what GrantAgentUser created.
func RevokeAgentUser(t T, ws *Workspace, exportName, user string) {
	t.Helper()
	name := agentRoleName(exportName, user)
	for _, obj := range []ctrlruntimeclient.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}} {
		if err := ws.Client.Delete(t.Context(), obj); err != nil {
			t.Fatalf("failed to delete %T %s: %v", obj, name, err)
		}
	}
}

// BindConsumer creates a consumer workspace below org with an APIBinding to
// the export whose permission claims are all accepted, and waits until the
// binding is bound.
func (k *Kcp) BindConsumer(t T, org *Workspace, exportName string, claims []kcpapisv1alpha2.PermissionClaim) *Workspace {
	t.Helper()
	ws := k.CreateWorkspace(t, org.Path, RandomName("consumer"), "universal")
	BindExport(t, ws, org.Path, exportName, claims)
	return ws
}

// BindExport creates an APIBinding in ws to the export at exportPath with
// every claim accepted, and waits until it is bound.
func BindExport(t T, ws *Workspace, exportPath, exportName string, claims []kcpapisv1alpha2.PermissionClaim) {
	t.Helper()
	accepted := make([]kcpapisv1alpha2.AcceptablePermissionClaim, 0, len(claims))
	for _, c := range claims {
		accepted = append(accepted, kcpapisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: kcpapisv1alpha2.ScopedPermissionClaim{
				PermissionClaim: c,
				Selector:        kcpapisv1alpha2.PermissionClaimSelector{MatchAll: true},
			},
			State: kcpapisv1alpha2.ClaimAccepted,
		})
	}
	binding := &kcpapisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: exportName},
		Spec: kcpapisv1alpha2.APIBindingSpec{
			Reference:        kcpapisv1alpha2.BindingReference{Export: &kcpapisv1alpha2.ExportBindingReference{Path: exportPath, Name: exportName}},
			PermissionClaims: accepted,
		},
	}
	if err := ws.Client.Create(t.Context(), binding); err != nil {
		t.Fatalf("failed to create APIBinding in %s: %v", ws.Path, err)
	}
	WaitBound(t, ws, binding.Name)
}

// WaitBound waits until the APIBinding name in ws (created through any API
// version) is bound and the workspace serves every resource it binds.
func WaitBound(t T, ws *Workspace, name string) {
	t.Helper()
	binding := &kcpapisv1alpha2.APIBinding{}
	WaitFor(t, bindingReadyTimeout, "APIBinding "+name+" in "+ws.Path+" to be bound", func(ctx context.Context) (bool, error) {
		if err := ws.Client.Get(ctx, types.NamespacedName{Name: name}, binding); err != nil {
			return false, err
		}
		return binding.Status.Phase == kcpapisv1alpha2.APIBindingPhaseBound, nil
	})
	// Bound comes a moment before the workspace serves the APIs; a create
	// right after binding would fail with "no matches for kind".
	for _, r := range binding.Status.BoundResources {
		gvr := schema.GroupVersionResource{Group: r.Group, Resource: r.Resource}
		WaitFor(t, bindingReadyTimeout, gvr.GroupResource().String()+" served in "+ws.Path, func(context.Context) (bool, error) {
			_, err := ws.Client.RESTMapper().ResourcesFor(gvr)
			return err == nil, nil
		})
	}
}

// WriteKubeconfig writes cfg (token or client certificate auth) as a
// kubeconfig file and returns its path.
func WriteKubeconfig(t T, dir, name string, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := writeKubeconfig(path, "default", cfg); err != nil {
		t.Fatalf("failed to write kubeconfig: %v", err)
	}
	return path
}

// writeKubeconfig writes cfg as a kubeconfig (mode 0600) whose one cluster,
// user and context are named context.
func writeKubeconfig(path, context string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[context] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[context] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[context] = &clientcmdapi.Context{Cluster: context, AuthInfo: context}
	kc.CurrentContext = context
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// RewriteKubeconfig replaces the kubeconfig at path with one for cfg in one
// step (a reader never sees half a file), as a secret's projected volume
// is updated; it may be called off the test's goroutine.
func RewriteKubeconfig(path string, cfg *rest.Config) error {
	tmp := path + ".new"
	if err := writeKubeconfig(tmp, "agent", cfg); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Must fails the test on err.
func Must(t T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("failed to %s: %v", fmt.Sprintf(what, args...), err)
	}
}
