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

// Package emptyns tells whether a namespace of the service cluster holds
// anything but what Kubernetes puts into every namespace. The agent deletes
// a namespace it created only on its word, so it never guesses: a type it
// may not list, or an API group whose discovery failed, makes the answer
// "cannot tell", never "empty". It reads metadata only, a few items of a
// type at most, and writes nothing.
package emptyns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
)

// Verdict is what a check found.
type Verdict struct {
	// Empty: every namespaced type was listed and none holds anything but
	// what Kubernetes puts into every namespace.
	Empty bool
	// Holder names one thing found ("configmaps/settings"), if any.
	Holder string
	// Unknown says why the check cannot tell (a type it may not list, a
	// group whose discovery failed), if it cannot.
	Unknown string
}

// Discovery lists the namespaced types (a discovery client).
type Discovery interface {
	ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error)
}

// Checker checks namespaces through discovery and metadata lists.
type Checker struct {
	Discovery Discovery
	Metadata  metadata.Interface
}

// everyNamespace are the objects Kubernetes itself puts into every
// namespace (the root CA bundle, the default service account), and the CA
// bundles Istio and OpenShift add to every namespace; Events come and go
// on their own.
var everyNamespace = map[schema.GroupResource][]string{
	{Resource: "configmaps"}:                     {"kube-root-ca.crt", "istio-ca-root-cert", "openshift-service-ca.crt"},
	{Resource: "serviceaccounts"}:                {"default"},
	{Resource: "events"}:                         nil,
	{Group: "events.k8s.io", Resource: "events"}: nil,
}

// Check lists every namespaced type that can be listed in ns.
func (c *Checker) Check(ctx context.Context, ns string) (Verdict, error) {
	lists, err := c.Discovery.ServerPreferredNamespacedResources()
	if err != nil {
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &failed) {
			return Verdict{}, fmt.Errorf("failed to discover the namespaced types: %w", err)
		}
		for _, gv := range slices.SortedFunc(maps.Keys(failed.Groups), func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) }) {
			return Verdict{Unknown: fmt.Sprintf("the discovery of %s failed", gv)}, nil
		}
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return Verdict{}, fmt.Errorf("failed to parse group version %q: %w", list.GroupVersion, err)
		}
		for _, r := range list.APIResources {
			if !slices.Contains(r.Verbs, "list") {
				continue
			}
			gr := gv.WithResource(r.Name).GroupResource()
			ignored, always := everyNamespace[gr]
			if always && ignored == nil {
				continue
			}
			// One more than can be ignored: a full list of ignored ones
			// could hide one that is not.
			items, err := c.Metadata.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{Limit: int64(len(ignored) + 1)})
			switch {
			case apierrors.IsForbidden(err):
				return Verdict{Unknown: fmt.Sprintf("the agent may not list %s", gr)}, nil
			case apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
				continue // gone since discovery, or not listable after all
			case err != nil:
				return Verdict{}, fmt.Errorf("failed to list %s in namespace %s: %w", gr, ns, err)
			}
			for _, item := range items.Items {
				if !slices.Contains(ignored, item.Name) {
					return Verdict{Holder: gr.String() + "/" + item.Name}, nil
				}
			}
		}
	}
	return Verdict{Empty: true}, nil
}
