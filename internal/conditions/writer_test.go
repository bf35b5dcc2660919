package conditions

import (
	"context"
	"testing"

	"github.com/go-logr/logr"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

func newClient(t *testing.T, funcs interceptor.Funcs, objs ...ctrlruntimeclient.Object) ctrlruntimeclient.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := syncagentv1alpha1.AddToScheme(s); err != nil {
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
	w := &Writer{Client: c, Reader: c, FieldOwner: "me", Log: logr.Discard()}
	t.Cleanup(func() { conditionsPruned.Store(false) })

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
