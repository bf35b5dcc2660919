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

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestSyncWorkspaceUnbind: a workspace that deletes its APIBinding has its
// objects' deletion processed (kcp deletes them with the binding, our
// finalizer must not block that), and the other workspace keeps syncing.
func TestSyncWorkspaceUnbind(t *testing.T) {
	t.Parallel()
	f, consumers, _ := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{framework.TestCRD("example.com", "Thing", "v1")},
		[]*syncagentv1alpha1.PublishedResource{thingsPR()}, 2)
	ctx := t.Context()
	stays, leaves := consumers[0], consumers[1]

	for _, ws := range consumers {
		framework.Must(t, ws.Client.Create(ctx, newObject(kcpThing, "default", "before", map[string]any{"color": "blue"})), "create Thing")
		waitCopies(t, f, ws.ClusterName, 1)
	}

	binding := &kcpapisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: f.Export.Name}}
	framework.Must(t, leaves.Client.Delete(ctx, binding), "delete the APIBinding")
	waitGone(t, leaves.Client, binding, "the APIBinding")
	framework.WaitFor(t, syncTimeout, "the unbound workspace's local copy to be deleted", func(ctx context.Context) (bool, error) {
		items, err := localCopies(ctx, f.Service.Client, leaves.ClusterName)
		return len(items) == 0, err
	})

	framework.Must(t, stays.Client.Create(ctx, newObject(kcpThing, "default", "after", map[string]any{"color": "green"})), "create Thing after the unbind")
	waitCopies(t, f, stays.ClusterName, 2)
}
