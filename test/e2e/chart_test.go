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
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/chart"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

const (
	chartRelease = "chart-agent"
	// chartBrokenSyncWait is how long the run with a removed rule is given
	// to (not) sync; the good run syncs within seconds.
	chartBrokenSyncWait = 45 * time.Second
)

// TestChart installs the Helm chart into the service cluster (every
// rendered object, applied as Helm would) and runs the agent binary the way
// the rendered Deployment runs it: the same arguments and environment, the
// Secret volumes as files, and the chart's ServiceAccount as its identity
// (impersonation stands in for the in-cluster token). A full sync shows that
// the chart's RBAC is sufficient; a second run without the chart's
// namespaces rule shows that the test would notice a missing rule.
func TestChart(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service

	svc.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, svc.Client.Create(ctx, thingsPR()), "create PublishedResource")

	createKcpKubeconfigSecret(t, svc, f.KcpKubeconfig)
	objs := renderChart(t, chartRelease, map[string]any{
		"apiExportEndpointSliceName": f.Export.Name,
		"kcpKubeconfig":              "kcp-kubeconfig",
		"extraFlags":                 []any{"--log-format=Console", "--log-debug"},
		// The published type, as docs and the chart's README tell service owners.
		"rbac": map[string]any{"extraRules": []any{map[string]any{
			"apiGroups": []any{"example.com"}, "resources": []any{"things"},
			"verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"},
		}}},
	})
	applyObjects(t, svc.Client, objs)

	// Run 1: the chart as rendered.
	agent := startAsDeployment(t, svc, objs)
	agent.waitProbe(t, "readiness", agent.container.ReadinessProbe)
	agent.waitProbe(t, "liveness", agent.container.LivenessProbe)
	svc.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	svc.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	if err := fullSync(ctx, svc.Client, consumer, "first", syncTimeout); err != nil {
		t.Fatalf("the agent with the chart's RBAC did not sync: %v\nagent log: %s", err, agent.LogPath)
	}

	// What the agent wrote with the chart's namespaced permissions: its
	// Lease (leader election is on by default) and a state Secret.
	lease := &unstructured.Unstructured{}
	lease.SetAPIVersion("coordination.k8s.io/v1")
	lease.SetKind("Lease")
	framework.Must(t, svc.Client.Get(ctx, types.NamespacedName{Namespace: framework.AgentNamespace, Name: "syncagent." + chartRelease}, lease), "get the leader Lease")
	secrets := &corev1.SecretList{}
	framework.Must(t, svc.Client.List(ctx, secrets, ctrlruntimeclient.InNamespace(framework.AgentNamespace),
		ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/object-state": "true"}), "list state Secrets")
	if len(secrets.Items) == 0 {
		t.Error("no state Secret in the agent's namespace")
	}
	code, body, err := framework.Get(ctx, "http://"+agent.MetricsAddress+"/metrics")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "sync_agent_published_resource") {
		t.Errorf("metrics port of the chart: code %d, err %v, has sync_agent_published_resource: %v", code, err, strings.Contains(body, "sync_agent_published_resource"))
	}
	agent.Stop(30 * time.Second)

	// Run 2: the same, but without the chart's rule for namespaces. A new
	// consumer workspace needs a new destination namespace, which the
	// agent can no longer create; the sync must fail.
	applyObjects(t, svc.Client, withoutRule(t, objs, "namespaces"))
	broken := startAsDeployment(t, svc, objs)
	second := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	err = fullSync(ctx, svc.Client, second, "second", chartBrokenSyncWait)
	if err == nil {
		t.Fatal("the agent synced without the namespaces rule: the test cannot tell a sufficient RBAC from an insufficient one")
	}
	t.Logf("without the namespaces rule, as expected: %v", err)
	if broken.Exited() {
		t.Fatalf("the agent exited (code %d) instead of failing to sync; log: %s", broken.ExitCode(), broken.LogPath)
	}
	if logs := broken.Logs(); !regexp.MustCompile(`namespaces.*forbidden|forbidden.*namespaces`).MatchString(logs) {
		t.Errorf("the agent's log does not report the missing namespaces permission; log: %s", broken.LogPath)
	}
}

// createKcpKubeconfigSecret creates, from the kubeconfig file at path, the
// Secret kcp-kubeconfig that the chart mounts (value kcpKubeconfig), as the
// admin does (docs/getting-started.md).
func createKcpKubeconfigSecret(t *testing.T, svc *framework.ServiceCluster, path string) {
	t.Helper()
	kubeconfig, err := os.ReadFile(path)
	framework.Must(t, err, "read the kcp kubeconfig")
	framework.Must(t, svc.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.AgentNamespace, Name: "kcp-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}), "create the kcp kubeconfig Secret")
}

// renderChart renders the chart for release with values, plus free ports
// of the test bed for the health and metrics listeners (startAsDeployment
// binds them to 127.0.0.1).
func renderChart(t *testing.T, release string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	values = maps.Clone(values)
	for _, listener := range []string{"health", "metrics"} {
		port, err := framework.FreePort()
		framework.Must(t, err, "find a port")
		values[listener] = map[string]any{"port": port}
	}
	objs, err := chart.Render(release, framework.AgentNamespace, values)
	framework.Must(t, err, "render the chart")
	return objs
}

// applyObjects applies rendered objects with server-side apply under
// Helm's field manager, as `helm install` would create them.
func applyObjects(t *testing.T, c ctrlruntimeclient.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		obj := o.DeepCopy()
		framework.Must(t, c.Patch(t.Context(), obj, ctrlruntimeclient.Apply, ctrlruntimeclient.FieldOwner("helm"), ctrlruntimeclient.ForceOwnership),
			"apply %s %s", o.GetKind(), o.GetName())
	}
}

// withoutRule returns the objects with the rule for resource removed from
// the chart's ClusterRole; it fails if there is no such rule.
func withoutRule(t *testing.T, objs []*unstructured.Unstructured, resource string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	removed := false
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			out = append(out, o)
			continue
		}
		role := &rbacv1.ClusterRole{}
		framework.Must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role), "convert ClusterRole")
		role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			if slices.Contains(r.Resources, resource) {
				removed = true
				return true
			}
			return false
		})
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(role)
		framework.Must(t, err, "convert ClusterRole")
		out = append(out, &unstructured.Unstructured{Object: u})
	}
	if !removed {
		t.Fatalf("the chart's ClusterRole has no rule for %s", resource)
	}
	return out
}

// fullSync creates a Thing in the consumer workspace and waits until its
// local copy exists and a status set on the copy arrives in kcp.
func fullSync(ctx context.Context, c ctrlruntimeclient.Client, consumer *framework.Workspace, name string, timeout time.Duration) error {
	thing := newObject(kcpThing, "default", name, map[string]any{"color": "green"})
	if err := consumer.Client.Create(ctx, thing); err != nil {
		return fmt.Errorf("failed to create the Thing in kcp: %w", err)
	}
	var local *unstructured.Unstructured
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, c, consumer.ClusterName)
		if err != nil || len(items) != 1 {
			return false, err
		}
		local = &items[0]
		color, _, _ := unstructured.NestedString(local.Object, "spec", "color")
		return color == "green", nil
	})
	if err != nil {
		return fmt.Errorf("no local copy of the Thing on the service cluster: %w", err)
	}
	if err := unstructured.SetNestedField(local.Object, "Ready", "status", "phase"); err != nil {
		return err
	}
	if err := c.Status().Update(ctx, local); err != nil {
		return fmt.Errorf("failed to set the local status: %w", err)
	}
	err = poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, thing); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(thing.Object, "status", "phase")
		return phase == "Ready", nil
	})
	if err != nil {
		return fmt.Errorf("the status did not reach kcp: %w", err)
	}
	return nil
}

// poll is framework.WaitFor that returns the failure instead of failing
// the test.
func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("timed out after %v (last error: %w)", timeout, lastErr)
			}
			return fmt.Errorf("timed out after %v", timeout)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deploymentAgent is the agent started from the rendered Deployment.
type deploymentAgent struct {
	*framework.Agent
	container corev1.Container
	// serviceAccount is the Pod's ServiceAccount, which the agent acts as.
	serviceAccount string
}

// startAsDeployment starts the agent binary as the kubelet would start the
// rendered Deployment's agent container, with three stand-ins for what a
// node provides: Secret volumes become files below a temporary root (and
// arguments that point into a mount point are moved there), listen
// addresses without a host are bound to 127.0.0.1, and the in-cluster
// credentials are a kubeconfig ($KUBECONFIG, which the agent reads before the
// in-cluster config) that impersonates the Pod's ServiceAccount.
func startAsDeployment(t *testing.T, svc *framework.ServiceCluster, objs []*unstructured.Unstructured) *deploymentAgent {
	t.Helper()
	var d *appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			d = &appsv1.Deployment{}
			framework.Must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d), "convert Deployment")
		}
	}
	if d == nil {
		t.Fatal("the chart rendered no Deployment")
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("expected exactly one container and no init containers, got %d and %d", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]

	// Environment, resolved as the kubelet does.
	env := map[string]string{}
	var envList []string
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Fatalf("env %s: only values and the Pod's namespace are supported, got %+v", e.Name, e.ValueFrom)
			}
			v = d.Namespace
		}
		env[e.Name] = expand(v, env)
		envList = append(envList, e.Name+"="+env[e.Name])
	}

	// Volumes: every mount is a Secret (the kubelet writes one file per key).
	root := t.TempDir()
	var mounts []string
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || pod.Volumes[i].Secret == nil {
			t.Fatalf("mount %s: only Secret volumes are supported", m.Name)
		}
		secret := &corev1.Secret{}
		framework.Must(t, svc.Client.Get(t.Context(), types.NamespacedName{Namespace: d.Namespace, Name: pod.Volumes[i].Secret.SecretName}, secret), "get Secret %s", pod.Volumes[i].Secret.SecretName)
		dir := filepath.Join(root, m.MountPath)
		framework.Must(t, os.MkdirAll(dir, 0o700), "create %s", dir)
		for k, v := range secret.Data {
			framework.Must(t, os.WriteFile(filepath.Join(dir, k), v, 0o600), "write %s", k)
		}
		mounts = append(mounts, m.MountPath)
	}

	// Arguments: $(VAR) expanded, then the node stand-ins.
	a := &deploymentAgent{container: c}
	var args []string
	for _, arg := range joinListenerValues(c.Args) {
		arg = expand(arg, env)
		name, value, _ := strings.Cut(arg, "=")
		for _, m := range mounts {
			if strings.HasPrefix(value, m+"/") {
				if _, err := os.Stat(filepath.Join(root, value)); err != nil {
					t.Fatalf("argument %s names a file that the mounts do not provide: %v", arg, err)
				}
				arg = name + "=" + filepath.Join(root, value)
			}
		}
		if (name == "--health-address" || name == "--metrics-address") && strings.HasPrefix(value, ":") {
			arg = name + "=127.0.0.1" + value
		}
		args = append(args, arg)
	}

	// Identity: the Pod's ServiceAccount, whose token the Pod mounts.
	if pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken {
		t.Fatal("the Pod does not mount its ServiceAccount token, so the in-cluster config would fail")
	}
	sa := pod.ServiceAccountName
	a.serviceAccount = sa
	framework.Must(t, svc.Client.Get(t.Context(), types.NamespacedName{Namespace: d.Namespace, Name: sa}, &corev1.ServiceAccount{}), "get ServiceAccount %s", sa)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["service"] = &clientcmdapi.Cluster{Server: svc.Config.Host, CertificateAuthorityData: svc.Config.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: svc.Config.CertData,
		ClientKeyData:         svc.Config.KeyData,
		Impersonate:           "system:serviceaccount:" + d.Namespace + ":" + sa,
		ImpersonateGroups:     []string{"system:serviceaccounts", "system:serviceaccounts:" + d.Namespace, "system:authenticated"},
	}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "service", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	kubeconfig := filepath.Join(root, "in-cluster.kubeconfig")
	framework.Must(t, clientcmd.WriteToFile(*kc, kubeconfig), "write the ServiceAccount kubeconfig")
	envList = append(envList, clientcmd.RecommendedConfigPathEnvVar+"="+kubeconfig)

	t.Logf("agent args (from the Deployment): %q", args)
	a.Agent = framework.StartAgentWithEnv(t, envList, args...)
	a.HealthAddress = listenAddress(args, "--health-address")
	a.MetricsAddress = listenAddress(args, "--metrics-address")
	return a
}

// joinListenerValues turns "--health-address", ":8081" (flag and value as
// separate arguments, as extraFlags may pass them) into
// "--health-address=:8081", so that the listeners can be moved to 127.0.0.1.
func joinListenerValues(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if (args[i] == "--health-address" || args[i] == "--metrics-address") && i+1 < len(args) {
			out = append(out, args[i]+"="+args[i+1])
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

var envReference = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) with the value of an earlier variable of the
// container, and $$ with $, as the kubelet does.
func expand(s string, env map[string]string) string {
	return envReference.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func listenAddress(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// waitProbe runs one of the container's HTTP probes against the agent
// until it succeeds, as the kubelet would.
func (a *deploymentAgent) waitProbe(t *testing.T, what string, p *corev1.Probe) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Fatalf("the Deployment has no HTTP %s probe", what)
	}
	port := p.HTTPGet.Port.IntValue()
	if port == 0 {
		i := slices.IndexFunc(a.container.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.HTTPGet.Port.String() })
		if i < 0 {
			t.Fatalf("%s probe: no container port named %s", what, p.HTTPGet.Port.String())
		}
		port = int(a.container.Ports[i].ContainerPort)
	}
	if want := hostPort(port); a.HealthAddress != want {
		t.Fatalf("%s probe targets port %d, but the agent serves health on %s", what, port, a.HealthAddress)
	}
	url := "http://" + hostPort(port) + p.HTTPGet.Path
	framework.WaitFor(t, 2*time.Minute, what+" probe "+url, func(ctx context.Context) (bool, error) {
		if a.Exited() {
			t.Fatalf("agent exited with code %d; log: %s", a.ExitCode(), a.LogPath)
		}
		code, body, err := framework.Get(ctx, url)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, errors.New(body)
		}
		return true, nil
	})
}

func hostPort(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
