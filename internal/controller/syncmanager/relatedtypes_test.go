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
	"errors"
	"testing"
	"time"

	agentdiscovery "github.com/kcp-syncagent/api-syncagent/internal/discovery"
)

// TestTypeCache: an answer is remembered for relatedTypeMemory, then asked
// again (a claimed type that gained its status subresource is seen), a
// failure is never remembered, and answers of endpoints nobody asks about
// any more are dropped.
func TestTypeCache(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	now := start
	c := &typeCache{now: func() time.Time { return now }}
	asked := 0
	answer := func(info agentdiscovery.TypeInfo, err error) func() (agentdiscovery.TypeInfo, error) {
		return func() (agentdiscovery.TypeInfo, error) {
			asked++
			return info, err
		}
	}
	plain, withStatus := agentdiscovery.TypeInfo{Namespaced: true}, agentdiscovery.TypeInfo{Namespaced: true, HasStatus: true}
	steps := []struct {
		name      string
		at        time.Duration
		key       string
		lookup    func() (agentdiscovery.TypeInfo, error)
		want      agentdiscovery.TypeInfo
		wantErr   bool
		wantAsked int
		wantKeys  int
	}{
		{name: "first answer", key: "a", lookup: answer(plain, nil), want: plain, wantAsked: 1, wantKeys: 1},
		{name: "remembered", at: relatedTypeMemory - time.Second, key: "a", lookup: answer(withStatus, nil), want: plain, wantAsked: 1, wantKeys: 1},
		{name: "expired: asked again", at: relatedTypeMemory, key: "a", lookup: answer(withStatus, nil), want: withStatus, wantAsked: 2, wantKeys: 1},
		{name: "a failure is not remembered", at: relatedTypeMemory + time.Minute, key: "b", lookup: answer(plain, errors.New("unreachable")), wantErr: true, wantAsked: 3, wantKeys: 1},
		{name: "asked again after a failure", at: relatedTypeMemory + time.Minute, key: "b", lookup: answer(plain, nil), want: plain, wantAsked: 4, wantKeys: 2},
		{name: "expired answers dropped when another is added", at: 3 * relatedTypeMemory, key: "c", lookup: answer(plain, nil), want: plain, wantAsked: 5, wantKeys: 1},
	}
	for _, s := range steps {
		now = start.Add(s.at)
		got, err := c.get(s.key, s.lookup)
		if (err != nil) != s.wantErr || (err == nil && got != s.want) {
			t.Errorf("%s: got %+v, %v; want %+v (error: %v)", s.name, got, err, s.want, s.wantErr)
		}
		if asked != s.wantAsked || len(c.entries) != s.wantKeys {
			t.Errorf("%s: asked %d times, %d entries; want %d, %d", s.name, asked, len(c.entries), s.wantAsked, s.wantKeys)
		}
	}
}
