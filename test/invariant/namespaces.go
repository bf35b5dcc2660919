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

package invariant

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// The labels of a namespace the agent created (ours).
const (
	labelCreatedBy  = "syncagent.kcp.io/created-by"
	labelCreatedFor = "syncagent.kcp.io/created-for-cluster"
)

// RuleGoneNamespace: a namespace the agent created for a workspace that
// no longer binds the export, named after it, with nothing in it, is
// deleted (Checker.CreatedNamespaces).
const RuleGoneNamespace = "no-namespace-of-gone-workspace"

// checkGoneWorkspaces reports Secrets of the Gone workspaces that carry a
// finalizer of the agent: with the workspace's objects gone, no primary
// names them any more.
func (c *Checker) checkGoneWorkspaces(ctx context.Context) ([]Violation, error) {
	var out []Violation
	for _, ws := range c.Gone {
		secrets, err := workspaceSecrets(ctx, ws)
		if err != nil {
			return nil, err
		}
		for i := range secrets {
			s := &secrets[i]
			if c.heldByAgent(s) {
				k := Key{ws.Cluster, s.GetNamespace(), s.GetName()}
				out = append(out, Violation{RuleNoController, k.String(), "no finalizer of this agent: the workspace no longer binds the export", fmt.Sprint(s.GetFinalizers())})
			}
		}
	}
	return out, nil
}

// checkCreatedNamespaces reports the namespaces this agent created for a
// workspace that is not bound any more (not one of Workspaces) whose name
// contains the workspace's logical cluster, that are not being deleted and
// hold neither a copy of a checked resource, nor a Secret, nor a ConfigMap
// other than the root CA bundle (what the checker can tell, not every
// type).
func (c *Checker) checkCreatedNamespaces(ctx context.Context) ([]Violation, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"})
	if err := c.Service.List(ctx, list, ctrlruntimeclient.MatchingLabels{labelCreatedBy: c.AgentName}); err != nil {
		return nil, fmt.Errorf("failed to list the namespaces the agent created: %w", err)
	}
	bound := map[string]bool{}
	for _, ws := range c.Workspaces {
		bound[ws.Cluster] = true
	}
	var out []Violation
	for i := range list.Items {
		ns := &list.Items[i]
		cluster := ns.GetLabels()[labelCreatedFor]
		if cluster == "" || bound[cluster] || !strings.Contains(ns.GetName(), cluster) || ns.GetDeletionTimestamp() != nil {
			continue
		}
		holds, err := c.holdsAnything(ctx, ns.GetName())
		if err != nil {
			return nil, err
		}
		if holds == "" {
			out = append(out, Violation{RuleGoneNamespace, ns.GetName(), "deleted (created for workspace " + cluster + ", which is gone; empty)", "a namespace"})
		}
	}
	return out, nil
}

// holdsAnything names an object in namespace ns of a kind the checker
// knows ("" if none): Secrets, ConfigMaps and the checked local kinds, not
// every type the agent's own check lists (a namespace holding something
// else is judged empty here; the soak puts nothing else there).
func (c *Checker) holdsAnything(ctx context.Context, ns string) (string, error) {
	kinds := []schema.GroupVersionKind{{Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "ConfigMap"}}
	for _, r := range c.Resources {
		kinds = append(kinds, r.Local)
	}
	for _, gvk := range kinds {
		items := &unstructured.UnstructuredList{}
		items.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.Service.List(ctx, items, ctrlruntimeclient.InNamespace(ns)); err != nil {
			return "", fmt.Errorf("failed to list %s in namespace %s: %w", gvk.Kind, ns, err)
		}
		for _, o := range items.Items {
			// A cluster-scoped kind is listed in every namespace.
			if o.GetNamespace() != ns || gvk.Kind == "ConfigMap" && o.GetName() == "kube-root-ca.crt" {
				continue
			}
			return gvk.Kind + " " + o.GetName(), nil
		}
	}
	return "", nil
}
