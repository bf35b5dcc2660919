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

// Package v1alpha1 contains the PublishedResource API (group syncagent.kcp.io,
// version v1alpha1). It is wire-compatible with the PublishedResource API of
// kcp-dev/api-syncagent: every JSON field, default and validation message of
// that API is kept; conditions and observedGeneration in the status are
// additions.
//
// This package may import only apimachinery-level packages so that consumers
// can use the types without pulling in the agent's dependencies.
//
// +kubebuilder:object:generate=true
// +groupName=syncagent.kcp.io
package v1alpha1
