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

package chart

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	release   = "agent"
	namespace = "syncagent"
	fullname  = "agent-api-syncagent"
)

// required are the values without which the chart refuses to render.
func required() map[string]any {
	return map[string]any{"kcpKubeconfig": "kcp-kubeconfig", "apiExportEndpointSliceName": "my-export"}
}

func with(extra map[string]any) map[string]any {
	v := required()
	for k, val := range extra {
		v[k] = val
	}
	return v
}

func render(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Render(release, namespace, values)
	if err != nil {
		t.Fatalf("failed to render: %v", err)
	}
	return objs
}

// get finds a rendered object and converts it into a typed one.
func get[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	u := Find(objs, kind, name)
	if u == nil {
		t.Fatalf("no %s %q rendered; have %v", kind, name, inventory(objs))
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %q does not fit its type: %v", kind, name, err)
	}
	return out
}

func inventory(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		id := o.GetKind() + " " + o.GetName()
		if o.GetNamespace() != "" {
			id = o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func agentContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Name != "agent" {
		t.Fatalf("want exactly one container named agent, got %+v", d.Spec.Template.Spec.Containers)
	}
	return d.Spec.Template.Spec.Containers[0]
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", what, d)
	}
}

// TestLint runs Helm's linter (chart file, values against the schema,
// templates rendered and parsed) with the defaults plus the required values
// and with the everything-set values; warnings count as failures.
func TestLint(t *testing.T) {
	for name, values := range map[string]map[string]any{"required": required(), "all values": allValues()} {
		t.Run(name, func(t *testing.T) {
			linter := lint.AllWithKubeVersion(Dir(), values, namespace, nil)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				} else {
					t.Logf("lint: %s", m)
				}
			}
		})
	}
}

// TestRender_defaults renders with only the required values and asserts
// every object: the inventory, the Deployment (args, env, mounts, probes,
// ports, labels, security, topology spread) and the RBAC rules of contract
// §8.3.
func TestRender_defaults(t *testing.T) {
	objs := render(t, required())

	diff(t, "rendered objects", []string{
		"ClusterRole " + fullname + ":syncagent",
		"ClusterRoleBinding " + fullname + ":syncagent",
		"CustomResourceDefinition publishedresources.syncagent.kcp.io",
		"Deployment syncagent/" + fullname,
		"PodDisruptionBudget syncagent/" + fullname,
		"Role default/" + fullname + ":syncagent:events",
		"Role syncagent/" + fullname,
		"RoleBinding default/" + fullname + ":syncagent:events",
		"RoleBinding syncagent/" + fullname,
		"Service syncagent/" + fullname + "-metrics",
		"ServiceAccount syncagent/" + fullname,
	}, inventory(objs))

	for _, o := range objs {
		labels := o.GetLabels()
		for k, v := range map[string]string{
			"app.kubernetes.io/name":       "kcp-api-syncagent",
			"app.kubernetes.io/instance":   release,
			"app.kubernetes.io/managed-by": "Helm",
			"app.kubernetes.io/version":    "v0.1.0",
			"helm.sh/chart":                "api-syncagent-0.1.0",
		} {
			if labels[k] != v {
				t.Errorf("%s %s: label %s=%q, want %q", o.GetKind(), o.GetName(), k, labels[k], v)
			}
		}
	}

	d := get[appsv1.Deployment](t, objs, "Deployment", fullname)
	selector := map[string]string{"app.kubernetes.io/name": "kcp-api-syncagent", "app.kubernetes.io/instance": release}
	diff(t, "selector", selector, d.Spec.Selector.MatchLabels)
	diff(t, "pod labels", map[string]string{
		"app.kubernetes.io/name": "kcp-api-syncagent", "app.kubernetes.io/instance": release, "app.kubernetes.io/version": "v0.1.0",
	}, d.Spec.Template.Labels)
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != fullname {
		t.Errorf("serviceAccountName = %q, want %q", pod.ServiceAccountName, fullname)
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Error("the ServiceAccount token must be mounted (the agent uses the in-cluster config)")
	}

	c := agentContainer(t, d)
	if c.Image != "ghcr.io/kcp-syncagent/api-syncagent:v0.1.0" {
		t.Errorf("image = %q", c.Image)
	}
	diff(t, "args", []string{
		"--namespace=$(POD_NAMESPACE)",
		"--enable-leader-election=true",
		"--apiexportendpointslice-ref=my-export",
		"--agent-name=$(AGENT_NAME)",
		"--kcp-kubeconfig=/etc/api-syncagent/kcp/kubeconfig",
		"--health-address=:8081",
		"--metrics-address=:8085",
	}, c.Args)
	diff(t, "env", []corev1.EnvVar{
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		{Name: "AGENT_NAME", Value: release},
	}, c.Env)
	diff(t, "mounts", []corev1.VolumeMount{{Name: "kcp-kubeconfig", MountPath: "/etc/api-syncagent/kcp", ReadOnly: true}}, c.VolumeMounts)
	diff(t, "volumes", []corev1.Volume{{Name: "kcp-kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "kcp-kubeconfig"}}}}, pod.Volumes)
	diff(t, "ports", []corev1.ContainerPort{
		{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 8085, Protocol: corev1.ProtocolTCP},
	}, c.Ports)
	diff(t, "liveness probe", &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("health")}},
		InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3,
	}, c.LivenessProbe)
	diff(t, "readiness probe", &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}},
		InitialDelaySeconds: 5, PeriodSeconds: 10, TimeoutSeconds: 6, FailureThreshold: 3,
	}, c.ReadinessProbe)
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("resources = %+v", c.Resources)
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext = %+v", sc)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v", psc)
	}
	diff(t, "topology spread", []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
	}}, pod.TopologySpreadConstraints)
	for _, unset := range []bool{pod.NodeSelector != nil, pod.Affinity != nil, pod.Tolerations != nil, pod.HostAliases != nil, pod.InitContainers != nil, pod.ImagePullSecrets != nil, pod.PriorityClassName != ""} {
		if unset {
			t.Errorf("an optional pod field is set by default: %+v", pod)
			break
		}
	}

	cr := get[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+":syncagent")
	diff(t, "ClusterRole rules", []rbacv1.PolicyRule{
		{APIGroups: []string{"syncagent.kcp.io"}, Resources: []string{"publishedresources"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"syncagent.kcp.io"}, Resources: []string{"publishedresources/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}},
		{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi/v2"}, Verbs: []string{"get"}},
	}, cr.Rules)
	role := get[rbacv1.Role](t, objs, "Role", fullname)
	diff(t, "Role rules", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
	}, role.Rules)
	events := get[rbacv1.Role](t, objs, "Role", fullname+":syncagent:events")
	diff(t, "events Role rules", []rbacv1.PolicyRule{
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
	}, events.Rules)
	if events.Namespace != "default" {
		t.Errorf("events Role in %q, want default", events.Namespace)
	}

	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: fullname, Namespace: namespace}}
	crb := get[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", fullname+":syncagent")
	diff(t, "ClusterRoleBinding", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name}, crb.RoleRef)
	diff(t, "ClusterRoleBinding subjects", subjects, crb.Subjects)
	for _, name := range []string{fullname, fullname + ":syncagent:events"} {
		rb := get[rbacv1.RoleBinding](t, objs, "RoleBinding", name)
		diff(t, "RoleBinding "+name, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, rb.RoleRef)
		diff(t, "RoleBinding subjects "+name, subjects, rb.Subjects)
	}

	sa := get[corev1.ServiceAccount](t, objs, "ServiceAccount", fullname)
	if sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
		t.Error("ServiceAccount automountServiceAccountToken should be true")
	}
	svc := get[corev1.Service](t, objs, "Service", fullname+"-metrics")
	diff(t, "metrics Service ports", []corev1.ServicePort{{Name: "metrics", Port: 8085, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}}, svc.Spec.Ports)
	diff(t, "metrics Service selector", selector, svc.Spec.Selector)

	crd := get[apiextensionsv1.CustomResourceDefinition](t, objs, "CustomResourceDefinition", "publishedresources.syncagent.kcp.io")
	if crd.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("CRD annotations = %v, want helm.sh/resource-policy=keep", crd.Annotations)
	}
}

// TestRender_allValues sets every value of values.yaml to a non-default
// value (TestAllValuesCoverValuesYAML proves that none is left out) and
// asserts the effect of each.
func TestRender_allValues(t *testing.T) {
	objs, err := Render("release", "ignored", allValues())
	if err != nil {
		t.Fatal(err)
	}
	const ns, full = "agents", "custom-name"

	diff(t, "rendered objects", []string{
		"ClusterRole " + full + ":" + ns,
		"ClusterRoleBinding " + full + ":" + ns,
		"ConfigMap monitoring/" + dashboardConfigMap(ns, full),
		"Deployment " + ns + "/" + full,
		"PodDisruptionBudget " + ns + "/" + full,
		"PrometheusRule " + ns + "/" + full,
		"Role " + ns + "/" + full,
		"Role default/" + full + ":" + ns + ":events",
		"RoleBinding " + ns + "/" + full,
		"RoleBinding default/" + full + ":" + ns + ":events",
		"Service " + ns + "/" + full + "-metrics",
		"ServiceAccount " + ns + "/custom-sa",
		"ServiceMonitor " + ns + "/" + full,
	}, inventory(objs))

	for _, o := range objs {
		if o.GetLabels()["team"] != "platform" {
			t.Errorf("%s %s lacks extraLabels: %v", o.GetKind(), o.GetName(), o.GetLabels())
		}
		if o.GetLabels()["app.kubernetes.io/instance"] != "my-agent" {
			t.Errorf("%s %s: instance label %q, want the agent name", o.GetKind(), o.GetName(), o.GetLabels()["app.kubernetes.io/instance"])
		}
		if strings.HasPrefix(o.GetAPIVersion(), "rbac.") && o.GetAnnotations()["rbac-note"] != "yes" {
			t.Errorf("%s %s lacks the RBAC annotations: %v", o.GetKind(), o.GetName(), o.GetAnnotations())
		}
	}

	d := get[appsv1.Deployment](t, objs, "Deployment", full)
	if d.Annotations["owner"] != "me" || d.Spec.Template.Annotations["owner"] != "me" {
		t.Errorf("extraAnnotations missing: %v / %v", d.Annotations, d.Spec.Template.Annotations)
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %d", *d.Spec.Replicas)
	}
	c := agentContainer(t, d)
	diff(t, "args", []string{
		"--namespace=$(POD_NAMESPACE)",
		"--enable-leader-election=true",
		"--apiexportendpointslice-ref=my-slice",
		"--agent-name=$(AGENT_NAME)",
		"--kcp-kubeconfig=/etc/api-syncagent/kcp/kubeconfig",
		"--kubeconfig=/etc/api-syncagent/cluster/kubeconfig",
		"--kubeconfig-host-override=https://10.0.0.1:6443",
		"--kubeconfig-ca-file-override=/etc/ca/ca.crt",
		"--endpoint-url-rewrite=https://shard-1.kcp.svc:6443=https://shard-1.kcp.example.com",
		"--published-resource-selector=team in (a,b)",
		"--disabled-controllers=apiexport,apiresourceschema",
		"--enable-imports",
		"--namespace-label=team=tenants",
		"--namespace-label=tenant={{ .ClusterName }}",
		"--namespace-annotation=example.com/owner=kcp",
		"--patrol-interval=30m",
		"--patrol-mode=report",
		"--sync-workers=16",
		"--event-level=warning",
		"--kcp-qps=50.5",
		"--kcp-burst=100",
		"--service-qps=1000",
		"--service-burst=2000",
		"--health-address=:9001",
		"--metrics-address=:9100",
		"--log-format=Console",
	}, c.Args)
	if c.Env[1].Value != "my-agent" {
		t.Errorf("AGENT_NAME = %q", c.Env[1].Value)
	}
	if c.Image != "registry.example.com/agent:v9" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image = %q (%s)", c.Image, c.ImagePullPolicy)
	}
	diff(t, "mounts", []corev1.VolumeMount{
		{Name: "kcp-kubeconfig", MountPath: "/etc/api-syncagent/kcp", ReadOnly: true},
		{Name: "cluster-kubeconfig", MountPath: "/etc/api-syncagent/cluster", ReadOnly: true},
		{Name: "ca", MountPath: "/etc/ca"},
	}, c.VolumeMounts)
	pod := d.Spec.Template.Spec
	diff(t, "volumes", []corev1.Volume{
		{Name: "kcp-kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "kcp-kc"}}},
		{Name: "cluster-kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "service-kc"}}},
		{Name: "ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}}},
	}, pod.Volumes)
	diff(t, "ports", []corev1.ContainerPort{
		{Name: "health", ContainerPort: 9001, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP},
	}, c.Ports)
	if c.LivenessProbe != nil || c.ReadinessProbe != nil {
		t.Errorf("probes are disabled but rendered: %+v %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if c.Resources.Limits.Memory().String() != "1Gi" || c.Resources.Requests.Cpu().String() != "200m" || c.Resources.Limits.Cpu().String() != "2" || c.Resources.Requests.Memory().String() != "128Mi" {
		t.Errorf("resources = %+v", c.Resources)
	}
	if sc := c.SecurityContext; sc == nil || !*sc.AllowPrivilegeEscalation || *sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"NET_RAW"}) {
		t.Errorf("container securityContext = %+v", c.SecurityContext)
	}
	if psc := pod.SecurityContext; psc == nil || *psc.RunAsNonRoot || psc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined {
		t.Errorf("pod securityContext = %+v", pod.SecurityContext)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.ServiceAccountName != "custom-sa" {
		t.Errorf("service account: %q automount %v", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	diff(t, "imagePullSecrets", []corev1.LocalObjectReference{{Name: "pull-a"}, {Name: "pull-b"}}, pod.ImagePullSecrets)
	diff(t, "hostAliases", []corev1.HostAlias{{IP: "10.0.0.2", Hostnames: []string{"kcp.internal"}}}, pod.HostAliases)
	diff(t, "initContainers", []corev1.Container{{Name: "wait", Image: "busybox"}}, pod.InitContainers)
	diff(t, "nodeSelector", map[string]string{"pool": "system"}, pod.NodeSelector)
	diff(t, "tolerations", []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}, pod.Tolerations)
	if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil {
		t.Errorf("affinity = %+v", pod.Affinity)
	}
	if pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName = %q", pod.PriorityClassName)
	}
	diff(t, "topology spread (own labelSelector kept)", []corev1.TopologySpreadConstraint{{
		MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}},
	}}, pod.TopologySpreadConstraints)

	sa := get[corev1.ServiceAccount](t, objs, "ServiceAccount", "custom-sa")
	if sa.Annotations["iam"] != "role" || *sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount = %+v", sa)
	}
	cr := get[rbacv1.ClusterRole](t, objs, "ClusterRole", full+":"+ns)
	last := cr.Rules[len(cr.Rules)-1]
	diff(t, "extra rule", rbacv1.PolicyRule{APIGroups: []string{"example.com"}, Resources: []string{"things"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}, last)
	crb := get[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", full+":"+ns)
	diff(t, "subjects", []rbacv1.Subject{{Kind: "ServiceAccount", Name: "custom-sa", Namespace: ns}}, crb.Subjects)

	svc := get[corev1.Service](t, objs, "Service", full+"-metrics")
	if svc.Annotations["svc"] != "yes" || svc.Spec.Ports[0].Port != 9100 {
		t.Errorf("metrics Service = %+v", svc)
	}
	sm := Find(objs, "ServiceMonitor", full)
	endpoint, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	diff(t, "ServiceMonitor endpoint", []any{map[string]any{
		"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s",
		"relabelings":       []any{map[string]any{"action": "labeldrop", "regex": "pod"}},
		"metricRelabelings": []any{map[string]any{"action": "drop", "regex": "go_.*", "sourceLabels": []any{"__name__"}}},
	}}, endpoint)
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels = %v", sm.GetLabels())
	}
	smSelector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	diff(t, "ServiceMonitor selector", map[string]string{
		"app.kubernetes.io/name": "kcp-api-syncagent", "app.kubernetes.io/instance": "my-agent", "app.kubernetes.io/component": "metrics",
	}, smSelector)
	if svc.Labels["app.kubernetes.io/component"] != "metrics" {
		t.Errorf("the metrics Service lacks the component label the ServiceMonitor selects: %v", svc.Labels)
	}

	rule := Find(objs, "PrometheusRule", full)
	if rule.GetLabels()["role"] != "alert-rules" {
		t.Errorf("PrometheusRule labels = %v", rule.GetLabels())
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	var alerts []string
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			alerts = append(alerts, r.(map[string]any)["alert"].(string))
		}
	}
	// SyncAgentPatrolDrift turned off.
	diff(t, "alerts", []string{
		"SyncAgentDown", "SyncAgentNoLeader", "SyncAgentPublishedResourceNotReady", "SyncAgentSyncErrors", "SyncAgentQueueStuck",
		"SyncAgentNoEndpoint", "SyncAgentSyncControllerFailed", "SyncAgentKubeconfigReloadFailed",
	}, alerts)
	dashboard := get[corev1.ConfigMap](t, objs, "ConfigMap", dashboardConfigMap(ns, full))
	if dashboard.Labels["grafana_dashboard"] != "yes" || dashboard.Annotations["grafana_folder"] != "kcp" {
		t.Errorf("dashboard ConfigMap metadata = %v / %v", dashboard.Labels, dashboard.Annotations)
	}
	var board struct {
		UID    string `json:"uid"`
		Panels []any  `json:"panels"`
	}
	if err := json.Unmarshal([]byte(dashboard.Data["api-syncagent-"+dashboardID(ns, full)+".json"]), &board); err != nil || !strings.HasPrefix(board.UID, "syncagent-") || len(board.Panels) == 0 {
		t.Errorf("the dashboard does not parse as a Grafana dashboard (uid %q, %d panels): %v", board.UID, len(board.Panels), err)
	}

	pdb := get[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", full)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.String() != "50%" || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PDB spec = %+v", pdb.Spec)
	}
	diff(t, "PDB selector", map[string]string{"app.kubernetes.io/name": "kcp-api-syncagent", "app.kubernetes.io/instance": "my-agent"}, pdb.Spec.Selector.MatchLabels)
}
