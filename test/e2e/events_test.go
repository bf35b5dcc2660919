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
