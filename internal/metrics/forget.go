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

package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// perPublishedResource are the vectors with a published_resource label
// whose series go with their PublishedResource (the collectors computed at
// scrape time lose them by themselves).
var perPublishedResource = struct {
	mu   sync.Mutex
	vecs []*prometheus.MetricVec
}{vecs: []*prometheus.MetricVec{
	SyncControllerStarts.MetricVec,
	PatrolRuns.MetricVec, PatrolDriftFound.MetricVec, PatrolRepaired.MetricVec, PatrolDuration.MetricVec,
	SyncOperations.MetricVec, SyncErrors.MetricVec, SyncLatency.MetricVec,
}}

// ForgetWithPublishedResource adds vectors labelled published_resource
// (of other packages) to those ForgetPublishedResource empties.
func ForgetWithPublishedResource(vecs ...*prometheus.MetricVec) {
	perPublishedResource.mu.Lock()
	defer perPublishedResource.mu.Unlock()
	perPublishedResource.vecs = append(perPublishedResource.vecs, vecs...)
}

// ForgetPublishedResource deletes every series of the PublishedResource
// name (deleted, or no longer this agent's), so dashboards and alerts stop
// showing it; it returns how many went.
func ForgetPublishedResource(name string) int {
	perPublishedResource.mu.Lock()
	defer perPublishedResource.mu.Unlock()
	n := 0
	for _, v := range perPublishedResource.vecs {
		n += v.DeletePartialMatch(prometheus.Labels{"published_resource": name})
	}
	return n
}
