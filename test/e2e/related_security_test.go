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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// credentialsPR copies the service-side Secret that spec.secretName names,
// once by reference and once by a template that inserts the same value.
func credentialsPR() *syncagentv1alpha1.PublishedResource {
	return thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{
			{
				Identifier: "by-reference", Origin: syncagentv1alpha1.RelatedResourceOriginService, Version: "v1", Resource: "secrets",
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.secretName"},
				}},
			},
			{
				Identifier: "by-template", Origin: syncagentv1alpha1.RelatedResourceOriginService, Version: "v1", Resource: "secrets",
				Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
					Template: &syncagentv1alpha1.TemplateExpression{Template: "{{ .Object.spec.secretName }}"},
				}},
			},
		}
	})
}

// TestRelatedSecurity: a consumer cannot make the agent copy a Secret from
// a namespace that the PublishedResource's rules do not resolve for its
// object, neither through a reference nor through a template.
func TestRelatedSecurity(t *testing.T) {
	t.Parallel()
	f, consumers, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()},
		[]*syncagentv1alpha1.PublishedResource{credentialsPR()}, 1)
	consumer := consumers[0]
	ctx := t.Context()
	svc := f.Service.Client

	// A Secret the consumer must never see, in a namespace of its own.
	f.Service.CreateNamespace(t, "vault")
	framework.Must(t, svc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "vault", Name: "admin"}, Data: map[string][]byte{"token": []byte("root")}}), "create vault Secret")

	// The legitimate case: a Secret in the object's own local namespace.
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "legit", map[string]any{"secretName": "legit-secret"})), "create legit Thing")
	items := waitCopies(t, f, consumer.ClusterName, 1)
	localNS := items[0].GetNamespace()
	framework.Must(t, svc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: localNS, Name: "legit-secret"}, Data: map[string][]byte{"token": []byte("mine")}}), "create legit Secret")
	framework.WaitFor(t, syncTimeout, "the legitimate Secret in kcp", func(ctx context.Context) (bool, error) {
		return true, getObject(ctx, consumer.Client, &corev1.Secret{}, "default", "legit-secret")
	})

	// Attempts: a path into another namespace, a traversal, and a plain
	// name that exists only in another namespace.
	attempts := map[string]string{"slash": "vault/admin", "dots": "../vault/admin", "plain": "admin"}
	for name, secretName := range attempts {
		framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", name, map[string]any{"secretName": secretName})), "create Thing %s", name)
	}
	waitCopies(t, f, consumer.ClusterName, 1+len(attempts))
	for _, name := range []string{"slash", "dots"} {
		framework.WaitFor(t, syncTimeout, "a ReconcilingError Event on "+name, func(ctx context.Context) (bool, error) {
			return namespacedEventReasons(ctx, consumer, "default", name)["ReconcilingError"], nil
		})
	}
	// Give the agent time for several passes, then check nothing leaked.
	time.Sleep(5 * time.Second)
	var secrets corev1.SecretList
	framework.Must(t, consumer.Client.List(ctx, &secrets), "list Secrets in kcp")
	for _, s := range secrets.Items {
		if string(s.Data["token"]) == "root" {
			t.Errorf("the vault Secret leaked into the consumer workspace as %s/%s", s.Namespace, s.Name)
		}
	}
	for _, name := range []string{"admin", "vault", "vault-admin"} {
		if err := getObject(ctx, consumer.Client, &corev1.Secret{}, "default", name); !apierrors.IsNotFound(err) {
			t.Errorf("Secret default/%s in kcp: err=%v, want NotFound", name, err)
		}
	}
}

// waitCopies waits until the workspace's objects have n local copies.
func waitCopies(t *testing.T, f *framework.Fixture, cluster string, n int) []unstructured.Unstructured {
	t.Helper()
	var items []unstructured.Unstructured
	framework.WaitFor(t, syncTimeout, "the local copies", func(ctx context.Context) (bool, error) {
		var err error
		items, err = localCopies(ctx, f.Service.Client, cluster)
		return len(items) == n, err
	})
	return items
}

// TestInvalidMutation: a CEL expression that does not compile gives
// ConfigValid=False (InvalidConfiguration) and SyncReady=False without a
// retry loop, and another PublishedResource keeps syncing.
func TestInvalidMutation(t *testing.T) {
	t.Parallel()
	f, consumers, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 1)
	consumer := consumers[0]
	ctx := t.Context()

	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Gadget", "v1"))
	bad := publishedResource("gadgets", "example.com", "Gadget", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		s.Mutation = &syncagentv1alpha1.ResourceMutationSpec{Spec: []syncagentv1alpha1.ResourceMutation{
			{CEL: &syncagentv1alpha1.ResourceCELMutation{Path: "spec.color", Expression: "self.spec.color +"}},
		}}
	})
	framework.Must(t, f.Service.Client.Create(ctx, bad), "create the bad PublishedResource")
	f.Service.WaitForPublishedResource(t, "gadgets", syncTimeout, "ConfigValid=False",
		framework.HasCondition(syncagentv1alpha1.ConditionConfigValid, metav1.ConditionFalse, syncagentv1alpha1.ReasonInvalidConfiguration))
	f.Service.WaitForPublishedResource(t, "gadgets", syncTimeout, "SyncReady=False",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonControllerStartFailed))

	// The good PublishedResource still syncs.
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "still-works", map[string]any{"color": "green"})), "create Thing")
	waitCopies(t, f, consumer.ClusterName, 1)
	if got := metricValue(t, agent, "sync_agent_sync_controllers"); got != 1 {
		t.Errorf("sync_agent_sync_controllers = %v, want 1 (only the valid PublishedResource)", got)
	}
}
