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

package syncer

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
)

// TestSyncer_createdNamespaceCarriesMetadata: the namespace the agent
// creates for a copy has the configured labels and annotations from the
// start, next to the agent's own labels.
func TestSyncer_createdNamespaceCarriesMetadata(t *testing.T) {
	e := newEnv(t)
	md, err := nsmeta.Parse([]string{"team=tenants", "tenant={{ .ClusterName }}"}, []string{"example.com/owner=kcp"})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.NamespaceMetadata = md
	e.syncedFoo(t)
	ns := &corev1.Namespace{}
	if err := e.service.Get(context.Background(), types.NamespacedName{Name: cluster}, ns); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{keys.CreatedBy: "agent", keys.CreatedForCluster: cluster, "team": "tenants", "tenant": cluster}, ns.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"example.com/owner": "kcp", keys.NamespaceMetadata: `{"labels":{"team":"tenants","tenant":"abc"},"annotations":{"example.com/owner":"kcp"}}`}, ns.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}
