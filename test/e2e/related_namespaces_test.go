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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestRelatedNamespacesStayInside: related objects of the service cluster
// are read only in the local copy's namespace and in the namespaces the
// PublishedResource allows, whatever namespace the consumer's object
// names: kube-system and another workspace's namespace are refused with an
// Event, an allowed one works, and a label selector whose templated key
// renders empty for an object selects nothing (with an Event) instead of
// everything.
func TestRelatedNamespacesStayInside(t *testing.T) {
	t.Parallel()
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{
			{
				Identifier: "creds", Origin: syncagentv1alpha1.RelatedResourceOriginService, Version: "v1", Resource: "secrets",
				Object: syncagentv1alpha1.RelatedResourceObject{
					RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
						Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.secretName"},
					},
					// The consumer names the service-side namespace; in kcp
					// the copy goes to the object's own namespace.
					Namespace: &syncagentv1alpha1.RelatedResourceObjectSpec{
						Template: &syncagentv1alpha1.TemplateExpression{Template: `{{ if eq .Side "kcp" }}{{ .Object.metadata.namespace }}{{ else }}{{ .Object.spec.secretNamespace }}{{ end }}`},
					},
				},
				AllowedNamespaces: []string{"shared-{{ .ClusterName }}"},
			},
			{
				Identifier: "picked", Origin: syncagentv1alpha1.RelatedResourceOriginService, Version: "v1", Resource: "configmaps",
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Selector: &syncagentv1alpha1.RelatedResourceObjectSelector{
						LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"{{ .LocalObject.spec.pick }}": "yes"}},
						Rewrite:       syncagentv1alpha1.RelatedResourceSelectorRewrite{Template: &syncagentv1alpha1.TemplateExpression{Template: "{{ .Value }}"}},
					},
				}},
			},
		}
	})
	f, consumers, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()}, []*syncagentv1alpha1.PublishedResource{pr}, 2)
	consumer, neighbour := consumers[0], consumers[1]
	ctx := t.Context()
	svc := f.Service.Client
	secret := func(namespace, name, token string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{"token": []byte(token)}}
	}

	shared := "shared-" + consumer.ClusterName
	f.Service.CreateNamespace(t, shared)
	f.Service.CreateNamespace(t, neighbour.ClusterName)
	framework.Must(t, svc.Create(ctx, secret(shared, "creds", "allowed")), "create the allowed Secret")
	framework.Must(t, svc.Create(ctx, secret("kube-system", "system-token", "system")), "create a kube-system Secret")
	framework.Must(t, svc.Create(ctx, secret(neighbour.ClusterName, "neighbour-token", "neighbour")), "create the neighbour's Secret")
	// ConfigMaps an empty selector would find in the consumer's namespace.
	f.Service.CreateNamespace(t, consumer.ClusterName)
	framework.Must(t, svc.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: consumer.ClusterName, Name: "internal", Labels: map[string]string{"x": "yes"}}}), "create a ConfigMap")

	things := map[string]map[string]any{
		// "pick" names a label no ConfigMap has: the selector is not empty.
		"allowed":   {"secretName": "creds", "secretNamespace": shared, "pick": "none"},
		"system":    {"secretName": "system-token", "secretNamespace": "kube-system", "pick": "none"},
		"neighbour": {"secretName": "neighbour-token", "secretNamespace": neighbour.ClusterName, "pick": "none"},
		"unpicked":  {"color": "plain"},
	}
	for name, spec := range things {
		framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", name, spec)), "create Thing %s", name)
	}
	framework.WaitFor(t, syncTimeout, "the allowed Secret copied into kcp", func(ctx context.Context) (bool, error) {
		got := &corev1.Secret{}
		if err := getObject(ctx, consumer.Client, got, "default", "creds"); err != nil {
			return false, ctrlruntimeclient.IgnoreNotFound(err)
		}
		return string(got.Data["token"]) == "allowed", nil
	})
	for _, name := range []string{"system", "neighbour", "unpicked"} {
		framework.WaitFor(t, syncTimeout, "a ReconcilingError Event on "+name, func(ctx context.Context) (bool, error) {
			return namespacedEventReasons(ctx, consumer, "default", name)["ReconcilingError"], nil
		})
	}
	framework.WaitFor(t, time.Minute, "the PublishedResource's Event names the refused namespace", func(ctx context.Context) (bool, error) {
		var events corev1.EventList
		if err := svc.List(ctx, &events, ctrlruntimeclient.InNamespace("default")); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == pr.Name && e.Reason == "ReconcilingError" && containsAll(e.Message, `"kube-system"`, "allowedNamespaces") {
				return true, nil
			}
		}
		return false, nil
	})
	// Several passes later, nothing else arrived in the workspace.
	time.Sleep(5 * time.Second)
	var secrets corev1.SecretList
	framework.Must(t, consumer.Client.List(ctx, &secrets), "list Secrets in kcp")
	for _, s := range secrets.Items {
		if token := string(s.Data["token"]); token == "system" || token == "neighbour" {
			t.Errorf("a %s Secret leaked into the consumer workspace as %s/%s", token, s.Namespace, s.Name)
		}
	}
	var configMaps corev1.ConfigMapList
	framework.Must(t, consumer.Client.List(ctx, &configMaps, ctrlruntimeclient.InNamespace("default")), "list ConfigMaps in kcp")
	for _, c := range configMaps.Items {
		if c.Name == "internal" {
			t.Error("an empty selector copied the service's ConfigMap into the consumer workspace")
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
