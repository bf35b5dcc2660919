package sync

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// TestPassEventsWhileFenced: a pass records its Events while this replica
// holds the Lease (or runs without leader election), and none while the
// fence is closed, when what it found may be the new leader's work under
// way (seen in the soak: a paused leader, resumed, called the related copy
// the new leader was releasing someone else's).
func TestPassEventsWhileFenced(t *testing.T) {
	held := fence.New(time.Hour, logr.Discard())
	held.Written(time.Now(), true)
	tests := []struct {
		name string
		run  context.Context
		want int
	}{
		{"without leader election", context.Background(), 1},
		{"holding the Lease", fence.NewContext(context.Background(), held), 1},
		{"the fence closed", fence.NewContext(context.Background(), fence.New(time.Hour, logr.Discard())), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(5)
			obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "obj-10"}}
			passEvents(tt.run, rec)(obj, corev1.EventTypeWarning, syncer.ReasonObjectConflict, "The related object cannot be placed.")
			if got := len(drain(rec)); got != tt.want {
				t.Errorf("%d Events recorded, want %d", got, tt.want)
			}
		})
	}
}
