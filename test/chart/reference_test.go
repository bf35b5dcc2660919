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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// referenceValues reads a values file written like the reference chart's
// example and test values (testdata/reference).
func referenceValues(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reference", name))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	return values
}

// TestRender_referenceValues renders values files written for the
// reference chart and checks that they mean the same: the agent's command
// line the reference chart renders (plus our listeners), host aliases,
// extraFlags passed as separate items, and a key the reference's test
// values carry (ignored, with a warning).
func TestRender_referenceValues(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		values := referenceValues(t, "default.yaml")
		objs := render(t, values)
		d := get[appsv1.Deployment](t, objs, "Deployment", fullname)
		diff(t, "args", []string{
			"--namespace=$(POD_NAMESPACE)",
			"--enable-leader-election=true",
			"--apiexport-ref=my-api",
			"--agent-name=$(AGENT_NAME)",
			"--kcp-kubeconfig=/etc/api-syncagent/kcp/kubeconfig",
			"--health-address=:8081",
			"--metrics-address=:8085",
		}, agentContainer(t, d).Args)
		diff(t, "selector", map[string]string{"app.kubernetes.io/name": "kcp-api-syncagent", "app.kubernetes.io/instance": release}, d.Spec.Selector.MatchLabels)
		notes, err := Notes(release, namespace, values)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(notes, "externalHostname is ignored") {
			t.Errorf("NOTES.txt does not warn about the ignored externalHostname:\n%s", notes)
		}
	})

	t.Run("hostaliases", func(t *testing.T) {
		d := get[appsv1.Deployment](t, render(t, referenceValues(t, "hostaliases.yaml")), "Deployment", fullname)
		diff(t, "hostAliases", []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"kcp.example.internal"}}}, d.Spec.Template.Spec.HostAliases)
	})

	t.Run("every reference key", func(t *testing.T) {
		objs := render(t, referenceValues(t, "full.yaml"))
		d := get[appsv1.Deployment](t, objs, "Deployment", "agent-api-syncagent")
		c := agentContainer(t, d)
		diff(t, "args", []string{
			"--namespace=$(POD_NAMESPACE)",
			"--enable-leader-election=true",
			"--apiexportendpointslice-ref=my-slice",
			"--agent-name=$(AGENT_NAME)",
			"--kcp-kubeconfig=/etc/api-syncagent/kcp/kubeconfig",
			"--kubeconfig=/etc/api-syncagent/cluster/kubeconfig",
			"--kubeconfig-host-override=https://kubernetes.default.svc",
			"--kubeconfig-ca-file-override=/etc/ca/ca.crt",
			"--published-resource-selector=team=a",
			"--disabled-controllers=apiexport",
			"--health-address=:8081",
			"--log-format", "Console",
			"--log-debug",
			"--metrics-address=:9090",
		}, c.Args)
		diff(t, "image", "registry.example.com/api-syncagent:v0.6.0", c.Image)
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas = %d, want 3", *d.Spec.Replicas)
		}
		// The metrics listener moved by extraFlags takes the port and the
		// Service with it.
		diff(t, "ports", []corev1.ContainerPort{
			{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		}, c.Ports)
		svc := get[corev1.Service](t, objs, "Service", "agent-api-syncagent-metrics")
		diff(t, "Service ports", []corev1.ServicePort{{Name: "metrics", Port: 9090, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}}, svc.Spec.Ports)
		if Find(objs, "CustomResourceDefinition", "publishedresources.syncagent.kcp.io") != nil {
			t.Error("crds.enabled=false still renders the CRD")
		}
	})
}

// TestRender_listenerFlags: an extraFlags entry that sets --health-address
// or --metrics-address replaces the chart's flag, and the ports, probes and
// metrics Service follow it; an address bound to a host (unreachable from
// outside the Pod) leaves them out, with a warning after the install.
func TestRender_listenerFlags(t *testing.T) {
	for _, tc := range []struct {
		name        string
		extraFlags  []any
		wantArgs    []string // the listener flags among the args
		wantPorts   []int32  // health, metrics (0: none)
		wantProbes  bool
		wantService bool
		wantNotes   string
	}{
		{name: "defaults", wantArgs: []string{"--health-address=:8081", "--metrics-address=:8085"}, wantPorts: []int32{8081, 8085}, wantProbes: true, wantService: true},
		{name: "health moved, separate items", extraFlags: []any{"--health-address", ":9443"}, wantArgs: []string{"--metrics-address=:8085", "--health-address", ":9443"}, wantPorts: []int32{9443, 8085}, wantProbes: true, wantService: true},
		{name: "metrics on all interfaces", extraFlags: []any{"--metrics-address=0.0.0.0:9090"}, wantArgs: []string{"--health-address=:8081", "--metrics-address=0.0.0.0:9090"}, wantPorts: []int32{8081, 9090}, wantProbes: true, wantService: true},
		{name: "metrics on all IPv6 interfaces", extraFlags: []any{"--metrics-address=[::]:9090"}, wantArgs: []string{"--health-address=:8081", "--metrics-address=[::]:9090"}, wantPorts: []int32{8081, 9090}, wantProbes: true, wantService: true},
		{name: "both off, as reference harnesses pass them", extraFlags: []any{"--health-address", "0", "--metrics-address", "0"}, wantArgs: []string{"--health-address", "0", "--metrics-address", "0"}, wantPorts: []int32{0, 0},
			wantNotes: "extraFlags turns --health-address off"},
		{name: "health off by an empty value", extraFlags: []any{"--health-address="}, wantArgs: []string{"--metrics-address=:8085", "--health-address="}, wantPorts: []int32{0, 8085}, wantService: true,
			wantNotes: "extraFlags turns --health-address off"},
		{name: "the last entry wins", extraFlags: []any{"--metrics-address=0", "--metrics-address=:9091"}, wantArgs: []string{"--health-address=:8081", "--metrics-address=0", "--metrics-address=:9091"}, wantPorts: []int32{8081, 9091}, wantProbes: true, wantService: true},
		{name: "metrics on loopback, the reference's default", extraFlags: []any{"--metrics-address=127.0.0.1:8085"}, wantArgs: []string{"--health-address=:8081", "--metrics-address=127.0.0.1:8085"}, wantPorts: []int32{8081, 0}, wantProbes: true,
			wantNotes: "extraFlags binds --metrics-address to a host"},
		{name: "health on a host", extraFlags: []any{"--health-address", "10.0.0.1:8081"}, wantArgs: []string{"--metrics-address=:8085", "--health-address", "10.0.0.1:8081"}, wantPorts: []int32{0, 8085}, wantService: true,
			wantNotes: "extraFlags binds --health-address to a host the kubelet cannot reach"},
		{name: "other flags with the same prefix and a trailing flag without value are not listener flags", extraFlags: []any{"--health-address-foo=1", "--metrics-address"},
			wantArgs: []string{"--health-address=:8081", "--metrics-address=:8085", "--health-address-foo=1", "--metrics-address"}, wantPorts: []int32{8081, 8085}, wantProbes: true, wantService: true},
		{name: "a boolean value as a separate item gets a warning", extraFlags: []any{"--enable-leader-election", false, "--log-debug", 1},
			wantArgs: []string{"--health-address=:8081", "--metrics-address=:8085"}, wantPorts: []int32{8081, 8085}, wantProbes: true, wantService: true,
			wantNotes: `passes "false" after --enable-leader-election as a separate item`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := with(map[string]any{"extraFlags": tc.extraFlags})
			objs := render(t, values)
			c := agentContainer(t, get[appsv1.Deployment](t, objs, "Deployment", fullname))
			var listenerArgs []string
			for i, a := range c.Args {
				if strings.HasPrefix(a, "--health-address") || strings.HasPrefix(a, "--metrics-address") ||
					(i > 0 && (c.Args[i-1] == "--health-address" || c.Args[i-1] == "--metrics-address")) {
					listenerArgs = append(listenerArgs, a)
				}
			}
			diff(t, "listener args", tc.wantArgs, listenerArgs)
			for _, f := range tc.extraFlags {
				if !slices.Contains(c.Args, fmt.Sprint(f)) {
					t.Errorf("extraFlags item %v is not among the args %q", f, c.Args)
				}
			}
			var ports []corev1.ContainerPort
			for i, name := range []string{"health", "metrics"} {
				if tc.wantPorts[i] != 0 {
					ports = append(ports, corev1.ContainerPort{Name: name, ContainerPort: tc.wantPorts[i], Protocol: corev1.ProtocolTCP})
				}
			}
			diff(t, "ports", ports, c.Ports)
			if (c.LivenessProbe != nil) != tc.wantProbes || (c.ReadinessProbe != nil) != tc.wantProbes {
				t.Errorf("liveness probe %v, readiness probe %v; want probes: %v", c.LivenessProbe != nil, c.ReadinessProbe != nil, tc.wantProbes)
			}
			if svc := Find(objs, "Service", fullname+"-metrics"); (svc != nil) != tc.wantService {
				t.Errorf("metrics Service rendered: %v, want %v", svc != nil, tc.wantService)
			}
			notes, err := Notes(release, namespace, values)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNotes != "" && !strings.Contains(notes, tc.wantNotes) {
				t.Errorf("NOTES.txt does not warn %q:\n%s", tc.wantNotes, notes)
			}
			if tc.wantNotes == "" && strings.Contains(notes, "Warning") {
				t.Errorf("NOTES.txt warns without reason:\n%s", notes)
			}
		})
	}

	// A ServiceMonitor needs a metrics Service.
	_, err := Render(release, namespace, with(map[string]any{
		"extraFlags": []any{"--metrics-address=127.0.0.1:8085"},
		"metrics":    map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
	}))
	if err == nil || !strings.Contains(err.Error(), "metrics.serviceMonitor.enabled needs") {
		t.Errorf("error = %v, want the ServiceMonitor to be refused", err)
	}
}
