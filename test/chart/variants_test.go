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
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRender_variants covers the values whose effect depends on others.
func TestRender_variants(t *testing.T) {
	t.Run("switches off", func(t *testing.T) {
		objs := render(t, switchesOff())
		c := agentContainer(t, get[appsv1.Deployment](t, objs, "Deployment", fullname))
		if c.Args[len(c.Args)-1] != "--metrics-address=0" {
			t.Errorf("args = %v, want the metrics listener off", c.Args)
		}
		diff(t, "ports", []corev1.ContainerPort{{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}}, c.Ports)
		d := get[appsv1.Deployment](t, objs, "Deployment", fullname)
		if d.Spec.Template.Spec.ServiceAccountName != "default" {
			t.Errorf("serviceAccountName = %q, want default", d.Spec.Template.Spec.ServiceAccountName)
		}
		diff(t, "rendered objects", []string{"CustomResourceDefinition publishedresources.syncagent.kcp.io", "Deployment syncagent/" + fullname}, inventory(objs))
		if !slices.Contains(c.Args, "--enable-leader-election=false") || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("leader election off: args %v, strategy %q, want --enable-leader-election=false and Recreate", c.Args, d.Spec.Strategy.Type)
		}
	})
	t.Run("metrics on, Service off", func(t *testing.T) {
		objs := render(t, with(map[string]any{"metrics": map[string]any{"service": map[string]any{"enabled": false}}}))
		if Find(objs, "Service", fullname+"-metrics") != nil {
			t.Error("metrics Service rendered with metrics.service.enabled=false")
		}
	})
	t.Run("legacy apiExportName renders --apiexport-ref", func(t *testing.T) {
		objs := render(t, map[string]any{"kcpKubeconfig": "kc", "apiExportName": "legacy"})
		c := agentContainer(t, get[appsv1.Deployment](t, objs, "Deployment", fullname))
		if c.Args[2] != "--apiexport-ref=legacy" {
			t.Errorf("args = %v", c.Args)
		}
	})
	t.Run("the endpoint slice wins over apiExportName", func(t *testing.T) {
		objs := render(t, with(map[string]any{"apiExportName": "legacy"}))
		c := agentContainer(t, get[appsv1.Deployment](t, objs, "Deployment", fullname))
		if c.Args[2] != "--apiexportendpointslice-ref=my-export" || slices.Contains(c.Args, "--apiexport-ref=legacy") {
			t.Errorf("args = %v", c.Args)
		}
	})
	t.Run("CRD without keep", func(t *testing.T) {
		objs := render(t, with(map[string]any{"crds": map[string]any{"keep": false}}))
		crd := Find(objs, "CustomResourceDefinition", "publishedresources.syncagent.kcp.io")
		if _, ok := crd.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("annotations = %v", crd.GetAnnotations())
		}
	})
	t.Run("created namespaces kept", func(t *testing.T) {
		objs := render(t, with(map[string]any{"deleteCreatedNamespaces": false}))
		c := agentContainer(t, get[appsv1.Deployment](t, objs, "Deployment", fullname))
		if !slices.Contains(c.Args, "--delete-created-namespaces=false") {
			t.Errorf("args = %v, want the deletion of created namespaces off", c.Args)
		}
		cr := get[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+":syncagent")
		patchNamespaces := false
		for _, r := range cr.Rules {
			if slices.Contains(r.Verbs, "delete") || slices.Contains(r.Resources, "*") {
				t.Errorf("ClusterRole rule %+v with deleteCreatedNamespaces=false, want neither delete nor a list of every type", r)
			}
			patchNamespaces = patchNamespaces || (slices.Contains(r.Resources, "namespaces") && slices.Contains(r.Verbs, "patch"))
		}
		if !patchNamespaces {
			t.Error("no patch on namespaces with deleteCreatedNamespaces=false: namespaceMetadata and the deletion mark need it")
		}
	})
	t.Run("imports", func(t *testing.T) {
		for _, on := range []bool{false, true} {
			objs := render(t, with(map[string]any{"enableImports": on}))
			c := agentContainer(t, get[appsv1.Deployment](t, objs, "Deployment", fullname))
			if slices.Contains(c.Args, "--enable-imports") != on {
				t.Errorf("enableImports=%v: args = %v", on, c.Args)
			}
			cr := get[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+":syncagent")
			events := false
			for _, r := range cr.Rules {
				events = events || (slices.Contains(r.Resources, "events") && slices.Contains(r.Verbs, "create"))
			}
			if events != on {
				t.Errorf("enableImports=%v: the ClusterRole grants creating Events everywhere: %v (the import's Events go into the object's namespace)", on, events)
			}
		}
	})
	t.Run("no RBAC", func(t *testing.T) {
		for _, o := range render(t, with(map[string]any{"rbac": map[string]any{"create": false}})) {
			if strings.HasPrefix(o.GetAPIVersion(), "rbac.") {
				t.Errorf("rendered %s %s with rbac.create=false", o.GetKind(), o.GetName())
			}
		}
	})
	t.Run("existing ServiceAccount", func(t *testing.T) {
		objs := render(t, with(map[string]any{"serviceAccount": map[string]any{"create": false}}))
		if Find(objs, "ServiceAccount", "default") != nil || Find(objs, "ServiceAccount", fullname) != nil {
			t.Error("a ServiceAccount was rendered with serviceAccount.create=false")
		}
		d := get[appsv1.Deployment](t, objs, "Deployment", fullname)
		if d.Spec.Template.Spec.ServiceAccountName != "default" {
			t.Errorf("serviceAccountName = %q, want default", d.Spec.Template.Spec.ServiceAccountName)
		}
	})
	t.Run("the release namespace is default", func(t *testing.T) {
		objs, err := Render(release, "default", required())
		if err != nil {
			t.Fatal(err)
		}
		var roles int
		for _, o := range objs {
			if o.GetKind() == "Role" {
				roles++
			}
		}
		if roles != 1 || Find(objs, "Role", fullname) == nil {
			t.Errorf("want only the namespace Role, got %v", inventory(objs))
		}
	})
	t.Run("names", func(t *testing.T) {
		for _, tc := range []struct {
			release string
			values  map[string]any
			want    string
		}{
			{"prod", nil, "prod-api-syncagent"},
			{"api-syncagent-prod", nil, "api-syncagent-prod"},
			{"prod", map[string]any{"nameOverride": "agent"}, "prod-agent"},
			{"prod", map[string]any{"fullnameOverride": "sync"}, "sync"},
		} {
			objs, err := Render(tc.release, namespace, with(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			if Find(objs, "Deployment", tc.want) == nil {
				t.Errorf("release %q with %v: want Deployment %q, got %v", tc.release, tc.values, tc.want, inventory(objs))
			}
		}
	})
}

// TestRender_errors: values that the templates refuse with a clear message.
func TestRender_errors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no kcp kubeconfig", map[string]any{"apiExportName": "x"}, "kcpKubeconfig"},
		{"no ref", map[string]any{"kcpKubeconfig": "kc"}, "either apiExportEndpointSliceName or apiExportName must be set"},
		{"ServiceMonitor without metrics", with(map[string]any{
			"metrics": map[string]any{"enabled": false, "serviceMonitor": map[string]any{"enabled": true}},
		}), "metrics.serviceMonitor.enabled needs metrics.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(release, namespace, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestSchema_rejectsBadValues: values.schema.json turns typos and wrong
// types into errors at install time.
func TestSchema_rejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"typo at the top level", map[string]any{"replica": 3}, "replica"},
		{"typo in a nested key", map[string]any{"image": map[string]any{"tga": "v1"}}, "tga"},
		{"typo in the probes", map[string]any{"livenessProbe": map[string]any{"periodSecond": 3}}, "periodSecond"},
		{"typo in resources", map[string]any{"resources": map[string]any{"limit": map[string]any{"cpu": "1"}}}, "limit"},
		{"replicas as a string", map[string]any{"replicas": "two"}, "replicas"},
		{"leader election as a string", map[string]any{"enableLeaderElection": "yes"}, "enableLeaderElection"},
		{"unknown controller", map[string]any{"disabledControllers": []any{"syncer"}}, "disabledControllers"},
		{"patrol interval not a duration", map[string]any{"patrol": map[string]any{"interval": "10 minutes"}}, "interval"},
		{"unknown patrol mode", map[string]any{"patrol": map[string]any{"mode": "fix"}}, "mode"},
		{"unknown event level", map[string]any{"sync": map[string]any{"eventLevel": "Warnings"}}, "eventLevel"},
		{"negative workers", map[string]any{"sync": map[string]any{"workers": -1}}, "workers"},
		{"QPS as a string", map[string]any{"rateLimits": map[string]any{"kcpQPS": "fast"}}, "kcpQPS"},
		{"agent name not DNS-1035", map[string]any{"agentName": "My_Agent"}, "agentName"},
		{"port out of range", map[string]any{"metrics": map[string]any{"port": 70000}}, "port"},
		{"extra flags as a string", map[string]any{"extraFlags": "--log-debug"}, "extraFlags"},
		{"extra rule without verbs", map[string]any{"rbac": map[string]any{"extraRules": []any{map[string]any{"apiGroups": []any{"x"}, "resources": []any{"y"}}}}}, "verbs"},
		{"labels must be strings", map[string]any{"extraLabels": map[string]any{"n": 1}}, "extraLabels"},
		{"bad pull policy", map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(release, namespace, with(tc.values))
			if err == nil {
				t.Fatal("the values were accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not name %q:\n%v", tc.want, err)
			}
		})
	}
}
