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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	applyv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/applyconfiguration/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/sdk/clientset/versioned"
	"github.com/kcp-syncagent/api-syncagent/sdk/informers/externalversions"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestSDKClients is the SDK's example, as a service owner's tooling would
// use it against a running agent: the generated clientset creates a
// PublishedResource, a shared informer's lister reads the conditions the
// agent writes, and an apply configuration sets one field under the
// tool's own field manager without touching the rest.
func TestSDKClients(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := framework.NewFixture(t, testKcp)
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	cs, err := versioned.NewForConfig(f.Service.Config)
	framework.Must(t, err, "the clientset")

	_, err = cs.SyncagentV1alpha1().PublishedResources().Create(ctx, thingsPR(), metav1.CreateOptions{})
	framework.Must(t, err, "create the PublishedResource with the clientset")
	framework.StartAgent(t, f.AgentArgs()...)

	factory := externalversions.NewSharedInformerFactory(cs, 0)
	lister := factory.Syncagent().V1alpha1().PublishedResources().Lister()
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop) // before Shutdown, which waits for the informers to end
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("the informer of %v did not sync", typ)
		}
	}
	framework.WaitFor(t, schemaTimeout, "ExportReady through the lister", func(context.Context) (bool, error) {
		pr, err := lister.Get("things")
		return err == nil && exportReady(pr), err
	})

	// The tool owns one label, applied with its field manager; the spec
	// the clientset created stays as it was.
	apply := applyv1alpha1.PublishedResource("things").WithLabels(map[string]string{"team": "storage"})
	applied, err := cs.SyncagentV1alpha1().PublishedResources().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "sdk-example", Force: true})
	framework.Must(t, err, "apply the label")
	if applied.Spec.Resource.Kind != "Thing" || applied.Labels["team"] != "storage" {
		t.Errorf("after the apply: kind %q, labels %v", applied.Spec.Resource.Kind, applied.Labels)
	}
	framework.WaitFor(t, syncTimeout, "the label through the lister", func(context.Context) (bool, error) {
		pr, err := lister.Get("things")
		return err == nil && pr.Labels["team"] == "storage", err
	})
	list, err := cs.SyncagentV1alpha1().PublishedResources().List(ctx, metav1.ListOptions{LabelSelector: "team=storage"})
	framework.Must(t, err, "list by label")
	if len(list.Items) != 1 || list.Items[0].Name != "things" {
		t.Errorf("listed %d PublishedResources with team=storage, want things", len(list.Items))
	}
}
