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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// secretFinalizers returns the finalizers of the consumer's Secret.
func secretFinalizers(ctx context.Context, ws *framework.Workspace, name string) ([]string, error) {
	s := &corev1.Secret{}
	if err := getObject(ctx, ws.Client, s, "default", name); err != nil {
		return nil, err
	}
	return s.Finalizers, nil
}

// TestTwoAgentsShareARelatedSecret (reference #172, #117): two agents with
// different agent names and PublishedResources (Things by one, Gadgets by
// the other, in one export) both read a consumer's Secret as a kcp-origin
// related object. Each guards it with a finalizer of its own; when the
// Thing goes, its agent removes only its own finalizer (the other still
// holds the Secret, and its copy stays), and when the Gadget goes too the
// Secret is free and can be deleted.
func TestTwoAgentsShareARelatedSecret(t *testing.T) {
	t.Parallel()
	secretEntry := func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{referencedSecret(syncagentv1alpha1.RelatedResourceOriginKcp)}
	}
	things := thingsPR(secretEntry)
	things.Labels = map[string]string{"agent": "first"}
	gadgets := publishedResource("gadgets", "example.com", "Gadget", secretEntry, func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
		// The other service's copies live in namespaces of their own.
		s.Naming = &syncagentv1alpha1.ResourceNaming{Namespace: "gadgets-{{ .ClusterName }}"}
	})
	gadgets.Labels = map[string]string{"agent": "second"}
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	svc := f.Service.Client
	f.Service.InstallCRD(t, openThingCRD())
	f.Service.InstallCRD(t, openCRD("Gadget"))
	framework.Must(t, svc.Create(ctx, things), "create the Things PublishedResource")
	framework.Must(t, svc.Create(ctx, gadgets), "create the Gadgets PublishedResource")
	framework.StartAgent(t, f.AgentArgs("--published-resource-selector=agent=first")...)
	framework.StartAgent(t, f.AgentArgs("--agent-name=second", "--published-resource-selector=agent=second")...)
	for _, pr := range []string{things.Name, gadgets.Name} {
		f.Service.WaitForPublishedResource(t, pr, schemaTimeout, "ExportReady", exportReady)
	}
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)
	for _, pr := range []string{things.Name, gadgets.Name} {
		f.Service.WaitForPublishedResource(t, pr, syncTimeout, "SyncReady",
			framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	}

	first, second := agentFinalizer(f), keys.CleanupFinalizerOf("second")
	kcpGadget := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"}
	framework.Must(t, consumer.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared"},
		Data: map[string][]byte{"password": []byte("s3cret")}}), "create the shared Secret")
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "thing", map[string]any{"secretName": "shared"})), "create the Thing")
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpGadget, "default", "gadget", map[string]any{"secretName": "shared"})), "create the Gadget")
	framework.WaitFor(t, syncTimeout, "both agents' finalizers on the Secret", func(ctx context.Context) (bool, error) {
		got, err := secretFinalizers(ctx, consumer, "shared")
		return slices.Contains(got, first) && slices.Contains(got, second), err
	})
	waitLocal(t, svc, corev1.SchemeGroupVersion.WithKind("Secret"), consumer.ClusterName, "shared")
	waitLocal(t, svc, corev1.SchemeGroupVersion.WithKind("Secret"), "gadgets-"+consumer.ClusterName, "shared")

	// The Thing goes: its agent lets go of the Secret, the other does not.
	framework.Must(t, consumer.Client.Delete(ctx, newObject(kcpThing, "default", "thing", nil)), "delete the Thing")
	framework.WaitFor(t, syncTimeout, "the first agent's finalizer gone from the Secret", func(ctx context.Context) (bool, error) {
		got, err := secretFinalizers(ctx, consumer, "shared")
		return !slices.Contains(got, first), err
	})
	time.Sleep(5 * time.Second) // passes of both agents go by
	if got, err := secretFinalizers(ctx, consumer, "shared"); err != nil || !slices.Equal(got, []string{second}) {
		t.Errorf("the Secret's finalizers after the Thing went: %v, %v; want only the second agent's %s", got, err, second)
	}
	waitLocal(t, svc, corev1.SchemeGroupVersion.WithKind("Secret"), "gadgets-"+consumer.ClusterName, "shared")

	// The Gadget goes too: the Secret is free and can be deleted.
	framework.Must(t, consumer.Client.Delete(ctx, newObject(kcpGadget, "default", "gadget", nil)), "delete the Gadget")
	framework.WaitFor(t, syncTimeout, "no finalizer left on the Secret", func(ctx context.Context) (bool, error) {
		got, err := secretFinalizers(ctx, consumer, "shared")
		return len(got) == 0, err
	})
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared"}}
	framework.Must(t, consumer.Client.Delete(ctx, shared), "delete the Secret")
	waitGone(t, consumer.Client, shared, "the shared Secret")
}
