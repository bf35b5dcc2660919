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
	"testing"

	"github.com/go-logr/logr/funcr"

	clientfeatures "k8s.io/client-go/features"
)

// gatesOn stands for client-go's gates as an environment sets them.
type gatesOn map[clientfeatures.Feature]bool

func (g gatesOn) Enabled(f clientfeatures.Feature) bool { return g[f] }

// TestListAndWatchIsPinned: with the environment asking for watch-list
// streaming, the agent's client-go says it is off, says why once, and
// leaves every other feature as the environment set it.
func TestListAndWatchIsPinned(t *testing.T) {
	before := clientfeatures.FeatureGates()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(before) })
	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	clientfeatures.ReplaceFeatureGates(gatesOn{clientfeatures.WatchListClient: true, clientfeatures.InformerResourceVersion: true})

	var logged []string
	log := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
	pinListAndWatch(log)
	pinListAndWatch(log)
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Error("WatchListClient is still on")
	}
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.InformerResourceVersion) {
		t.Error("another feature the environment turned on was turned off")
	}
	if len(logged) != 1 {
		t.Errorf("logged %q, want one warning", logged)
	}
}
