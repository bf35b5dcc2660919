//go:build e2e

package e2e

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// eventReasons returns the reasons of the service cluster Events about the
// named (cluster-scoped) PublishedResource; they land in namespace default.
func eventReasons(ctx context.Context, f *framework.Fixture, name string) map[string]bool {
	var events corev1.EventList
	if err := f.Service.Client.List(ctx, &events, ctrlruntimeclient.InNamespace("default")); err != nil {
		return nil
	}
	reasons := map[string]bool{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PublishedResource" && e.InvolvedObject.Name == name {
			reasons[e.Reason] = true
		}
	}
	return reasons
}
