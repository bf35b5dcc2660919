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

package conditions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/go-logr/logr/funcr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// prCRD is a PublishedResource CRD whose status schema has the given
// properties (the reference's has neither conditions nor
// observedGeneration).
func prCRD(statusProperties ...string) *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{"resourceSchemaName": {Type: "string"}}
	for _, p := range statusProperties {
		props[p] = apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: CRDName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1alpha1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"status": {Type: "object", Properties: props}},
			}},
		}}},
	}
}

// pruningServer plays an API server with the given CRD: a status patch
// keeps only the fields it has. It counts patches and CRD reads.
type pruningServer struct {
	patches, crdReads int
}

func (p *pruningServer) funcs(keepsConditions, keepsObservedGeneration func() bool) interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlruntimeclient.WithWatch, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
			if _, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				p.crdReads++
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c ctrlruntimeclient.Client, sub string, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.SubResourcePatchOption) error {
			p.patches++
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			stored := obj.(*syncagentv1alpha1.PublishedResource)
			if !keepsConditions() {
				stored.Status.Conditions = nil
			}
			if !keepsObservedGeneration() {
				stored.Status.ObservedGeneration = 0
			}
			return c.SubResource(sub).Update(ctx, stored)
		},
	}
}

func newClient(t *testing.T, funcs interceptor.Funcs, objs ...ctrlruntimeclient.Object) ctrlruntimeclient.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&syncagentv1alpha1.PublishedResource{}).
		WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

func schemaReady(status metav1.ConditionStatus) func(*syncagentv1alpha1.PublishedResourceStatus) {
	return func(st *syncagentv1alpha1.PublishedResourceStatus) {
		st.ResourceSchemaName = "v1.things.example.com"
		Apply(st, New(syncagentv1alpha1.ConditionSchemaReady, status, "SchemaAvailable", "ok"), 1)
	}
}

func TestWriter_keepsOtherControllersConditionsOnConflict(t *testing.T) {
	ctx := context.Background()
	pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", Generation: 1}}
	c := newClient(t, interceptor.Funcs{}, pr)

	// Our copy is read before another controller writes its condition.
	stale := &syncagentv1alpha1.PublishedResource{}
	if err := c.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(pr), stale); err != nil {
		t.Fatal(err)
	}
	other := &Writer{Client: c, Reader: c, FieldOwner: "other", Log: logr.Discard()}
	fresh := stale.DeepCopy()
	if err := other.Update(ctx, fresh, func(st *syncagentv1alpha1.PublishedResourceStatus) {
		Apply(st, New(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, "NoEndpoints", "none"), 1)
	}); err != nil {
		t.Fatal(err)
	}

	w := &Writer{Client: c, Reader: c, FieldOwner: "me", Log: logr.Discard()}
	if err := w.Update(ctx, stale, schemaReady(metav1.ConditionTrue)); err != nil {
		t.Fatal(err)
	}

	got := &syncagentv1alpha1.PublishedResource{}
	if err := c.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(pr), got); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, cond := range got.Status.Conditions {
		types[cond.Type] = cond.Reason
	}
	if types[syncagentv1alpha1.ConditionSyncReady] != "NoEndpoints" || types[syncagentv1alpha1.ConditionSchemaReady] != "SchemaAvailable" {
		t.Errorf("conditions = %v, want both controllers' conditions", types)
	}
	if types[syncagentv1alpha1.ConditionReady] != "NoEndpoints" {
		t.Errorf("Ready reason = %q, want it computed from both conditions", types[syncagentv1alpha1.ConditionReady])
	}
}

func TestWriter_writesOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	patches := 0
	pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", Generation: 1}}
	c := newClient(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c ctrlruntimeclient.Client, sub string, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}, pr)
	w := &Writer{Client: c, Reader: c, FieldOwner: "me", Log: logr.Discard()}
	for range 3 {
		if err := w.Update(ctx, pr, schemaReady(metav1.ConditionTrue)); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 1 {
		t.Errorf("patches = %d, want 1", patches)
	}
}

func TestWriter_oldCRDWithoutConditions(t *testing.T) {
	ctx := context.Background()
	patches := 0
	pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", Generation: 1}}
	// The interceptor plays an API server with the reference's CRD: it
	// prunes conditions and observedGeneration.
	c := newClient(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c ctrlruntimeclient.Client, sub string, obj ctrlruntimeclient.Object, patch ctrlruntimeclient.Patch, opts ...ctrlruntimeclient.SubResourcePatchOption) error {
			patches++
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			stored := obj.(*syncagentv1alpha1.PublishedResource)
			stored.Status.Conditions, stored.Status.ObservedGeneration = nil, 0
			return c.SubResource(sub).Update(ctx, stored)
		},
	}, pr)
	// The CRD does not exist here: the write tells.
	w := &Writer{Client: c, Reader: c, FieldOwner: "me", Log: logr.Discard(), Fields: &StatusFields{}}

	if err := w.Update(ctx, pr, schemaReady(metav1.ConditionTrue)); err != nil {
		t.Fatal(err)
	}
	if pr.Status.ResourceSchemaName != "v1.things.example.com" || len(pr.Status.Conditions) != 0 {
		t.Fatalf("status = %+v, want the schema name kept and conditions pruned", pr.Status)
	}
	// Further condition changes must not cause writes.
	for _, s := range []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionTrue} {
		if err := w.Update(ctx, pr, schemaReady(s)); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 1 {
		t.Errorf("patches = %d, want 1 (no write loop against an old CRD)", patches)
	}
}

// TestWriter_readsTheCRDBeforeWriting: with the reference's CRD readable,
// not even the first write of conditions happens (an in-sync restart makes
// no write), the CRD is read once for all writers sharing the record, and
// the hint is logged once. With our CRD, conditions are written and the
// CRD is not read again.
func TestWriter_readsTheCRDBeforeWriting(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		crd         *apiextensionsv1.CustomResourceDefinition
		wantPatches int
		wantHints   int
	}{
		{"the reference's CRD", prCRD(), 0, 1},
		{"our CRD", prCRD("conditions", "observedGeneration"), 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keepsC := strings.Contains(tc.name, "our")
			srv := &pruningServer{}
			c := newClient(t, srv.funcs(func() bool { return keepsC }, func() bool { return keepsC }), tc.crd,
				&syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1}, Status: syncagentv1alpha1.PublishedResourceStatus{ResourceSchemaName: "v1.things.example.com"}},
				&syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 1}, Status: syncagentv1alpha1.PublishedResourceStatus{ResourceSchemaName: "v1.things.example.com"}})
			hints := 0
			log := funcr.New(func(_, args string) {
				if strings.Contains(args, "no status.conditions") {
					hints++
				}
			}, funcr.Options{})
			fields := &StatusFields{}
			for _, name := range []string{"a", "b"} {
				pr := &syncagentv1alpha1.PublishedResource{}
				if err := c.Get(ctx, ctrlruntimeclient.ObjectKey{Name: name}, pr); err != nil {
					t.Fatal(err)
				}
				w := &Writer{Client: c, Reader: c, FieldOwner: "me", Log: log, Fields: fields}
				for range 2 {
					if err := w.Update(ctx, pr, schemaReady(metav1.ConditionTrue)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if srv.patches != tc.wantPatches || srv.crdReads != 1 || hints != tc.wantHints {
				t.Errorf("%d patches, %d CRD reads, %d hints; want %d, 1, %d", srv.patches, srv.crdReads, hints, tc.wantPatches, tc.wantHints)
			}
		})
	}
}

// TestWriter_noticesAnUpgradedCRD: a CRD that pruned conditions is read
// again after prunedRecheck when a condition is to be written; once it has
// them, they are written.
func TestWriter_noticesAnUpgradedCRD(t *testing.T) {
	ctx := context.Background()
	upgraded := false
	srv := &pruningServer{}
	pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", Generation: 1}}
	c := newClient(t, srv.funcs(func() bool { return upgraded }, func() bool { return upgraded }), prCRD(), pr)
	now := time.Now()
	fields := &StatusFields{now: func() time.Time { return now }}
	w := &Writer{Client: c, Reader: c, FieldOwner: "me", Log: logr.Discard(), Fields: fields}
	update := func(s metav1.ConditionStatus) {
		t.Helper()
		if err := w.Update(ctx, pr, schemaReady(s)); err != nil {
			t.Fatal(err)
		}
	}
	update(metav1.ConditionTrue) // writes the schema name only
	if srv.patches != 1 || len(pr.Status.Conditions) != 0 {
		t.Fatalf("%d patches, conditions %v; want the schema name alone", srv.patches, pr.Status.Conditions)
	}

	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, ctrlruntimeclient.ObjectKey{Name: CRDName}, crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec = prCRD("conditions", "observedGeneration").Spec
	if err := c.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	upgraded = true
	update(metav1.ConditionFalse)
	if srv.patches != 1 || srv.crdReads != 2 {
		t.Fatalf("%d patches and %d CRD reads within the re-check time; want 1 and 2 (a Get above)", srv.patches, srv.crdReads)
	}
	now = now.Add(prunedRecheck)
	update(metav1.ConditionFalse)
	if srv.patches != 2 || len(pr.Status.Conditions) == 0 {
		t.Fatalf("%d patches, status %+v; want the conditions written after the upgrade", srv.patches, pr.Status)
	}
}

// TestStatusKeeps: what a CRD's schema keeps of status.
func TestStatusKeeps(t *testing.T) {
	preserve := true
	withVersion := func(name string, schema *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		v := apiextensionsv1.CustomResourceDefinitionVersion{Name: name}
		if schema != nil {
			v.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema}
		}
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v}
		return crd
	}
	for _, tc := range []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		wantC, wOG bool
	}{
		{"ours", prCRD("conditions", "observedGeneration"), true, true},
		{"the reference's", prCRD(), false, false},
		{"only conditions", prCRD("conditions"), true, false},
		{"status preserves unknown fields", withVersion("v1alpha1", &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"status": {Type: "object", XPreserveUnknownFields: &preserve}}}), true, true},
		{"no status, the root preserves unknown fields", withVersion("v1alpha1", &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}), true, true},
		{"no status schema", withVersion("v1alpha1", &apiextensionsv1.JSONSchemaProps{Type: "object"}), false, false},
		{"no schema", withVersion("v1alpha1", nil), true, true},
		{"our version not served", withVersion("v1beta1", &apiextensionsv1.JSONSchemaProps{Type: "object"}), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, og := statusKeeps(tc.crd); c != tc.wantC || og != tc.wOG {
				t.Errorf("keeps conditions %v, observedGeneration %v; want %v, %v", c, og, tc.wantC, tc.wOG)
			}
		})
	}
}

// TestWriter_unreadableCRDIsNotReadOnEveryWrite: a CRD that cannot be read
// (RBAC) is tried again only after prunedRecheck; meanwhile the writes go
// on and tell what is pruned.
func TestWriter_unreadableCRDIsNotReadOnEveryWrite(t *testing.T) {
	ctx := context.Background()
	reads := 0
	pr := &syncagentv1alpha1.PublishedResource{ObjectMeta: metav1.ObjectMeta{Name: "things", Generation: 1}}
	c := newClient(t, interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlruntimeclient.WithWatch, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
			if _, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				reads++
				return apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, CRDName, errors.New("no RBAC"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}, pr)
	now := time.Now()
	w := &Writer{Client: c, Reader: c, FieldOwner: "me", Log: logr.Discard(), Fields: &StatusFields{now: func() time.Time { return now }}}
	for i, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionTrue} {
		if err := w.Update(ctx, pr, schemaReady(s)); err != nil {
			t.Fatal(err)
		}
		if len(pr.Status.Conditions) == 0 {
			t.Fatalf("update %d: no conditions written although the server keeps them", i)
		}
	}
	if reads != 1 {
		t.Errorf("%d reads of the CRD within the re-check time, want 1", reads)
	}
	now = now.Add(prunedRecheck)
	if err := w.Update(ctx, pr, schemaReady(metav1.ConditionFalse)); err != nil {
		t.Fatal(err)
	}
	if reads != 2 {
		t.Errorf("%d reads of the CRD after the re-check time, want 2", reads)
	}
}
