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

package fence

import "context"

type (
	contextKey  struct{}
	endpointKey struct{}
)

// WithEndpoint returns ctx carrying the fence of the endpoint whose
// workspaces a pass works on: the writes of requests made with it pass
// that fence too (Wrap), and Closed reports it.
func WithEndpoint(ctx context.Context, f *Fence) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, endpointKey{}, f)
}

func endpointFence(ctx context.Context) *Fence {
	f, _ := ctx.Value(endpointKey{}).(*Fence)
	return f
}

// NewContext returns ctx carrying f, for the controllers run under it.
func NewContext(ctx context.Context, f *Fence) context.Context {
	return context.WithValue(ctx, contextKey{}, f)
}

// Closed reports whether a fence ctx carries (the replica's, an
// endpoint's) refuses writes now (false without one). What a pass read while it is
// closed may be another leader's work under way (a copy whose record that
// leader deleted a moment ago), so such a pass reports nothing it found:
// no Event, no condition, no error.
func Closed(ctx context.Context) bool {
	f, _ := ctx.Value(contextKey{}).(*Fence)
	ep := endpointFence(ctx)
	return f != nil && f.Check() != nil || ep != nil && ep.Check() != nil
}
