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

// Package once remembers what was already reported, so that a warning is
// given once per object generation, not on every reconcile.
package once

import (
	"hash/fnv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PerGeneration remembers, per object UID, the last generation reported.
// It is safe for concurrent use.
type PerGeneration struct {
	mu   sync.Mutex
	seen map[types.UID]int64
}

// NewPerGeneration returns an empty set.
func NewPerGeneration() *PerGeneration {
	return &PerGeneration{seen: map[types.UID]int64{}}
}

// First reports whether obj's generation has not been reported yet, and
// records it.
func (p *PerGeneration) First(obj metav1.Object) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g, ok := p.seen[obj.GetUID()]; ok && g == obj.GetGeneration() {
		return false
	}
	p.seen[obj.GetUID()] = obj.GetGeneration()
	return true
}

// Forget drops obj (it is gone), so the set does not grow forever.
func (p *PerGeneration) Forget(obj metav1.Object) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seen, obj.GetUID())
}

// PerValue remembers, per object UID, the last value reported (for a
// warning about a field or annotation, which can change without a new
// generation), as a hash: a value someone else controls may be large. It
// is safe for concurrent use.
type PerValue struct {
	mu   sync.Mutex
	seen map[types.UID]uint64
}

// NewPerValue returns an empty set.
func NewPerValue() *PerValue {
	return &PerValue{seen: map[types.UID]uint64{}}
}

// First reports whether value has not been reported for obj as its last
// value, and records it.
func (p *PerValue) First(obj metav1.Object, value string) bool {
	h := fnv.New64a()
	_, _ = h.Write([]byte(value))
	sum := h.Sum64()
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.seen[obj.GetUID()]; ok && v == sum {
		return false
	}
	p.seen[obj.GetUID()] = sum
	return true
}

// Forget drops obj (it is gone, or its value is fine again).
func (p *PerValue) Forget(obj metav1.Object) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seen, obj.GetUID())
}
