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
// knows ("" if none).
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
			if gvk.Kind == "ConfigMap" && o.GetName() == "kube-root-ca.crt" {
				continue
			}
			return gvk.Kind + " " + o.GetName(), nil
		}
	}
	return "", nil
}
