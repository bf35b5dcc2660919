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

package syncmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
)

// cacheVerbs are what the cache of local copies needs on the local type,
// cluster-wide (contract §8.3): without them it waits for a sync that never
// comes. (Missing write permissions show up per object, as ReconcilingError
// Events on the PublishedResource.)
var cacheVerbs = []string{"list", "watch"}

// accessReviewTimeout bounds the access check before a controller starts.
const accessReviewTimeout = 10 * time.Second

// accessReviewer reports whether the agent may do verb on gvr in every
// namespace.
type accessReviewer func(ctx context.Context, verb string, gvr schema.GroupVersionResource) (bool, error)

// requestReviewer tries the verb: a list of one object's metadata, or a
// watch that is closed at once. Both are reads (access reviews would be
// POSTs, and a restart with everything in sync makes no writes). Only a
// Forbidden answer counts as "may not".
func requestReviewer(client metadata.Interface) accessReviewer {
	return func(ctx context.Context, verb string, gvr schema.GroupVersionResource) (bool, error) {
		var err error
		switch verb {
		case "list":
			_, err = client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		case "watch":
			var w interface{ Stop() }
			if w, err = client.Resource(gvr).Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)}); err == nil {
				w.Stop()
			}
		default:
			return false, fmt.Errorf("cannot try verb %q", verb)
		}
		switch {
		case apierrors.IsForbidden(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("failed to %s %s: %w", verb, gvr.GroupResource(), err)
		}
		return true, nil
	}
}

// accessError names what the agent may not do on the service cluster.
type accessError struct {
	gr    schema.GroupResource
	verbs []string
}

func (e *accessError) Error() string {
	return fmt.Sprintf("the agent may not %s %s cluster-wide on the service cluster; grant it (for example with the chart's rbac.extraRules)",
		strings.Join(e.verbs, ", "), e.gr)
}

// checkAccess returns an *accessError per type listing the verbs the agent
// may not use on it (joined), nil when it may use all of them, or the error
// of a check that failed (the caller cannot tell then, and goes on).
func checkAccess(ctx context.Context, review accessReviewer, gvrs []schema.GroupVersionResource, verbs []string) error {
	ctx, cancel := context.WithTimeout(ctx, accessReviewTimeout)
	defer cancel()
	var errs []error
	for _, gvr := range gvrs {
		var denied []string
		for _, verb := range verbs {
			allowed, err := review(ctx, verb, gvr)
			if err != nil {
				return err
			}
			if !allowed {
				denied = append(denied, verb)
			}
		}
		if len(denied) > 0 {
			errs = append(errs, &accessError{gr: gvr.GroupResource(), verbs: denied})
		}
	}
	return errors.Join(errs...)
}
