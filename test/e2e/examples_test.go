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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kcp-syncagent/api-syncagent/internal/preview"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// exampleExpectation is an example's expect.yaml: what a user checks with
// kubectl once the example is applied.
type exampleExpectation struct {
	// LocalNamespace and LocalNamePrefix: where the local copy is
	// ($WORKSPACE: the workspace's logical cluster name).
	LocalNamespace  string `json:"localNamespace"`
	LocalNamePrefix string `json:"localNamePrefix"`
	// Local are fields the local copy has (a subset); Kcp fields the kcp
	// object keeps.
	Local map[string]any `json:"local"`
	Kcp   map[string]any `json:"kcp"`
	// KcpStatus are fields of the kcp object's status once the service
	// reported service-status.yaml; KcpStatusAbsent must not be there.
	KcpStatus       map[string]any `json:"kcpStatus"`
	KcpStatusAbsent []string       `json:"kcpStatusAbsent"`
	// KcpObjects are related objects that must appear in the workspace,
	// with these fields.
	KcpObjects []map[string]any `json:"kcpObjects"`
}

// TestDocsExamples applies every example under docs/examples as the
// publishing guide (docs/publishing.md) describes it: the CRD on the
// service cluster, the PublishedResource, a consumer binding, the kcp
// objects; then, as the service's operator would, the objects and status
// next to the local copy; and checks the example's expect.yaml.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	root := filepath.Join(framework.RepoRoot(), "docs", "examples")
	entries, err := os.ReadDir(root)
	framework.Must(t, err, "read docs/examples")
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			runExample(t, filepath.Join(root, e.Name()))
		})
	}
}

func runExample(t *testing.T, dir string) {
	ctx := t.Context()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, u := range exampleObjects(t, dir, "crd.yaml", false) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		framework.Must(t, fromUnstructured(u, crd), "decode the CRD")
		crds = append(crds, crd)
	}
	prs := exampleObjects(t, dir, "publishedresource.yaml", true)
	pr := &syncagentv1alpha1.PublishedResource{}
	framework.Must(t, fromUnstructured(prs[0], pr), "decode the PublishedResource")
	var expect exampleExpectation
	data, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	framework.Must(t, err, "read expect.yaml")
	framework.Must(t, yaml.UnmarshalStrict(data, &expect), "decode expect.yaml")

	f, ws, agent := syncSetup(t, crds, []*syncagentv1alpha1.PublishedResource{pr}, 1)
	consumer := ws[0]
	kcpObjs := exampleObjects(t, dir, "kcp-objects.yaml", true)
	for _, obj := range kcpObjs {
		framework.Must(t, consumer.Client.Create(ctx, obj), "create %s %s in kcp", obj.GetKind(), obj.GetName())
	}
	primary := kcpObjs[0]

	// The local copy: found by the agent's labels, wherever the naming put it.
	localGVK := schema.GroupVersionKind{Group: pr.Spec.Resource.APIGroup, Kind: pr.Spec.Resource.Kind}
	if len(crds) > 0 {
		localGVK.Version = crds[0].Spec.Versions[0].Name
	} else {
		localGVK.Version = "v1" // the built-in examples use v1 types
	}
	var local *unstructured.Unstructured
	framework.WaitFor(t, syncTimeout, "the local copy", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(localGVK.GroupVersion().WithKind(localGVK.Kind + "List"))
		err := f.Service.Client.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/remote-object-cluster": consumer.ClusterName})
		if err != nil || len(list.Items) != 1 {
			return false, err
		}
		local = &list.Items[0]
		return true, nil
	})
	wantNamespace := strings.ReplaceAll(expect.LocalNamespace, "$WORKSPACE", consumer.ClusterName)
	if wantNamespace == "" || local.GetNamespace() != wantNamespace {
		t.Errorf("the local copy is in namespace %q, want %q (expect.yaml: localNamespace)", local.GetNamespace(), wantNamespace)
	}
	if !strings.HasPrefix(local.GetName(), expect.LocalNamePrefix) {
		t.Errorf("the local copy is named %q, want the prefix %q", local.GetName(), expect.LocalNamePrefix)
	}
	if missing := subset(expect.Local, local.Object); missing != "" {
		t.Errorf("the local copy: %s", missing)
	}
	if len(expect.Kcp) > 0 {
		framework.Must(t, consumer.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(primary), primary), "get the kcp object")
		if missing := subset(expect.Kcp, primary.Object); missing != "" {
			t.Errorf("the kcp object: %s", missing)
		}
	}

	// What the service's operator does next to the local copy.
	for _, obj := range exampleObjects(t, dir, "service-objects.yaml", false) {
		obj.SetNamespace(local.GetNamespace())
		framework.Must(t, f.Service.Client.Create(ctx, obj), "create %s %s on the service cluster", obj.GetKind(), obj.GetName())
	}
	if data, err := os.ReadFile(filepath.Join(dir, "service-status.yaml")); err == nil {
		var reported map[string]any
		framework.Must(t, yaml.Unmarshal(data, &reported), "decode service-status.yaml")
		framework.WaitFor(t, syncTimeout, "the service's status on the local copy", func(ctx context.Context) (bool, error) {
			if err := f.Service.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(local), local); err != nil {
				return false, err
			}
			local.Object["status"] = reported["status"]
			err := f.Service.Client.Status().Update(ctx, local)
			return err == nil, ctrlruntimeclient.IgnoreNotFound(ignoreConflict(err))
		})
	}
	if len(expect.KcpStatus) > 0 {
		framework.WaitFor(t, syncTimeout, "the status in kcp", func(ctx context.Context) (bool, error) {
			if err := consumer.Client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(primary), primary); err != nil {
				return false, err
			}
			status, _ := primary.Object["status"].(map[string]any)
			if subset(expect.KcpStatus, status) != "" {
				return false, nil
			}
			for _, absent := range expect.KcpStatusAbsent {
				if _, ok := status[absent]; ok {
					return false, fmt.Errorf("status.%s reached kcp", absent)
				}
			}
			return true, nil
		})
	}
	for _, want := range expect.KcpObjects {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": want["apiVersion"], "kind": want["kind"]}}
		key := types.NamespacedName{Namespace: fmt.Sprint(want["namespace"]), Name: fmt.Sprint(want["name"])}
		fields := map[string]any{}
		for k, v := range want {
			switch k {
			case "apiVersion", "kind", "namespace", "name":
			default:
				fields[k] = v
			}
		}
		framework.WaitFor(t, syncTimeout, fmt.Sprintf("%s %s in kcp", want["kind"], key), func(ctx context.Context) (bool, error) {
			if err := consumer.Client.Get(ctx, key, u); err != nil {
				return false, ctrlruntimeclient.IgnoreNotFound(err)
			}
			return subset(fields, u.Object) == "", nil
		})
	}
	agent.NoErrors(t)
}

// exampleObjects reads the objects of an example file (as the preview
// reads them); a missing optional file gives none.
func exampleObjects(t *testing.T, dir, name string, required bool) []*unstructured.Unstructured {
	t.Helper()
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !required {
		return nil
	}
	objs, err := preview.ReadObjects(path)
	framework.Must(t, err, "read %s", name)
	return objs
}

// subset reports the first field of want that got does not have with the
// same value ("" if none).
func subset(want, got map[string]any) string {
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			return fmt.Sprintf("no field %s", k)
		}
		if wm, ok := v.(map[string]any); ok {
			gm, ok := g.(map[string]any)
			if !ok {
				return fmt.Sprintf("%s is %v, want an object", k, g)
			}
			if m := subset(wm, gm); m != "" {
				return k + "." + m
			}
			continue
		}
		if fmt.Sprint(v) != fmt.Sprint(g) && !reflect.DeepEqual(v, g) {
			return fmt.Sprintf("%s is %v, want %v", k, g, v)
		}
	}
	return ""
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true)
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
