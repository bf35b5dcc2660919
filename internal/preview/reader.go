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

package preview

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
)

// recorder records the related resolution's reads and answers them from
// the samples.
type recorder struct {
	samples map[related.Side][]*unstructured.Unstructured
	lookups []string
	// assumed are the objects (namespace/name) read without a sample.
	assumed map[string]bool
}

func (r *recorder) on(side related.Side) ctrlruntimeclient.Reader {
	return sideReader{r: r, side: side}
}

type sideReader struct {
	r    *recorder
	side related.Side
}

func where(side related.Side) string {
	if side == related.SideKcp {
		return "in kcp"
	}
	return "on the service cluster"
}

func (s sideReader) Get(_ context.Context, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, _ ...ctrlruntimeclient.GetOption) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	s.r.lookups = append(s.r.lookups, fmt.Sprintf("get %s %s %s", gvk.Kind, objmeta.QualifiedName(key.Namespace, key.Name), where(s.side)))
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("the preview reads unstructured objects only, not %T", obj)
	}
	for _, sample := range s.r.samples[s.side] {
		if sample.GroupVersionKind().GroupKind() == gvk.GroupKind() && sample.GetNamespace() == key.Namespace && sample.GetName() == key.Name {
			u.Object = sample.DeepCopy().Object
			return nil
		}
	}
	// No sample: assumed to exist, empty.
	s.r.assumed[objmeta.QualifiedName(key.Namespace, key.Name)] = true
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	u.SetGroupVersionKind(gvk)
	return nil
}

func (s sideReader) List(_ context.Context, list ctrlruntimeclient.ObjectList, opts ...ctrlruntimeclient.ListOption) error {
	o := &ctrlruntimeclient.ListOptions{}
	o.ApplyOptions(opts)
	selector := labels.Everything()
	if o.LabelSelector != nil {
		selector = o.LabelSelector
	}
	var gvk schema.GroupVersionKind
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		gvk = l.GroupVersionKind()
		gvk.Kind = gvk.Kind[:len(gvk.Kind)-len("List")]
	case *corev1.NamespaceList:
		gvk = corev1.SchemeGroupVersion.WithKind("Namespace")
	default:
		return fmt.Errorf("the preview lists unstructured objects and namespaces only, not %T", list)
	}
	scope := "in every namespace"
	if o.Namespace != "" {
		scope = "in namespace " + o.Namespace
	}
	s.r.lookups = append(s.r.lookups, fmt.Sprintf("list %s %s with labels %q %s", gvk.Kind, scope, selector.String(), where(s.side)))
	var items []unstructured.Unstructured
	for _, sample := range s.r.samples[s.side] {
		if sample.GroupVersionKind().GroupKind() == gvk.GroupKind() && (o.Namespace == "" || sample.GetNamespace() == o.Namespace) &&
			selector.Matches(labels.Set(sample.GetLabels())) {
			items = append(items, *sample.DeepCopy())
		}
	}
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		l.Items = items
	case *corev1.NamespaceList:
		for _, u := range items {
			l.Items = append(l.Items, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Labels: u.GetLabels()}})
		}
	}
	return nil
}
