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
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// TestRender_objectsFitTheirTypes decodes every rendered object strictly
// into its Go type (unknown or misplaced fields fail), for the defaults and
// for every value set; the ServiceMonitor, whose type is not vendored, is
// checked for its kind only.
func TestRender_objectsFitTheirTypes(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for name, values := range map[string]map[string]any{"defaults": required(), "allValues": allValues(), "switchesOff": switchesOff()} {
		t.Run(name, func(t *testing.T) {
			for _, o := range render(t, values) {
				gvk := o.GroupVersionKind()
				if gvk.Group == "monitoring.coreos.com" {
					continue
				}
				typed, err := scheme.New(gvk)
				if err != nil {
					t.Errorf("%s %s: unknown type: %v", gvk, o.GetName(), err)
					continue
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, typed, true); err != nil {
					t.Errorf("%s %s: %v", gvk.Kind, o.GetName(), err)
				}
			}
		})
	}
}

// TestRender_largeNumbers: values files are decoded into float64; large
// integers must still render as integers (pflag refuses 1e+06 for an int
// flag), and a QPS keeps its fraction.
func TestRender_largeNumbers(t *testing.T) {
	values := required()
	values["sync"] = map[string]any{"workers": float64(1000000)}
	values["rateLimits"] = map[string]any{"kcpQPS": float64(2.5), "kcpBurst": float64(1000000), "serviceQPS": float64(1000000), "serviceBurst": float64(2000000)}
	objs, err := Render("release", "ns", values)
	if err != nil {
		t.Fatal(err)
	}
	d := get[appsv1.Deployment](t, objs, "Deployment", "release-api-syncagent")
	args := strings.Join(agentContainer(t, d).Args, " ")
	for _, want := range []string{"--sync-workers=1000000", "--kcp-qps=2.5", "--kcp-burst=1000000", "--service-burst=2000000"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
}
