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
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	smdtyped "sigs.k8s.io/structured-merge-diff/v4/typed"

	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// The related types of these tests: core ConfigMaps on both sides, and
// Credentials, example.com on the service cluster and projected to
// kcp.example.com in kcp (both with a status subresource).
var (
	configMapGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	serviceCredGVK   = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Credential"}
	kcpCredGVK       = schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Credential"}
	relatedTypeInfos = map[schema.GroupVersionResource]discovery.TypeInfo{
		{Version: "v1", Resource: "configmaps"}:                            {GVK: configMapGVK, Namespaced: true},
		{Group: "example.com", Version: "v1", Resource: "credentials"}:     {GVK: serviceCredGVK, Namespaced: true, HasStatus: true},
		{Group: "kcp.example.com", Version: "v1", Resource: "credentials"}: {GVK: kcpCredGVK, Namespaced: true, HasStatus: true},
	}
)

const (
	ownFinalizer  = "syncagent.kcp.io/cleanup-agent" // the agent named "agent"
	annotationPfx = "related-resources.syncagent.kcp.io/"
)

// configEntry is a kcp-origin ConfigMap named by spec.configName.
func configEntry() syncagentv1alpha1.RelatedResourceSpec {
	return syncagentv1alpha1.RelatedResourceSpec{
		Identifier: "config", Origin: "kcp", Kind: "ConfigMap",
		Object: referenceTo("spec.configName"),
	}
}

// credsEntry is a service-origin Credential list named by spec.credNames.
func credsEntry() syncagentv1alpha1.RelatedResourceSpec {
	return syncagentv1alpha1.RelatedResourceSpec{
		Identifier: "creds", Origin: "service", Group: "example.com", Version: "v1", Resource: "credentials",
		Projection: &syncagentv1alpha1.RelatedResourceProjection{Group: "kcp.example.com"},
		Object:     referenceTo("spec.credNames"),
	}
}

func referenceTo(path string) syncagentv1alpha1.RelatedResourceObject {
	return syncagentv1alpha1.RelatedResourceObject{RelatedResourceObjectSpec: syncagentv1alpha1.RelatedResourceObjectSpec{
		Reference: &syncagentv1alpha1.RelatedResourceObjectReference{Path: path},
	}}
}

type relatedEnv struct {
	*env
	// log holds the Events as "<Kind> <namespace>/<name>: <reason>".
	log []string
}

type relatedEnvOptions struct {
	// serviceFuncs intercept the service client's calls.
	serviceFuncs            interceptor.Funcs
	rels                    []syncagentv1alpha1.RelatedResourceSpec
	kcpObjects, serviceObjs []ctrlruntimeclient.Object
	// kcpGet, if set, answers the kcp client's Gets of Credentials (or of
	// kcpGetKind); kcpStatus, if set, its status writes first.
	kcpGet     func(key ctrlruntimeclient.ObjectKey) error
	kcpGetKind string
	kcpStatus  func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object) error
	// kcpWrite, if set, answers the kcp client's creates and patches first.
	kcpWrite                 func(obj ctrlruntimeclient.Object) error
	withoutKcpCredStatus     bool // the kcp fake serves Credentials without a status subresource
	kcpCredsWithoutHasStatus bool // discovery reports no status subresource for kcp Credentials
}

func newRelatedEnv(t *testing.T, o relatedEnvOptions) *relatedEnv {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kcpStatus := []ctrlruntimeclient.Object{typed(remoteGVK)}
	if !o.withoutKcpCredStatus {
		kcpStatus = append(kcpStatus, typed(kcpCredGVK))
	}
	e := &relatedEnv{env: &env{
		kcp: fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(kcpStatus...).WithObjects(o.kcpObjects...).
			WithInterceptorFuncs(kcpServer(o.kcpGet, o.kcpGetKind, o.kcpStatus, o.kcpWrite)).Build(),
		service: withAgentIndexes(fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(typed(localGVK), typed(serviceCredGVK)).
			WithObjects(o.serviceObjs...).WithInterceptorFuncs(o.serviceFuncs)).Build(),
	}}
	namer, err := naming.NewNamer(nil)
	if err != nil {
		t.Fatal(err)
	}
	var entries []*related.Entry
	for i := range o.rels {
		kcpGVR, serviceGVR := related.GVRs(&o.rels[i])
		kcpInfo := relatedTypeInfos[kcpGVR]
		if o.kcpCredsWithoutHasStatus && kcpInfo.GVK == kcpCredGVK {
			kcpInfo.HasStatus = false
		}
		entry, err := related.Compile(&o.rels[i],
			related.Type{GVR: kcpGVR, TypeInfo: kcpInfo}, related.Type{GVR: serviceGVR, TypeInfo: relatedTypeInfos[serviceGVR]})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry)
	}
	e.syncer = &Syncer{
		AgentName: "agent", LocalGVK: localGVK, LocalNamespaced: true, StatusSubresource: true,
		Namer:   namer,
		Service: e.service,
		State:   &state.Store{Client: e.service, Namespace: "agent-ns", AgentName: "agent"},
		Warned:  once.NewPerGeneration(),
		Event: func(obj ctrlruntimeclient.Object, _, reason, _ string) {
			e.events = append(e.events, reason)
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			e.log = append(e.log, fmt.Sprintf("%s %s/%s: %s", kind, obj.GetNamespace(), obj.GetName(), reason))
		},
		Related:        entries,
		RelatedService: e.service,
	}
	return e
}

// kcpServer makes the kcp fake behave like a server where it matters for
// ownership: created objects get a UID, a delete with a UID precondition
// of another object conflicts; get (if set) answers Gets of Credentials.
func kcpServer(get func(key ctrlruntimeclient.ObjectKey) error, getKind string, status func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object) error,
	write func(obj ctrlruntimeclient.Object) error) interceptor.Funcs {
	return interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c ctrlruntimeclient.Client, sub string, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.SubResourceUpdateOption) error {
			if status != nil {
				if err := status(ctx, c.(ctrlruntimeclient.WithWatch), obj); err != nil {
					return err
				}
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.CreateOption) error {
			if write != nil {
				if err := write(obj); err != nil {
					return err
				}
			}
			if obj.GetUID() == "" {
				obj.SetUID(uuid.NewUUID())
			}
			recordFieldManager(obj, opts)
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.PatchOption) error {
			if write != nil {
				if err := write(obj); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c ctrlruntimeclient.WithWatch, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.DeleteOption) error {
			do := &ctrlruntimeclient.DeleteOptions{}
			do.ApplyOptions(opts)
			if do.Preconditions != nil && do.Preconditions.UID != nil {
				cur := &unstructured.Unstructured{}
				cur.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
				if err := c.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(obj), cur); err == nil && cur.GetUID() != *do.Preconditions.UID {
					return apierrors.NewConflict(schema.GroupResource{}, obj.GetName(), errors.New("UID precondition failed"))
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, c ctrlruntimeclient.WithWatch, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
			if kind := obj.GetObjectKind().GroupVersionKind().Kind; get != nil && (kind == getKind || getKind == "" && kind == kcpCredGVK.Kind) {
				if err := get(key); err != nil {
					return err
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}
}

// recordFieldManager sets the managedFields an API server records for a
// create: the field owner, or a name from the user agent without one.
func recordFieldManager(obj ctrlruntimeclient.Object, opts []ctrlruntimeclient.CreateOption) {
	co := &ctrlruntimeclient.CreateOptions{}
	co.ApplyOptions(opts)
	manager := co.FieldManager
	if manager == "" {
		manager = "kubectl-create"
	}
	entry := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1"}
	// Every field the create sets is the manager's.
	var u map[string]any
	var err error
	if un, ok := obj.(*unstructured.Unstructured); ok {
		u = un.DeepCopy().Object
	} else {
		u, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	if err == nil {
		delete(u, "apiVersion")
		delete(u, "kind")
		if meta, ok := u["metadata"].(map[string]any); ok {
			u["metadata"] = map[string]any{"labels": meta["labels"], "annotations": meta["annotations"]}
		}
		if tv, err := smdtyped.DeducedParseableType.FromUnstructured(u); err == nil {
			if set, err := tv.ToFieldSet(); err == nil {
				if raw, err := set.ToJSON(); err == nil {
					entry.FieldsV1 = &metav1.FieldsV1{Raw: raw}
				}
			}
		}
	}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{entry})
}

// createPrimary creates the kcp primary default/foo.
func (e *relatedEnv) createPrimary(t *testing.T, spec map[string]any, annotations map[string]string) {
	t.Helper()
	obj := typed(remoteGVK)
	obj.SetNamespace("default")
	obj.SetName("foo")
	obj.SetAnnotations(annotations)
	obj.Object["spec"] = spec
	if err := e.kcp.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// setPrimarySpec sets spec.<field> of the kcp primary.
func (e *relatedEnv) setPrimarySpec(t *testing.T, field string, value any) {
	t.Helper()
	obj := e.getRemote(t, "default", "foo")
	obj.Object["spec"].(map[string]any)[field] = value
	if err := e.kcp.Update(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

func (e *relatedEnv) mustConverge(t *testing.T) int {
	t.Helper()
	writes, err := e.converge(t, "default", "foo")
	if err != nil {
		t.Fatal(err)
	}
	return writes
}

func (e *relatedEnv) assertSteady(t *testing.T) {
	t.Helper()
	if writes := e.mustConverge(t); writes != 0 {
		t.Errorf("a pass over a synced primary made %d writes, want 0", writes)
	}
}

// get returns the object or nil if it does not exist.
func get(t *testing.T, c ctrlruntimeclient.Client, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := typed(gvk)
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return obj
}

func mustGet(t *testing.T, c ctrlruntimeclient.Client, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := get(t, c, gvk, namespace, name)
	if obj == nil {
		t.Fatalf("%s %s/%s does not exist", gvk.Kind, namespace, name)
	}
	return obj
}

func configMap(namespace, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}
}

func credential(gvk schema.GroupVersionKind, namespace, name string, spec, status map[string]any) *unstructured.Unstructured {
	u := typed(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.Object["spec"] = spec
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// relatedStateNames returns the names of the related state Secrets.
func (e *relatedEnv) relatedStateNames(t *testing.T) []string {
	t.Helper()
	var list corev1.SecretList
	if err := e.service.List(t.Context(), &list, ctrlruntimeclient.InNamespace("agent-ns"), ctrlruntimeclient.HasLabels{"syncagent.kcp.io/related-identifier"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

func fooPrimary() state.Primary {
	p := state.Primary{APIVersion: remoteGVK.GroupVersion().String(), Kind: remoteGVK.Kind}
	p.Cluster, p.Namespace, p.Name = cluster, "default", "foo"
	return p
}

// relatedState returns the state Secret name of a related object of default/foo.
func relatedState(identifier, originSide string, origin schema.GroupVersionKind, namespace, name string) string {
	return state.RelatedSecretName(state.Related{Primary: fooPrimary(), RelatedRecord: state.RelatedRecord{
		Identifier: identifier, OriginSide: originSide,
		Origin: state.ObjectRef{APIVersion: origin.GroupVersion().String(), Kind: origin.Kind, Namespace: namespace, Name: name},
	}})
}

func relatedAnnotations(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if strings.HasPrefix(k, annotationPfx) {
			out[k] = v
		}
	}
	return out
}
