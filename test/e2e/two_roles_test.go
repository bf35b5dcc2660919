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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestObjectInTwoRoles: Thing b is a primary and also the kcp-origin
// related object of Thing a (contract §7 #31). Deleting b removes its copy
// and a's related copy of it (a's sync, which runs on a's events only, is
// not waited for) before the shared finalizer goes; nothing of b stays on
// the service cluster, and a keeps syncing.
func TestObjectInTwoRoles(t *testing.T) {
	t.Parallel()
	pr := thingsPR(func(s *syncagentv1alpha1.PublishedResourceSpec) {
		s.Related = []syncagentv1alpha1.RelatedResourceSpec{{
			Identifier: "peer", Origin: syncagentv1alpha1.RelatedResourceOriginKcp,
			Group: kcpThing.Group, Version: kcpThing.Version, Resource: "things",
			Projection: &syncagentv1alpha1.RelatedResourceProjection{Group: localThing.Group},
			Object: syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
				Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: "spec.peer"},
			}},
		}}
	})
	f, consumers, agent := syncSetup(t, []*apiextensionsv1.CustomResourceDefinition{openThingCRD()}, []*syncagentv1alpha1.PublishedResource{pr}, 1)
	consumer := consumers[0]
	ctx := t.Context()

	b := newObject(kcpThing, "default", "b", map[string]any{"color": "blue"})
	framework.Must(t, consumer.Client.Create(ctx, b), "create Thing b")
	a := newObject(kcpThing, "default", "a", map[string]any{"color": "red", "peer": "b"})
	framework.Must(t, consumer.Client.Create(ctx, a), "create Thing a")
	// Two primary copies (by their labels) and a's related copy of b,
	// named b, in the same namespace.
	framework.WaitFor(t, syncTimeout, "two copies and the related copy of b", func(ctx context.Context) (bool, error) {
		copies, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		if err != nil || len(copies) != 2 {
			return false, err
		}
		return getObject(ctx, f.Service.Client, typedObject(localThing), consumer.ClusterName, "b") == nil, nil
	})

	framework.Must(t, consumer.Client.Delete(ctx, b), "delete Thing b")
	// Nothing touches a: b's deletion does a's cleanup for b itself.
	framework.WaitFor(t, syncTimeout, "b gone in kcp with its copy and a's related copy of it; a's copy stays", func(ctx context.Context) (bool, error) {
		if err := getObject(ctx, consumer.Client, typedObject(kcpThing), "default", "b"); !apierrors.IsNotFound(err) {
			return false, ctrlruntimeclient.IgnoreNotFound(err)
		}
		if err := getObject(ctx, f.Service.Client, typedObject(localThing), consumer.ClusterName, "b"); !apierrors.IsNotFound(err) {
			return false, ctrlruntimeclient.IgnoreNotFound(err)
		}
		copies, err := localCopies(ctx, f.Service.Client, consumer.ClusterName)
		return err == nil && len(copies) == 1 && copies[0].GetAnnotations()["syncagent.kcp.io/remote-object-name"] == "a", err
	})
	agent.NoErrors(t)
}

// typedObject returns an empty object of gvk.
func typedObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
