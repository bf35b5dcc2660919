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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestSyncer_statusNotServedIsNoVanishedObject: while kcp still serves a
// workspace an earlier schema of the type without a status subresource (a
// binding not moved to the new schema yet), a status write gets a 404 that
// names the object. The object is there: the pass fails (and is retried)
// instead of taking the object for deleted and dropping its status until
// the next change.
func TestSyncer_statusNotServedIsNoVanishedObject(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.syncedFoo(t)
	local := e.localCopy(t)
	local.Object["status"] = map[string]any{"phase": "Ready"}
	if err := e.service.Status().Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	noStatus := interceptor.NewClient(e.kcp.(ctrlruntimeclient.WithWatch), interceptor.Funcs{
		SubResourceUpdate: func(_ context.Context, _ ctrlruntimeclient.Client, sub string, obj ctrlruntimeclient.Object, _ ...ctrlruntimeclient.SubResourceUpdateOption) error {
			return apierrors.NewNotFound(schema.GroupResource{Group: remoteGVK.Group, Resource: "things"}, obj.GetName())
		},
	})
	obj := e.getRemote(t, "default", "foo")
	if _, err := e.syncer.Process(ctx, Workspace{Client: noStatus, Live: e.kcp, Cluster: cluster}, obj); err == nil {
		t.Error("a status write refused with a 404 for an object that exists passed as done")
	}

	// Deleted meanwhile (its finalizer removed by hand): the same 404 is
	// no error, the deletion is the next pass.
	gone := obj.DeepCopy()
	gone.SetFinalizers(nil)
	if err := e.kcp.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := e.syncer.Process(ctx, Workspace{Client: noStatus, Live: e.kcp, Cluster: cluster}, obj); err != nil {
		t.Errorf("a status write for an object deleted meanwhile failed the pass: %v", err)
	}
}
