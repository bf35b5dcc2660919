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

package app

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/retry"

	"github.com/kcp-syncagent/api-syncagent/internal/eventsapi"
	"github.com/kcp-syncagent/api-syncagent/internal/fence"
)

// leaseReleaseTimeout bounds the explicit lease release on shutdown.
const leaseReleaseTimeout = 5 * time.Second

// Leader election timing (controller-runtime's defaults, named because the
// write fence depends on them): another replica takes the Lease over
// leaseDuration after it last saw it change; the leader gives up when it
// could not renew for renewDeadline, and writes only within renewDeadline
// of its last renewal (internal/fence).
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// leaderLock is the agent's leader-election lock with a known identity, so
// that the Lease can be released explicitly on shutdown. It tells the
// fence of every write of the Lease that succeeded.
type leaderLock struct {
	resourcelock.Interface
	client    kubernetes.Interface
	namespace string
	name      string
	identity  string
	fence     *fence.Fence
}

// replicaIdentity names this process: its host (the Pod's name) and a
// random part. It is the Lease holder's identity and part of the user
// agent of every request, so that audit logs tell the replicas apart.
func replicaIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("failed to get the hostname: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// newLeaderLock creates the lock; cfg must not be fenced (the Lease is
// what the fence depends on).
func newLeaderLock(cfg *rest.Config, namespace, name, id string, f *fence.Fence) (*leaderLock, error) {
	cs, err := kubernetes.NewForConfig(ownLimiter(cfg))
	if err != nil {
		return nil, fmt.Errorf("failed to create leader election client: %w", err)
	}
	// Leader-election Events (became leader, ...) land in the agent's namespace.
	broadcaster := eventsapi.NewBroadcaster(&eventsapi.Sink{Client: cs.EventsV1(), Core: cs.CoreV1(), Controller: "api-syncagent", Instance: eventsapi.ReportingInstance()})
	broadcaster.StartRecordingToSink(nil)
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "api-syncagent"})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		return nil, fmt.Errorf("failed to create leader election lock: %w", err)
	}
	return &leaderLock{Interface: lock, client: cs, namespace: namespace, name: name, identity: id, fence: f}, nil
}

// Create and Update tell the fence when a write of the Lease succeeded,
// with the time it was sent.
func (l *leaderLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.fence.Now()
	err := l.Interface.Create(ctx, ler)
	if err == nil {
		l.fence.Written(sent, ler.HolderIdentity == l.identity)
	}
	return err
}

// A write that gives the Lease up closes the fence before it is sent: the
// next leader may take over as soon as it lands.
func (l *leaderLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.fence.Now()
	held := ler.HolderIdentity == l.identity
	if !held {
		l.fence.Written(sent, false)
	}
	err := l.Interface.Update(ctx, ler)
	if err == nil && held {
		l.fence.Written(sent, true)
	}
	return err
}

// release gives the Lease up if this process still holds it. client-go
// releases it on cancel too, but that release fails with a conflict when a
// renewal was in flight; then the next replica would wait for the lease
// to expire.
func (l *leaderLock) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), leaseReleaseTimeout)
	defer cancel()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := l.client.CoordinationV1().Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.identity {
			return nil
		}
		empty, one, now := "", int32(1), metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity = &empty
		lease.Spec.LeaseDurationSeconds = &one
		lease.Spec.AcquireTime = &now
		lease.Spec.RenewTime = &now
		l.fence.Written(l.fence.Now(), false)
		_, err = l.client.CoordinationV1().Leases(l.namespace).Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
}

// fenceWrites puts f (nil without leader election) and the endpoint fences
// of the requests' contexts in front of every write through the configs
// (and the clients made from them later), and f into the returned context,
// where a pass finds it (fence.Closed).
func fenceWrites(ctx context.Context, f *fence.Fence, cfgs ...*rest.Config) context.Context {
	for _, cfg := range cfgs {
		cfg.Wrap(f.Wrap)
	}
	return fence.NewContext(ctx, f)
}
