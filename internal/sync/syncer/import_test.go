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

// TestSyncer_imported: a service-cluster object imported into kcp (a kcp
// object created from it, annotated with its UID) becomes the object's
// copy where it is, not where the naming puts copies; its spec is kept,
// and from then on the usual rules hold: a kcp change is merged in, a
// service-side change of another field stays. A copies cache that has not
// seen the adoption yet must not make a pass create a second copy.
func TestSyncer_imported(t *testing.T) {
	ctx := context.Background()
	legacy := typed(localGVK)
	legacy.SetNamespace("prod")
	legacy.SetName("legacy")
	legacy.SetUID("uid-1")
	legacy.SetLabels(map[string]string{keys.ImportInto: cluster, "app": "x"})
	legacy.Object["spec"] = map[string]any{"color": "green", "replicas": int64(3)}
	e := newEnv(t, legacy)
	// The copies cache sees nothing (it lags behind the adoption).
	e.syncer.Copies = withAgentIndexes(fake.NewClientBuilder()).Build()

	obj := typed(remoteGVK)
	obj.SetNamespace("default")
	obj.SetName("imported")
	obj.SetLabels(map[string]string{"app": "x"})
	obj.SetAnnotations(map[string]string{keys.ImportedFrom: "uid-1"})
	obj.Object["spec"] = map[string]any{"color": "green", "replicas": int64(3)}
	if err := e.kcp.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	ws := Workspace{Client: e.kcp, Cluster: cluster}
	key := types.NamespacedName{Namespace: "prod", Name: "legacy"}
	if _, err := e.syncer.AdoptImported(ctx, ws, obj, key); err != nil {
		t.Fatal(err)
	}
	// Again (an import resumed after a crash): nothing more is written.
	if res, err := e.syncer.AdoptImported(ctx, ws, obj, key); err != nil || res.Writes != 0 {
		t.Fatalf("adopting again wrote %d times (%v), want nothing", res.Writes, err)
	}
	if _, err := e.converge(t, "default", "imported"); err != nil {
		t.Fatal(err)
	}
	local := e.localCopy(t) // fails if a second copy was created
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
