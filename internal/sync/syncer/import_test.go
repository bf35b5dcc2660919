package syncer

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

// TestSyncer_imported: a service-cluster object imported into kcp is
// claimed first (the kcp object's sync labels, no state), then the kcp
// object is created (annotated with the object's UID), then the import is
// adopted (state recorded). A pass that runs between any two steps finds
// the claimed object (live, where the copies cache lags) and never creates
// a second copy; afterwards the object is the copy where it is, its spec
// kept, and the usual rules hold: a kcp change is merged in, a
// service-side change of another field stays.
func TestSyncer_imported(t *testing.T) {
	ctx := context.Background()
	legacy := typed(localGVK)
	legacy.SetNamespace("prod")
	legacy.SetName("legacy")
	legacy.SetUID("uid-1")
	legacy.SetLabels(map[string]string{keys.ImportInto: cluster, "app": "x"})
	legacy.Object["spec"] = map[string]any{"color": "green", "replicas": int64(3)}
	e := newEnv(t, legacy)
	// The copies cache sees nothing (it lags behind the claim).
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).Build()
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	key := types.NamespacedName{Namespace: "prod", Name: "legacy"}

	obj := typed(remoteGVK)
	obj.SetNamespace("default")
	obj.SetName("imported")
	obj.SetLabels(map[string]string{"app": "x"})
	obj.SetAnnotations(map[string]string{keys.ImportedFrom: "uid-1"})
	obj.SetFinalizers([]string{e.syncer.finalizers().Own})
	obj.Object["spec"] = map[string]any{"color": "green", "replicas": int64(3)}
	p := ImportPrimary(ws, obj)

	local := typed(localGVK)
	if err := e.service.Get(ctx, key, local); err != nil {
		t.Fatal(err)
	}
	if err := e.syncer.ClaimForImport(ctx, local, p); err != nil {
		t.Fatal(err)
	}
	if err := e.kcp.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	// A pass between the creation and the adoption.
	if _, err := e.syncer.Process(ctx, ws, e.getRemote(t, "default", "imported")); err != nil {
		t.Fatal(err)
	}
	e.localCopy(t) // fails if a second copy was created
	if _, err := e.syncer.AdoptImported(ctx, ws, e.getRemote(t, "default", "imported"), key); err != nil {
		t.Fatal(err)
	}
	// Again (an import resumed after a crash): nothing more is written.
	if res, err := e.syncer.AdoptImported(ctx, ws, e.getRemote(t, "default", "imported"), key); err != nil || res.Writes != 0 {
		t.Fatalf("adopting again wrote %d times (%v), want nothing", res.Writes, err)
	}
	if _, err := e.converge(t, "default", "imported"); err != nil {
		t.Fatal(err)
	}
	local = e.localCopy(t)
	if local.GetNamespace() != "prod" || local.GetName() != "legacy" {
		t.Fatalf("the copy is %s/%s, want the imported object prod/legacy", local.GetNamespace(), local.GetName())
	}
	wantLabels := objmeta.Remote{Cluster: cluster, Namespace: "default", Name: "imported"}.Labels("agent")
	wantLabels["app"] = "x"
	wantLabels[keys.ImportInto] = cluster // the controller removes the request
	if diff := cmp.Diff(wantLabels, local.GetLabels()); diff != "" {
		t.Errorf("labels of the imported object (-want +got):\n%s", diff)
	}

	// The service side changes one field, kcp another.
	local.Object["spec"].(map[string]any)["replicas"] = int64(5)
	if err := e.service.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	remote := e.getRemote(t, "default", "imported")
	remote.Object["spec"].(map[string]any)["color"] = "blue"
	if err := e.kcp.Update(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := e.converge(t, "default", "imported"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"color": "blue", "replicas": int64(5)}, e.localCopy(t).Object["spec"]); diff != "" {
		t.Errorf("spec of the imported object after changes on both sides (-want +got):\n%s", diff)
	}
}

// TestSyncer_unclaimForImport: an import whose kcp object could not be
// created leaves the object as it was; an object with state is not
// touched.
func TestSyncer_unclaimForImport(t *testing.T) {
	ctx := context.Background()
	legacy := typed(localGVK)
	legacy.SetNamespace("prod")
	legacy.SetName("legacy")
	legacy.SetLabels(map[string]string{keys.ImportInto: cluster, "app": "x"})
	legacy.SetAnnotations(map[string]string{"note": "keep"})
	e := newEnv(t, legacy)
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	obj := typed(remoteGVK)
	obj.SetNamespace("default")
	obj.SetName("imported")
	p := ImportPrimary(ws, obj)
	key := types.NamespacedName{Namespace: "prod", Name: "legacy"}
	local := typed(localGVK)
	if err := e.service.Get(ctx, key, local); err != nil {
		t.Fatal(err)
	}
	if err := e.syncer.ClaimForImport(ctx, local, p); err != nil {
		t.Fatal(err)
	}
	if err := e.syncer.UnclaimForImport(ctx, local, p); err != nil {
		t.Fatal(err)
	}
	got := e.localCopy(t)
	if diff := cmp.Diff(map[string]string{keys.ImportInto: cluster, "app": "x"}, got.GetLabels()); diff != "" {
		t.Errorf("labels after the claim was undone (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"note": "keep"}, got.GetAnnotations()); diff != "" {
		t.Errorf("annotations after the claim was undone (-want +got):\n%s", diff)
	}
}
