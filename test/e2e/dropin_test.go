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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestOldPublishedResourceCRD runs the agent against the reference's
// PublishedResource CRD, which lacks status.conditions and
// status.observedGeneration (users who install our binary but keep the old
// CRD). The schema is still published and resourceSchemaName written; the
// agent logs one hint and does not keep patching the pruned fields.
func TestOldPublishedResourceCRD(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()

	installReferenceCRD(t, f.Service)
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, f.Service.Client.Create(ctx, publishedResource("things", "example.com", "Thing", func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Projection = &syncagentv1alpha1.ResourceProjection{Group: "kcp.example.com"}
	})), "create PublishedResource")
	agent := framework.StartAgent(t, f.AgentArgs()...)

	pr := f.Service.WaitForPublishedResource(t, "things", schemaTimeout, "resourceSchemaName", func(pr *syncagentv1alpha1.PublishedResource) bool {
		return pr.Status.ResourceSchemaName != ""
	})
	if len(pr.Status.Conditions) != 0 {
		t.Fatalf("conditions were stored although the CRD lacks them: %+v", pr.Status.Conditions)
	}
	framework.WaitFor(t, time.Minute, "the upgrade hint in the log", func(context.Context) (bool, error) {
		return strings.Contains(agent.Logs(), "has no status.conditions"), nil
	})

	// Steady state: no more PATCH requests to the service cluster.
	time.Sleep(3 * time.Second)
	before := metricValue(t, agent, "rest_client_requests_total", `method="PATCH"`)
	time.Sleep(5 * time.Second)
	if after := metricValue(t, agent, "rest_client_requests_total", `method="PATCH"`); after != before {
		t.Errorf("the agent kept patching: %v PATCH requests before, %v after 5s", before, after)
	}
	if n := strings.Count(agent.Logs(), "has no status.conditions"); n != 1 {
		t.Errorf("the upgrade hint was logged %d times, want once", n)
	}
}

// installReferenceCRD turns the service cluster's PublishedResource CRD into
// the reference's: no status.conditions, no status.observedGeneration, no
// printer columns.
func installReferenceCRD(t *testing.T, svc *framework.ServiceCluster) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	framework.Must(t, svc.Client.Get(t.Context(), types.NamespacedName{Name: "publishedresources.syncagent.kcp.io"}, crd), "get PublishedResource CRD")
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	delete(status.Properties, "conditions")
	delete(status.Properties, "observedGeneration")
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = status
	crd.Spec.Versions[0].AdditionalPrinterColumns = nil
	framework.Must(t, svc.Client.Update(t.Context(), crd), "downgrade the PublishedResource CRD")
}
