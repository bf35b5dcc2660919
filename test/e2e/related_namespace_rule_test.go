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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestRelatedNamespaceRule: local copies go into the service namespace named
// like the kcp object's namespace, so workspaces share copy namespaces and
// a consumer picks the namespace. A consumer can then not have the agent
// read a Secret there that it did not create: neither one in a namespace
// another workspace's copies share ("default"), nor one in a namespace it
// names by putting its object into the kcp namespace of that name
// ("kube-system"); both are
// refused with an Event and nothing is copied. Namespaces the owner fixed on
// the service side (a template that reads only .Side there) need no
// allow-list: a Secret is read from one ("credentials") and a consumer's
// Secret written into another ("vault-input", created by the agent).
func TestRelatedNamespaceRule(t *testing.T) {
	t.Parallel()
	byRef := func(path string) syncagentv1alpha1.RelatedResourceObjectSpec {
		return syncagentv1alpha1.RelatedResourceObjectSpec{Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: path}}
	}
	fixedOnService := func(value string) *syncagentv1alpha1.RelatedResourceObjectSpec {
		return &syncagentv1alpha1.RelatedResourceObjectSpec{Template: &syncagentv1alpha1.TemplateExpression{
			Template: `{{ if eq .Side "service" }}` + value + `{{ else }}{{ .Object.metadata.namespace }}{{ end }}`}}
	}
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Naming = &syncagentv1alpha1.ResourceNaming{Namespace: "{{ .Object.metadata.namespace }}"}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{
			{Identifier: "credentials", Origin: syncagentv1alpha1.RelatedResourceOriginService, Version: "v1", Resource: "secrets",
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byRef("spec.secretName")}},
			{Identifier: "ca", Origin: syncagentv1alpha1.RelatedResourceOriginService, Version: "v1", Resource: "secrets",
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byRef("spec.caName"), Namespace: fixedOnService("credentials")}},
			{Identifier: "token", Origin: syncagentv1alpha1.RelatedResourceOriginKcp, Version: "v1", Resource: "secrets",
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: byRef("spec.tokenName"), Namespace: fixedOnService("vault-input")}},
		}
	})
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()}, []*syncagentv1alpha1.PublishedResource{pr}, 1)
	ctx := t.Context()
	svc := f.Service.Client
	attacker := ws[0]

	// ConfigValid says that copies of several workspaces can share a
	// namespace, and what that means for the service-origin entry.
	f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, "ConfigValid naming the shared copy namespace", func(p *syncagentv1alpha1.PublishedResource) bool {
		c := findCondition(p, syncagentv1alpha1.ConditionConfigValid)
		return c != nil && c.Reason == syncagentv1alpha1.ReasonAmbiguousConfiguration && strings.Contains(c.Message, "spec.related[0] (origin service)")
	})

	// Secrets the consumer must never see: another tenant's in a shared
	// copy namespace, and the cluster's own in kube-system.
	framework.Must(t, svc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other-tenant"},
		Data: map[string][]byte{"token": []byte("theirs")}}), "create another tenant's Secret")
	framework.Must(t, svc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-admin"},
		Data: map[string][]byte{"token": []byte("root")}}), "create a kube-system Secret")
	// kcp workspaces have a kube-system namespace of their own.
	if err := attacker.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}); !apierrors.IsAlreadyExists(err) {
		framework.Must(t, err, "create kube-system in kcp")
	}
	framework.Must(t, attacker.Client.Create(ctx, newObject(kcpThing, "default", "steal", map[string]any{"secretName": "other-tenant"})), "create a Thing")
	framework.Must(t, attacker.Client.Create(ctx, newObject(kcpThing, "kube-system", "steal", map[string]any{"secretName": "cluster-admin"})), "create a Thing")
	for _, ns := range []string{"default", "kube-system"} {
		framework.WaitFor(t, syncTimeout, "a ReconcilingError Event on "+ns+"/steal", func(ctx context.Context) (bool, error) {
			return namespacedEventReasons(ctx, attacker, ns, "steal")["ReconcilingError"], nil
		})
	}

	// The owner's fixed namespaces work without an allow-list.
	f.Service.CreateNamespace(t, "credentials")
	framework.Must(t, svc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "credentials", Name: "ca"},
		Data: map[string][]byte{"ca.crt": []byte("pem")}}), "create the CA Secret")
	framework.Must(t, attacker.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "token"},
		Data: map[string][]byte{"token": []byte("consumer")}}), "create the consumer's token Secret")
	framework.Must(t, attacker.Client.Create(ctx, newObject(kcpThing, "default", "fixed", map[string]any{"caName": "ca", "tokenName": "token"})), "create a Thing")
	framework.WaitFor(t, syncTimeout, "the CA Secret copied into the workspace", func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		err := getObject(ctx, attacker.Client, s, "default", "ca")
		return err == nil && string(s.Data["ca.crt"]) == "pem", ctrlruntimeclient.IgnoreNotFound(err)
	})
	framework.WaitFor(t, syncTimeout, "the consumer's token in vault-input", func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		err := svc.Get(ctx, types.NamespacedName{Namespace: "vault-input", Name: "token"}, s)
		return err == nil && string(s.Data["token"]) == "consumer", ctrlruntimeclient.IgnoreNotFound(err)
	})

	// Several passes later, nothing of the refused ones was copied.
	time.Sleep(5 * time.Second)
	for _, key := range []types.NamespacedName{{Namespace: "default", Name: "other-tenant"}, {Namespace: "kube-system", Name: "cluster-admin"}} {
		if err := getObject(ctx, attacker.Client, &corev1.Secret{}, key.Namespace, key.Name); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s in the consumer's workspace: err=%v, want NotFound", key, err)
		}
	}
}
