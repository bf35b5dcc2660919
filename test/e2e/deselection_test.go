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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestDeselectionReleases: a PublishedResource loses the label the agent's
// --published-resource-selector asks for. Its objects in kcp lose the
// agent's finalizer (with ObjectReleased), so consumers can delete them, and
// then the PublishedResource loses the agent's release finalizer. Labelled
// again, it is synced again: its objects get the finalizer back.
func TestDeselectionReleases(t *testing.T) {
	t.Parallel()
	pr := thingsPR()
	pr.Labels = map[string]string{"sync": "yes"}
	f, ws, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{pr}, 1, "--published-resource-selector=sync=yes")
	ctx := t.Context()
	consumer := ws[0]
	framework.Must(t, consumer.Client.Create(ctx, newObject(kcpThing, "default", "kept", map[string]any{"color": "blue"})), "create a Thing")
	waitOnlyCopy(t, f.Service.Client, consumer.ClusterName)
	finalizers := func(ctx context.Context) ([]string, error) {
		obj := newObject(kcpThing, "default", "kept", nil)
		err := consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "kept"}, obj)
		return obj.GetFinalizers(), err
	}
	framework.WaitFor(t, syncTimeout, "the agent's finalizer on the Thing", func(ctx context.Context) (bool, error) {
		got, err := finalizers(ctx)
		return slices.Contains(got, agentFinalizer(f)), err
	})

	setLabel := func(value string) {
		t.Helper()
		got := &syncagentv1alpha1.PublishedResource{}
		framework.Must(t, f.Service.Client.Get(ctx, types.NamespacedName{Name: pr.Name}, got), "get the PublishedResource")
		if value == "" {
			delete(got.Labels, "sync")
		} else {
			got.Labels = map[string]string{"sync": value}
		}
		framework.Must(t, f.Service.Client.Update(ctx, got), "label the PublishedResource")
	}
	setLabel("")
	framework.WaitFor(t, syncTimeout, "the Thing released", func(ctx context.Context) (bool, error) {
		got, err := finalizers(ctx)
		return err == nil && len(got) == 0 && namespacedEventReasons(ctx, consumer, "default", "kept")["ObjectReleased"], err
	})
	framework.WaitFor(t, syncTimeout, "the agent's release finalizer gone from the PublishedResource", func(ctx context.Context) (bool, error) {
		got := &syncagentv1alpha1.PublishedResource{}
		if err := f.Service.Client.Get(ctx, types.NamespacedName{Name: pr.Name}, got); err != nil {
			return false, err
		}
		return !slices.Contains(got.Finalizers, keys.ReleaseFinalizer(f.Export.Name+"-syncagent")), nil
	})

	setLabel("yes")
	framework.WaitFor(t, syncTimeout, "the agent's finalizer back on the Thing", func(ctx context.Context) (bool, error) {
		got, err := finalizers(ctx)
		return slices.Contains(got, agentFinalizer(f)), err
	})
}
