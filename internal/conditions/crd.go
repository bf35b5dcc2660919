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

package conditions

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// CRDName is the name of the PublishedResource CRD.
const CRDName = "publishedresources.syncagent.kcp.io"

// crdReadTimeout bounds the read of the PublishedResource CRD.
const crdReadTimeout = 10 * time.Second

// prunedRecheck: a CRD found to prune a field, or that could not be read,
// is read again at most this often, and only when a write of such a field
// is wanted (the syncmanager looks at each running PublishedResource every
// minute), so an upgraded CRD is noticed without a restart.
const prunedRecheck = 5 * time.Minute

// StatusFields knows which of the newer status fields (conditions,
// observedGeneration) the service cluster's PublishedResource CRD keeps.
// The reference's CRD has neither: the API server prunes them, and an
// agent that wrote them anyway would write on every pass, and once after
// every restart. So before such a write the CRD is read (live, once until
// it is known, and again every prunedRecheck while it prunes); if it
// cannot be read, the server's answer to the write tells.
type StatusFields struct {
	mu      sync.Mutex
	known   bool
	checked time.Time
	// keepsConditions, keepsObservedGeneration: what the CRD keeps.
	keepsConditions, keepsObservedGeneration bool
	hinted                                   bool
	// reads lets concurrent writers share one read of the CRD.
	reads singleflight.Group
	now   func() time.Time
}

// sharedStatusFields is the agent's: it talks to one service cluster, so
// its controllers share what they learnt (and the hint is logged once).
var sharedStatusFields = &StatusFields{}

func (f *StatusFields) clock() time.Time {
	if f.now != nil {
		return f.now()
	}
	return time.Now()
}

// kept returns whether the CRD keeps conditions and observedGeneration,
// reading it with r when that is not known (or a pruned field is due for a
// re-check). Unknown counts as kept: the write then tells.
func (f *StatusFields) kept(ctx context.Context, r ctrlruntimeclient.Reader, log logr.Logger) (conditions, observedGeneration bool) {
	f.mu.Lock()
	// A CRD that keeps both is not read again (a write that sees them
	// pruned says so); otherwise at most every prunedRecheck, whether the
	// last read worked or not.
	fresh := (f.known && f.keepsConditions && f.keepsObservedGeneration) ||
		(!f.checked.IsZero() && f.clock().Sub(f.checked) < prunedRecheck)
	conditions, observedGeneration = f.keeps()
	f.mu.Unlock()
	if fresh {
		return conditions, observedGeneration
	}
	// One read for all callers; each waits at most for its own context.
	ch := f.reads.DoChan("crd", func() (any, error) {
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), crdReadTimeout)
		defer cancel()
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.Get(readCtx, types.NamespacedName{Name: CRDName}, crd); err != nil {
			// Not read again before prunedRecheck; what is known stays,
			// and unknown counts as kept (the writes tell).
			f.mu.Lock()
			f.checked = f.clock()
			f.mu.Unlock()
			return nil, err
		}
		c, og := statusKeeps(crd)
		f.learn(c, og, log)
		return [2]bool{c, og}, nil
	})
	select {
	case res := <-ch:
		if res.Err == nil {
			keeps := res.Val.([2]bool)
			return keeps[0], keeps[1]
		}
	case <-ctx.Done():
	}
	return conditions, observedGeneration
}

// keeps is what the CRD is taken to keep: unknown counts as kept. f.mu
// must be held.
func (f *StatusFields) keeps() (conditions, observedGeneration bool) {
	return f.keepsConditions || !f.known, f.keepsObservedGeneration || !f.known
}

// learn records what the CRD keeps and logs the upgrade hint once.
func (f *StatusFields) learn(conditions, observedGeneration bool, log logr.Logger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.known, f.checked = true, f.clock()
	f.keepsConditions, f.keepsObservedGeneration = conditions, observedGeneration
	if !conditions && !f.hinted {
		f.hinted = true
		log.Info("The PublishedResource CRD in this cluster has no status.conditions (an older CRD); conditions are not written. Upgrade the CRD (deploy/crd or the Helm chart with crds.enabled) to get them.")
	}
}

// pruned records fields a write showed pruned (the CRD could not be read,
// or changed since).
func (f *StatusFields) pruned(conditionsPruned, observedGenerationPruned bool, log logr.Logger) {
	f.mu.Lock()
	keepsC, keepsOG := f.keeps()
	f.mu.Unlock()
	f.learn(keepsC && !conditionsPruned, keepsOG && !observedGenerationPruned, log)
}

func preservesUnknown(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// statusKeeps reads from the CRD's schema of our version whether status
// keeps conditions and observedGeneration.
func statusKeeps(crd *apiextensionsv1.CustomResourceDefinition) (conditions, observedGeneration bool) {
	for _, v := range crd.Spec.Versions {
		if v.Name != syncagentv1alpha1.SchemeGroupVersion.Version {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return true, true
		}
		root := v.Schema.OpenAPIV3Schema
		status, ok := root.Properties["status"]
		if !ok {
			preserved := preservesUnknown(root)
			return preserved, preserved
		}
		if preservesUnknown(&status) {
			return true, true
		}
		_, conditions = status.Properties["conditions"]
		_, observedGeneration = status.Properties["observedGeneration"]
		return conditions, observedGeneration
	}
	// Our version is not served: nothing is written anyway.
	return true, true
}
