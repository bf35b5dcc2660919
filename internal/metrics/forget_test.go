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
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestForgetPublishedResource: after the forget, no series of the
// agent's registry names the PublishedResource; another's stay.
func TestForgetPublishedResource(t *testing.T) {
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_forget_total", Help: "test"}, []string{"published_resource"})
	ForgetWithPublishedResource(other.MetricVec)
	for _, pr := range []string{"gone", "stays"} {
		SyncControllerStarts.WithLabelValues(pr).Inc()
		PatrolRuns.WithLabelValues(pr).Inc()
		PatrolDriftFound.WithLabelValues(pr, "copy-missing").Inc()
		PatrolRepaired.WithLabelValues(pr, "copy-missing").Inc()
		PatrolDuration.WithLabelValues(pr).Observe(1)
		SyncOperations.WithLabelValues(pr, "create", "success").Inc()
		SyncErrors.WithLabelValues(pr, "Forbidden").Inc()
		SyncLatency.WithLabelValues(pr, "down").Observe(0.1)
		other.WithLabelValues(pr).Inc()
	}
	if n := ForgetPublishedResource("gone"); n != 9 {
		t.Errorf("forgot %d series, want 9", n)
	}
	families, err := ctrlmetrics.Registry.(prometheus.Gatherer).Gather()
	if err != nil {
		t.Fatal(err)
	}
	stays := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "published_resource" {
					continue
				}
				switch l.GetValue() {
				case "gone":
					t.Errorf("%s still has a series of the forgotten PublishedResource", f.GetName())
				case "stays":
					stays++
				}
			}
		}
	}
	if stays < 8 {
		t.Errorf("%d series of the other PublishedResource in the registry, want at least 8", stays)
	}
	if got := testutil.ToFloat64(other.WithLabelValues("stays")); got != 1 {
		t.Errorf("the other PublishedResource's counter = %v", got)
	}
}

// TestEveryPublishedResourceVectorIsForgotten: every vector of the agent
// with a published_resource label is one ForgetPublishedResource empties,
// so a new one cannot keep a deleted PublishedResource's series.
func TestEveryPublishedResourceVectorIsForgotten(t *testing.T) {
	decl := regexp.MustCompile(`(?s)(\w+)\s*=\s*prometheus\.New(?:Counter|Gauge|Histogram|Summary)Vec\(.*?\}\s*,\s*\[\]string\{([^}]*)\}`)
	forgotten := regexp.MustCompile(`(\w+)\.MetricVec`)
	var vectors, listed []string
	eachSource(t, func(path, src string) {
		for _, m := range decl.FindAllStringSubmatch(src, -1) {
			if strings.Contains(m[2], `"published_resource"`) {
				vectors = append(vectors, m[1])
			}
		}
		if strings.Contains(src, "ForgetWithPublishedResource(") || strings.HasSuffix(path, "forget.go") {
			for _, m := range forgotten.FindAllStringSubmatch(src, -1) {
				listed = append(listed, m[1])
			}
		}
	})
	if len(vectors) < 10 {
		t.Fatalf("found %d vectors labelled published_resource: the extraction is broken", len(vectors))
	}
	for _, v := range vectors {
		if !slices.Contains(listed, v) {
			t.Errorf("%s is labelled published_resource but not forgotten with its PublishedResource (add it to perPublishedResource or call ForgetWithPublishedResource)", v)
		}
	}
}
