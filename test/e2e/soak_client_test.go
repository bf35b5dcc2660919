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

//go:build e2e && soak

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
	"github.com/kcp-syncagent/api-syncagent/test/invariant"
)

// soakClient is one consumer or service operator doing random operations.
type soakClient struct {
	rnd     *rand.Rand
	id      int
	w       *soakWorld
	service ctrlruntimeclient.Client
	log     *opLog
}

var soakColors = []string{"red", "green", "blue", "black"}

// step does one random operation on a random kind (things most often);
// failures a user would see as normal (not found, already exists,
// conflicts, a kind not served while the workspace is unbound) are logged
// as such.
func (c *soakClient) step(ctx context.Context) {
	ws := c.w.pick(c.rnd)
	k := soakKinds[[]int{0, 0, 0, 1, 2}[c.rnd.IntN(5)]]
	name := fmt.Sprintf("obj-%d", c.rnd.IntN(soakObjects))
	key := types.NamespacedName{Namespace: k.namespace, Name: name}
	color := soakColors[c.rnd.IntN(len(soakColors))]
	setLabel := func(label, value string) func(*unstructured.Unstructured) error {
		return func(o *unstructured.Unstructured) error {
			labels := o.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			if value == "" {
				delete(labels, label)
			} else {
				labels[label] = value
			}
			o.SetLabels(labels)
			return nil
		}
	}
	var op string
	var err error
	switch n := c.rnd.IntN(100); {
	case n < 22:
		op = "create"
		obj := newObject(k.kcp, k.namespace, name, map[string]any{"color": color})
		if k == soakGadgets && c.rnd.IntN(10) < 7 {
			obj.SetLabels(map[string]string{soakSelectLabel: "yes"})
		}
		err = ws.Client.Create(ctx, obj)
	case n < 35:
		op = "update-spec"
		err = c.update(ctx, ws.Client, k, key, func(o *unstructured.Unstructured) error {
			return unstructured.SetNestedField(o.Object, color, "spec", "color")
		})
	case n < 41:
		op = "add-label"
		err = c.update(ctx, ws.Client, k, key, setLabel("team", color))
	case n < 45:
		op = "remove-label"
		err = c.update(ctx, ws.Client, k, key, setLabel("team", ""))
	case n < 48 && k == soakGadgets:
		op = "select"
		err = c.update(ctx, ws.Client, k, key, setLabel(soakSelectLabel, "yes"))
	case n < 51 && k == soakGadgets:
		op = "deselect"
		err = c.update(ctx, ws.Client, k, key, setLabel(soakSelectLabel, ""))
	case n < 58:
		op = "delete"
		at := time.Now()
		err = ws.Client.Delete(ctx, newObject(k.kcp, k.namespace, name, nil))
		if k == soakWidgets && err == nil {
			c.w.deleted(invariant.Key{Cluster: ws.ClusterName, Name: name}, at)
		}
	case n < 64 && k == soakThings:
		op = "related-create"
		err = c.createToken(ctx, ws.Client, key, color)
	case n < 69 && k == soakThings:
		op = "related-update"
		token := &corev1.Secret{}
		if err = ws.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name + "-token"}, token); err == nil {
			token.Data = map[string][]byte{"token": []byte(color)}
			err = ws.Client.Update(ctx, token)
		}
	case n < 72 && k == soakThings:
		op = "related-delete"
		err = ws.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-token"}})
	case n < 76 && k == soakThings:
		op = "service-related-set"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error { return c.setCreds(ctx, local, color) })
	case n < 78 && k == soakThings:
		op = "service-related-delete"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error {
			return c.service.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: local.GetNamespace(), Name: local.GetName() + "-creds"}})
		})
	case n < 88:
		op = "local-status"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error {
			if err := unstructured.SetNestedField(local.Object, color, "status", "phase"); err != nil {
				return err
			}
			return c.service.Status().Update(ctx, local)
		})
	case n < 96:
		op = "local-operator"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error {
			labels := local.GetLabels()
			labels[soakOperatorLabel] = color
			local.SetLabels(labels)
			if err := unstructured.SetNestedField(local.Object, color, "spec", "v1"); err != nil {
				return err
			}
			if err := c.service.Update(ctx, local); err != nil {
				return err
			}
			c.w.operatorSet(local, color)
			return nil
		})
	default:
		op = "local-delete"
		err = c.local(ctx, ws, k, name, func(local *unstructured.Unstructured) error { return c.service.Delete(ctx, local) })
	}
	result := "ok"
	switch {
	case err == nil:
	case apierrors.IsNotFound(err), apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		result = string(apierrors.ReasonForError(err))
	case meta.IsNoMatchError(err):
		result = "NoMatch"
	case ctx.Err() != nil:
		result = "cut off by the end of the run"
	default:
		result = "error: " + err.Error()
	}
	c.log.add("%s client=%d ws=%s %s %s color=%s: %s", op, c.id, ws.ClusterName, k.pr, name, color, result)
}

// createToken creates the related Secret of a primary, owned by it (the
// entry watches by owner).
func (c *soakClient) createToken(ctx context.Context, cl ctrlruntimeclient.Client, key types.NamespacedName, value string) error {
	owner := newObject(kcpThing, key.Namespace, key.Name, nil)
	if err := cl.Get(ctx, key, owner); err != nil {
		return err
	}
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-token", Labels: map[string]string{soakTokenLabel: "yes"}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: kcpThing.GroupVersion().String(), Kind: kcpThing.Kind, Name: owner.GetName(), UID: owner.GetUID(),
		}}},
		Data: map[string][]byte{"token": []byte(value)},
	}
	return cl.Create(ctx, token)
}

// setCreds creates or changes the service-origin Secret next to a local
// copy, owned by it (the entry watches by owner).
func (c *soakClient) setCreds(ctx context.Context, local *unstructured.Unstructured, value string) error {
	creds := &corev1.Secret{}
	err := c.service.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName() + "-creds"}, creds)
	if err == nil {
		creds.Data = map[string][]byte{"password": []byte(value)}
		return c.service.Update(ctx, creds)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	creds = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: local.GetNamespace(), Name: local.GetName() + "-creds", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: localThing.GroupVersion().String(), Kind: localThing.Kind, Name: local.GetName(), UID: local.GetUID(),
		}}},
		Data: map[string][]byte{"password": []byte(value)},
	}
	return c.service.Create(ctx, creds)
}

func (c *soakClient) update(ctx context.Context, cl ctrlruntimeclient.Client, k soakKind, key types.NamespacedName, change func(*unstructured.Unstructured) error) error {
	o := newObject(k.kcp, key.Namespace, key.Name, nil)
	if err := cl.Get(ctx, key, o); err != nil {
		return err
	}
	if err := change(o); err != nil {
		return err
	}
	return cl.Update(ctx, o)
}

// local changes the local copy of a workspace's object, if there is one.
func (c *soakClient) local(ctx context.Context, ws *framework.Workspace, k soakKind, name string, change func(*unstructured.Unstructured) error) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.local.GroupVersion().WithKind(k.local.Kind + "List"))
	if err := c.service.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-cluster": ws.ClusterName}); err != nil {
		return err
	}
	for i := range list.Items {
		if list.Items[i].GetAnnotations()["syncagent.kcp.io/remote-object-name"] == name {
			return change(&list.Items[i])
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: k.local.Group, Resource: strings.ToLower(k.local.Kind) + "s"}, name)
}
