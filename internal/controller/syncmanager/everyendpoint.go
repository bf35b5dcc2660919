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
	"slices"
)

// errEndpointLeasePending: an endpoint the slice lists has a Lease that is
// not decided yet; the release goes through it once it is.
var errEndpointLeasePending = errors.New("an endpoint's Lease is not decided yet")

// throughEveryEndpoint runs release through urls, then through the
// endpoints the endpoint slice lists by then that it did not run through
// (a shard that joined while a long release ran), until no new one came:
// a release that ends has been through every endpoint there is.
func (r *reconciler) throughEveryEndpoint(ctx context.Context, urls []string, release func(urls []string) error) error {
	var done []string
	for len(urls) > 0 {
		if err := release(urls); err != nil {
			return err
		}
		done = append(done, urls...)
		listed, err := r.endpoints(ctx)
		if err != nil {
			return fmt.Errorf("after releasing through %d endpoint(s): %w", len(done), err)
		}
		now, pending := r.servedOf(listed)
		if pending {
			return fmt.Errorf("after releasing through %d endpoint(s): %w", len(done), errEndpointLeasePending)
		}
		urls = slices.DeleteFunc(now, func(u string) bool { return slices.Contains(done, u) })
	}
	return nil
}
