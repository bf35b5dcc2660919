package sync

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

func TestPatrolDelay(t *testing.T) {
	for _, tc := range []struct {
		u    float64
		want time.Duration
	}{
		{0, 9 * time.Minute},
		{0.5, 10 * time.Minute},
		{0.999999, 11 * time.Minute},
	} {
		if got := patrolDelay(10*time.Minute, tc.u).Round(time.Second); got != tc.want {
			t.Errorf("patrolDelay(10m, %v) = %v, want %v", tc.u, got, tc.want)
		}
	}
}

func TestPatrolFindings(t *testing.T) {
	req := func(name string) mcreconcile.Request {
		return mcreconcile.Request{ClusterName: "ws", Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}}
	}
	f := patrolFindings{
		drifted: map[mcreconcile.Request][]string{
			req("a"): {syncer.DriftCopyDiffers, syncer.DriftStatusBehind},
			req("b"): {syncer.DriftCopyDiffers},
		},
		orphans: []orphan{{req: req("c")}},
	}
	want := map[string]int{syncer.DriftCopyDiffers: 2, syncer.DriftStatusBehind: 1, syncer.DriftOrphanCopy: 1}
	if diff := cmp.Diff(want, f.counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if got, want := describeCounts(f.counts()), "2 copy-differs, 1 orphan-copy, 1 status-behind"; got != want {
		t.Errorf("describeCounts = %q, want %q", got, want)
	}
	if got := describeCounts(nil); got != "nothing" {
		t.Errorf("describeCounts(nil) = %q", got)
	}
	if f.empty() || !(patrolFindings{}).empty() {
		t.Error("empty() is wrong")
	}
}

// TestRepairMarks: a mark lasts until a pass ends in line (or the patrol
// pass clears every mark it set), so a repair that needs several passes
// (a write, then a requeue) keeps Repair on for all of them.
func TestRepairMarks(t *testing.T) {
	r := &reconciler{repairs: map[mcreconcile.Request]bool{}}
	a := mcreconcile.Request{ClusterName: "ws", Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: "a"}}}
	b := mcreconcile.Request{ClusterName: "ws", Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: "b"}}}
	if r.repairing(a) {
		t.Fatal("an unmarked object repairs")
	}
	r.markRepair(a)
	r.markRepair(b)
	if !r.repairing(a) || !r.repairing(a) {
		t.Fatal("a mark did not last across passes")
	}
	r.repairDone(a)
	if r.repairing(a) || !r.repairing(b) {
		t.Fatal("repairDone cleared the wrong mark")
	}
	r.clearRepairs()
	if r.repairing(b) || len(r.repairs) != 0 {
		t.Fatal("clearRepairs left marks")
	}
}
