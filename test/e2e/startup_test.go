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

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

const (
	// agentReadyTimeout bounds the agent's start until /readyz answers 200.
	agentReadyTimeout = 2 * time.Minute
	// failFastTimeout bounds how long a misconfigured agent may take to exit.
	failFastTimeout = 15 * time.Second
)

// TestAgentStartup starts the agent with leader election against the
// fixture and checks what an operator would: it resolves the workspace's
// logical cluster, /healthz and /readyz answer 200, it holds the Lease
// syncagent.<agent-name>, and its metrics say it is the leader.
func TestAgentStartup(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)

	agent := framework.StartAgent(t, f.AgentArgs("--enable-leader-election")...)
	agent.WaitReady(t, agentReadyTimeout)

	if logs := agent.Logs(); !strings.Contains(logs, "Resolved kcp workspace") || !strings.Contains(logs, f.Org.ClusterName) {
		t.Errorf("agent log does not report the resolved logical cluster %q:\n%s", f.Org.ClusterName, logs)
	}

	code, _, err := framework.Get(t.Context(), "http://"+agent.HealthAddress+"/healthz")
	if err != nil || code != http.StatusOK {
		t.Errorf("/healthz = %d, %v; want 200", code, err)
	}

	agentName := f.Export.Name + "-syncagent"
	lease := &coordinationv1.Lease{}
	framework.WaitFor(t, time.Minute, "the leader Lease", func(ctx context.Context) (bool, error) {
		key := types.NamespacedName{Namespace: framework.AgentNamespace, Name: "syncagent." + agentName}
		if err := f.Service.Client.Get(ctx, key, lease); err != nil {
			return false, err
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})

	framework.WaitFor(t, time.Minute, "the leader metric", func(ctx context.Context) (bool, error) {
		_, body, err := framework.Get(ctx, "http://"+agent.MetricsAddress+"/metrics")
		if err != nil {
			return false, err
		}
		return strings.Contains(body, fmt.Sprintf(`leader_election_master_status{name="syncagent.%s"} 1`, agentName)), nil
	})

	// A graceful stop releases the Lease for the next replica.
	agent.Stop(30 * time.Second)
	if code := agent.ExitCode(); code != 0 {
		t.Errorf("agent exit code after SIGTERM = %d, want 0; log:\n%s", code, agent.Logs())
	}
	framework.Must(t, f.Service.Client.Get(t.Context(), types.NamespacedName{Namespace: framework.AgentNamespace, Name: "syncagent." + agentName}, lease), "get lease")
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("Lease still held by %q after a graceful stop", *lease.Spec.HolderIdentity)
	}
}

// TestAgentWaitsForEndpointSlice shows that /readyz is real: while the
// referenced APIExportEndpointSlice does not exist the agent keeps running
// but answers 500 and says why; once the slice exists it becomes ready.
func TestAgentWaitsForEndpointSlice(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	sliceName := framework.RandomName("late-slice")
	grantSlice(t, f, sliceName)

	args := f.AgentArgs()
	for i, a := range args {
		if strings.HasPrefix(a, "--apiexportendpointslice-ref=") {
			args[i] = "--apiexportendpointslice-ref=" + sliceName
		}
	}
	agent := framework.StartAgent(t, args...)

	framework.WaitFor(t, time.Minute, "/readyz to report the missing slice", func(ctx context.Context) (bool, error) {
		code, body, err := framework.Get(ctx, "http://"+agent.HealthAddress+"/readyz")
		if err != nil {
			return false, err
		}
		return code == http.StatusInternalServerError && strings.Contains(body, "kcp-workspace failed"), nil
	})
	// It must stay that way, and the agent must not exit.
	time.Sleep(3 * time.Second)
	if agent.Exited() {
		t.Fatalf("agent exited while waiting for the slice; log:\n%s", agent.Logs())
	}

	slice := &kcpapisv1alpha1.APIExportEndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: sliceName},
		Spec:       kcpapisv1alpha1.APIExportEndpointSliceSpec{APIExport: kcpapisv1alpha1.ExportBindingReference{Path: f.Org.Path, Name: f.Export.Name}},
	}
	framework.Must(t, f.Org.Client.Create(ctx, slice), "create APIExportEndpointSlice")
	agent.WaitReady(t, agentReadyTimeout)
}

// grantSlice lets the agent read one more endpoint slice by name.
func grantSlice(t *testing.T, f *framework.Fixture, name string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "api-syncagent-" + name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexportendpointslices"}, ResourceNames: []string{name}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: framework.AgentUser}},
	}
	framework.Must(t, f.Org.Client.Create(t.Context(), role), "create ClusterRole")
	framework.Must(t, f.Org.Client.Create(t.Context(), binding), "create ClusterRoleBinding")
}

// TestAgentRejectsBadCommandLines checks that invalid flags and a kcp
// kubeconfig without /clusters/ make the agent exit at once, non-zero, with
// a message that names the problem.
func TestAgentRejectsBadCommandLines(t *testing.T) {
	t.Parallel()
	dir := framework.ArtifactsDir(t)
	// Same server, but without the /clusters/<workspace> path.
	noClustersCfg := testKcp.AgentConfig("root")
	noClustersCfg.Host = testKcp.BaseURL
	noClusters := framework.WriteKubeconfig(t, dir, "no-clusters.kubeconfig", noClustersCfg)
	good := framework.WriteKubeconfig(t, dir, "kcp.kubeconfig", testKcp.AgentConfig("root"))

	testcases := []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "no flags at all",
			args: nil,
			want: []string{"--kcp-kubeconfig is required", "--namespace is required", "--apiexportendpointslice-ref", "--apiexport-ref"},
		},
		{
			name: "both refs",
			args: []string{"--kcp-kubeconfig=" + good, "--namespace=x", "--apiexport-ref=a", "--apiexportendpointslice-ref=b"},
			want: []string{"exactly one of --apiexportendpointslice-ref and --apiexport-ref", "both"},
		},
		{
			name: "invalid explicit agent name",
			args: []string{"--kcp-kubeconfig=" + good, "--namespace=x", "--apiexport-ref=a", "--agent-name=Not_A_Name"},
			want: []string{`--agent-name "Not_A_Name" is invalid`},
		},
		{
			name: "unknown controller and bad log format are both listed",
			args: []string{"--kcp-kubeconfig=" + good, "--namespace=x", "--apiexport-ref=a", "--disabled-controllers=sync,nope", "--log-format=yaml"},
			want: []string{`unknown controller "nope"`, `--log-format "yaml" is invalid`},
		},
		{
			name: "invalid selector",
			args: []string{"--kcp-kubeconfig=" + good, "--namespace=x", "--apiexport-ref=a", "--published-resource-selector=a in (b"},
			want: []string{"--published-resource-selector"},
		},
		{
			name: "unknown flag",
			args: []string{"--no-such-flag"},
			want: []string{"unknown flag: --no-such-flag"},
		},
		{
			name: "kcp kubeconfig without /clusters/",
			args: []string{"--kcp-kubeconfig=" + noClusters, "--namespace=x", "--apiexport-ref=a"},
			want: []string{"must point to a workspace", "/clusters/"},
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			agent := framework.StartAgent(t, tc.args...)
			ctx, cancel := context.WithTimeout(t.Context(), failFastTimeout)
			defer cancel()
			_ = agent.Wait(ctx)
			if !agent.Exited() {
				t.Fatalf("agent still runs after %v; log:\n%s", failFastTimeout, agent.Logs())
			}
			if agent.ExitCode() == 0 {
				t.Errorf("exit code 0, want non-zero")
			}
			logs := agent.Logs()
			for _, w := range tc.want {
				if !strings.Contains(logs, w) {
					t.Errorf("output does not contain %q:\n%s", w, logs)
				}
			}
		})
	}
}
