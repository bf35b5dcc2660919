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
	"os"
	"strconv"

	"github.com/go-logr/logr"

	clientfeatures "k8s.io/client-go/features"
)

// listAndWatch keeps every informer of the agent on list and watch, whatever
// KUBE_FEATURE_WatchListClient says or a later client-go defaults to.
// Streaming the initial list (sendInitialEvents) was measured on kcp 0.32.2
// with no gain, the service cluster's kube-apiserver 1.33 refused it (an
// ERROR log and a fallback per informer start), and the benchmark stalled
// with it: see docs/performance.md. Both kcp versions and the service
// cluster serve list and watch.
type listAndWatch struct{ clientfeatures.Gates }

func (g listAndWatch) Enabled(f clientfeatures.Feature) bool {
	return f != clientfeatures.WatchListClient && g.Gates.Enabled(f)
}

// pinListAndWatch installs listAndWatch over client-go's feature gates (once,
// before any client starts) and says so if the environment asked for
// streaming.
func pinListAndWatch(log logr.Logger) {
	gates := clientfeatures.FeatureGates()
	if _, pinned := gates.(listAndWatch); pinned {
		return
	}
	// The environment is read here rather than through the gates: reading
	// them before replacing them makes client-go complain.
	if on, _ := strconv.ParseBool(os.Getenv("KUBE_FEATURE_" + string(clientfeatures.WatchListClient))); on {
		log.Info("Warning: KUBE_FEATURE_WatchListClient is ignored: the agent lists and watches (docs/compatibility.md)")
	}
	clientfeatures.ReplaceFeatureGates(listAndWatch{gates})
}
