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
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// heredoc matches the manifests of a guide: `<<'EOF'` blocks.
var heredoc = regexp.MustCompile(`(?s)<<'EOF'\n(.*?)\nEOF\n`)

// guideManifests returns the Kubernetes objects of the heredocs in a guide
// under docs/, in order, by kind; heredocs without objects (values files)
// are skipped.
func guideManifests(t *testing.T, guide string) map[string][]*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", guide))
	framework.Must(t, err, "read the guide")
	out := map[string][]*unstructured.Unstructured{}
	for _, m := range heredoc.FindAllSubmatch(data, -1) {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m[1]), 4096)
		for {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			framework.Must(t, err, "decode a manifest of the guide")
			if u.GetKind() != "" {
				out[u.GetKind()] = append(out[u.GetKind()], u)
			}
		}
	}
	return out
}

// TestGettingStarted follows docs/getting-started.md with the manifests the
// guide shows, read from the file so that the guide cannot drift: the
// APIExport, the agent's ServiceAccount and RBAC in kcp, a kubeconfig made
// of the ServiceAccount's token and ca.crt, the CRD and the
// PublishedResource, the consumer's APIBinding, and a Thing whose status
// comes back. (The Helm installation of step 4 is TestChart's part.)
func TestGettingStarted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	manifests := guideManifests(t, "getting-started.md")
	one := func(kind string) *unstructured.Unstructured {
		t.Helper()
		if n := len(manifests[kind]); n != 1 {
			t.Fatalf("the guide has %d %s manifests, want 1", n, kind)
		}
		return manifests[kind][0]
	}
	create := func(c ctrlruntimeclient.Client, where string, objs ...*unstructured.Unstructured) {
		t.Helper()
		for _, obj := range objs {
			framework.Must(t, c.Create(ctx, obj), "create the guide's %s %s in %s", obj.GetKind(), obj.GetName(), where)
		}
	}

	org := testKcp.CreateOrg(t)
	provider := testKcp.CreateWorkspace(t, org.Path, "provider", "universal")
	consumer := testKcp.CreateWorkspace(t, org.Path, "consumer", "universal")

	// 1. and 2.: the APIExport and the agent's identity in the provider workspace.
	export := one("APIExport")
	create(provider.Client, provider.Path, export, one("ServiceAccount"), one("Secret"), one("ClusterRole"))
	create(provider.Client, provider.Path, manifests["ClusterRoleBinding"]...)
	tokenSecret := &corev1.Secret{}
	framework.WaitFor(t, syncTimeout, "the ServiceAccount token", func(ctx context.Context) (bool, error) {
		err := provider.Client.Get(ctx, types.NamespacedName{Namespace: one("Secret").GetNamespace(), Name: one("Secret").GetName()}, tokenSecret)
		return err == nil && len(tokenSecret.Data["token"]) > 0, err
	})
	// The test bed's kcp runs without --root-ca-file, so ca.crt is its
	// loopback CA; the guide then says to use the serving certificate's CA.
	kubeconfig := framework.WriteKubeconfig(t, framework.ArtifactsDir(t), "agent.kubeconfig", &rest.Config{
		Host:            testKcp.BaseURL + "/clusters/" + provider.Path,
		BearerToken:     string(tokenSecret.Data["token"]),
		TLSClientConfig: rest.TLSClientConfig{CAData: testKcp.CAData},
	})

	// 3. and 5.: the CRD and the PublishedResource on the service cluster.
	svc := framework.StartServiceCluster(t)
	svc.CreateNamespace(t, framework.AgentNamespace)
	create(svc.Client, "the service cluster", one("CustomResourceDefinition"))
	framework.WaitFor(t, syncTimeout, "the guide's CRD to be served", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(localThing.GroupVersion().WithKind("ThingList"))
		return true, svc.Client.List(ctx, list)
	})
	pr := one("PublishedResource")
	create(svc.Client, "the service cluster", pr)

	const agentName = "thing-agent"
	framework.StartAgent(t,
		"--kcp-kubeconfig="+kubeconfig,
		"--kubeconfig="+svc.Kubeconfig,
		"--namespace="+framework.AgentNamespace,
		"--apiexportendpointslice-ref="+export.GetName(),
		"--agent-name="+agentName,
		"--log-format=Console",
		"--log-debug",
	)
	// As the guide says: the schema is exported at once, the sync waits for
	// the virtual workspace, which kcp serves once a workspace binds.
	svc.WaitForPublishedResource(t, pr.GetName(), syncTimeout, "ExportReady", exportReady)
	svc.WaitForPublishedResource(t, pr.GetName(), syncTimeout, "NoEndpoints before any binding",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonNoEndpoints))

	// 6.: the consumer binds the export (the guide's path names its own
	// provider workspace).
	binding := one("APIBinding")
	if path, _, _ := unstructured.NestedString(binding.Object, "spec", "reference", "export", "path"); path != "root:provider" {
		t.Fatalf("the guide's APIBinding points to %q, want root:provider", path)
	}
	framework.Must(t, unstructured.SetNestedField(binding.Object, provider.Path, "spec", "reference", "export", "path"), "set the export path")
	create(consumer.Client, consumer.Path, binding)
	framework.WaitFor(t, syncTimeout, "the APIBinding to be bound", func(ctx context.Context) (bool, error) {
		b := &unstructured.Unstructured{}
		b.SetGroupVersionKind(binding.GroupVersionKind())
		if err := consumer.Client.Get(ctx, types.NamespacedName{Name: binding.GetName()}, b); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(b.Object, "status", "phase")
		return phase == "Bound", nil
	})
	svc.WaitForPublishedResource(t, pr.GetName(), syncTimeout, "Ready", framework.HasCondition(syncagentv1alpha1.ConditionReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonReady))

	// 7.: a Thing goes down, its status comes up.
	thing := one("Thing")
	framework.WaitFor(t, syncTimeout, "the consumer to accept the guide's Thing", func(ctx context.Context) (bool, error) {
		err := consumer.Client.Create(ctx, thing.DeepCopy())
		return err == nil, ctrlruntimeclient.IgnoreAlreadyExists(err)
	})
	var local unstructured.Unstructured
	framework.WaitFor(t, syncTimeout, "the local copy with the guide's agent-name label", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(localThing.GroupVersion().WithKind("ThingList"))
		if err := svc.Client.List(ctx, list, ctrlruntimeclient.MatchingLabels{"syncagent.kcp.io/agent-name": agentName}); err != nil || len(list.Items) != 1 {
			return false, err
		}
		local = list.Items[0]
		return true, nil
	})
	if got := local.GetAnnotations()["syncagent.kcp.io/remote-object-name"]; got != thing.GetName() {
		t.Errorf("local copy's remote-object-name = %q, want %q", got, thing.GetName())
	}
	if got, _, _ := unstructured.NestedString(local.Object, "spec", "color"); got != "blue" {
		t.Errorf("local copy's spec.color = %q, want blue", got)
	}
	framework.Must(t, svc.Client.Status().Patch(ctx, &local, ctrlruntimeclient.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Ready"}}`))), "patch the local status")
	kcpThing := &unstructured.Unstructured{}
	kcpThing.SetGroupVersionKind(thing.GroupVersionKind())
	framework.WaitFor(t, syncTimeout, "status.phase Ready in kcp", func(ctx context.Context) (bool, error) {
		if err := consumer.Client.Get(ctx, types.NamespacedName{Namespace: thing.GetNamespace(), Name: thing.GetName()}, kcpThing); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(kcpThing.Object, "status", "phase")
		return phase == "Ready", nil
	})
	framework.WaitFor(t, syncTimeout, "Events about the Thing in the consumer workspace", func(ctx context.Context) (bool, error) {
		return len(namespacedEventReasons(ctx, consumer, thing.GetNamespace(), thing.GetName())) > 0, nil
	})

	// Deleting the Thing deletes the local copy, then releases the Thing.
	framework.Must(t, consumer.Client.Delete(ctx, kcpThing), "delete the Thing")
	framework.WaitFor(t, syncTimeout, "the Thing and its local copy to be gone", func(ctx context.Context) (bool, error) {
		errKcp := consumer.Client.Get(ctx, types.NamespacedName{Namespace: thing.GetNamespace(), Name: thing.GetName()}, kcpThing.DeepCopy())
		errLocal := svc.Client.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}, local.DeepCopy())
		return apierrors.IsNotFound(errKcp) && apierrors.IsNotFound(errLocal), nil
	})
}
