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

package sync

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// TestPassEventsWhileFenced: a pass's Events are recorded when it ends,
// unless it ended fenced: it failed while the fence was closed (seen in
// the soak: a paused leader, resumed, called the related copy the new
// leader was releasing someone else's) or a write of it was refused.
// A pass that succeeds records its Events whatever the fence says.
func TestPassEventsWhileFenced(t *testing.T) {
	held := fence.New(time.Hour, logr.Discard())
	held.Written(time.Now(), true)
	closed := fence.NewContext(context.Background(), fence.New(time.Hour, logr.Discard()))
	conflict := fmt.Errorf("%w: related Secret ns/token", syncer.ErrConflict)
	tests := []struct {
		name string
		run  context.Context
		err  error
		want int
	}{
		{"failed, without leader election", context.Background(), conflict, 2},
		{"failed, holding the Lease", fence.NewContext(context.Background(), held), conflict, 2},
		{"failed while the fence is closed", closed, conflict, 0},
		{"a write refused by the fence", context.Background(), fmt.Errorf("patch: %w", fence.ErrLeaseNotRenewed), 0},
		{"succeeded while the fence is closed", closed, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(5)
			events := &passEvents{}
			obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "obj-10"}}
			events.record(obj, corev1.EventTypeNormal, syncer.ReasonObjectAccepted, "accepted")
			events.record(obj, corev1.EventTypeWarning, syncer.ReasonObjectConflict, "The related object cannot be placed.")
			if got := len(drain(rec)); got != 0 {
				t.Fatalf("%d Events recorded before the pass ended", got)
			}
			events.flush(tt.run, tt.err, rec)
			got := drain(rec)
			if len(got) != tt.want {
				t.Fatalf("%d Events recorded (%v), want %d", len(got), got, tt.want)
			}
		})
	}
}
