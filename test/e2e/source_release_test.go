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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestDeletedSourceIsReleased: a consumer deletes a Secret that a Thing
// uses as a kcp-origin related object (an entry without watch, so no change
// of the Secret wakes the Thing's pass). The Secret goes at once, with its
// copy, whatever the Thing's state: synced, no longer matching the
// PublishedResource's filter, or with synchronization disabled.
func TestDeletedSourceIsReleased(t *testing.T) {
	t.Parallel()
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Filter = &syncagentv1alpha1.ResourceFilter{Resource: &metav1.LabelSelector{MatchLabels: map[string]string{"sync": "yes"}}}
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{referencedSecret(syncagentv1alpha1.RelatedResourceOriginKcp)}
	})
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()}, []*syncagentv1alpha1.PublishedResource{pr}, 1)
	ctx := t.Context()
	consumer := ws[0]
	secretGVK := corev1.SchemeGroupVersion.WithKind("Secret")
	for _, name := range []string{"synced", "filtered", "disabled"} {
		framework.Must(t, consumer.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-secret"},
			Data: map[string][]byte{"password": []byte(name)}}), "create a Secret")
		thing := newObject(kcpThing, "default", name, map[string]any{"secretName": name + "-secret"})
		thing.SetLabels(map[string]string{"sync": "yes"})
		framework.Must(t, consumer.Client.Create(ctx, thing), "create a Thing")
	}
	for _, name := range []string{"synced", "filtered", "disabled"} {
		framework.WaitFor(t, syncTimeout, "the agent's finalizer on "+name+"-secret", func(ctx context.Context) (bool, error) {
			got, err := secretFinalizers(ctx, consumer, name+"-secret")
			return slices.Contains(got, agentFinalizer(f)), err
		})
		waitLocal(t, f.Service.Client, secretGVK, consumer.ClusterName, name+"-secret")
	}
	// deleted deletes a Secret and waits until it and its copy are gone.
	deleted := func(name string) {
		t.Helper()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		framework.Must(t, consumer.Client.Delete(ctx, secret), "delete %s", name)
		waitGone(t, consumer.Client, secret, "the consumer's Secret "+name)
		waitGone(t, f.Service.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consumer.ClusterName, Name: name}}, "the copy of "+name)
	}

	// A synced Thing: the Secret's own deletion wakes the release.
	deleted("synced-secret")

	// A Thing that no longer matches the filter.
	filtered := newObject(kcpThing, "default", "filtered", nil)
	framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "filtered"}, filtered), "get the Thing")
	filtered.SetLabels(nil)
	framework.Must(t, consumer.Client.Update(ctx, filtered), "remove the Thing's label")
	deleted("filtered-secret")

	// Synchronization disabled.
	updatePR(t, f, pr.Name, func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Synchronization = &syncagentv1alpha1.SynchronizationSpec{Enabled: false}
	})
	f.Service.WaitForPublishedResource(t, pr.Name, syncTimeout, "SyncDisabled",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSyncDisabled))
	deleted("disabled-secret")
}

// TestDisabledSyncReleases: an agent that synced Things (and holds a
// consumer's Secret as their related source) starts again with its sync
// controller disabled. Nothing of it syncs any more, so it lets go of
// everything it held: the Thing and the Secret lose its finalizer, and the
// PublishedResource its release finalizer, so consumers (and the owner)
// can delete them.
func TestDisabledSyncReleases(t *testing.T) {
	t.Parallel()
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{referencedSecret(syncagentv1alpha1.RelatedResourceOriginKcp)}
	})
	f, ws, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()}, []*syncagentv1alpha1.PublishedResource{pr}, 1)
	ctx := t.Context()
	consumer := ws[0]
	framework.Must(t, consumer.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held"},
		Data: map[string][]byte{"password": []byte("s3cret")}}), "create a Secret")
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "thing", map[string]any{"secretName": "held"})), "create a Thing")
	framework.WaitFor(t, syncTimeout, "the agent's finalizer on the Secret", func(ctx context.Context) (bool, error) {
		got, err := secretFinalizers(ctx, consumer, "held")
		return slices.Contains(got, agentFinalizer(f)), err
	})
	waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)
	agent.Stop(30 * time.Second)

	framework.StartAgent(t, f.AgentArgs("--disabled-controllers=sync")...)
	framework.WaitFor(t, syncTimeout, "the Thing and the Secret released", func(ctx context.Context) (bool, error) {
		thing := newObject(kcpThing, "default", "thing", nil)
		if err := consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "thing"}, thing); err != nil {
			return false, err
		}
		secret, err := secretFinalizers(ctx, consumer, "held")
		return len(thing.GetFinalizers()) == 0 && len(secret) == 0, err
	})
	framework.WaitFor(t, syncTimeout, "the agent's release finalizer gone from the PublishedResource", func(ctx context.Context) (bool, error) {
		got := &syncagentv1alpha1.PublishedResource{}
		if err := f.Service.Client.Get(ctx, types.NamespacedName{Name: pr.Name}, got); err != nil {
			return false, err
		}
		return !slices.Contains(got.Finalizers, keys.ReleaseFinalizer(f.Export.Name+"-syncagent")), nil
	})
	// Consumers can delete what they own.
	thing := newObject(kcpThing, "default", "thing", nil)
	framework.Must(t, consumer.Client.Delete(ctx, thing), "delete the Thing")
	waitGone(t, consumer.Client, thing, "the Thing")
}
