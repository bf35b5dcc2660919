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
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
)

// leaseReleaseTimeout bounds the explicit lease release on shutdown.
const leaseReleaseTimeout = 5 * time.Second

// leaderLock is the agent's leader-election lock with a known identity, so
// that the Lease can be released explicitly on shutdown.
type leaderLock struct {
	resourcelock.Interface
	client    kubernetes.Interface
	namespace string
	name      string
	identity  string
}

func newLeaderLock(cfg *rest.Config, namespace, name string) (*leaderLock, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create leader election client: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("failed to get the hostname: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	// Leader-election Events (became leader, ...) land in the agent's namespace.
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events(namespace)})
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "api-syncagent"})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		return nil, fmt.Errorf("failed to create leader election lock: %w", err)
	}
	return &leaderLock{Interface: lock, client: cs, namespace: namespace, name: name, identity: id}, nil
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
		_, err = l.client.CoordinationV1().Leases(l.namespace).Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
}
