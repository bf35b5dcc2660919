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

package syncer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
)

// warnPropagation tells the consumer, once per value, that obj's deletion
// propagation annotation has a value the agent does not know: it is read
// only when the object is deleted, which is late to find a typo.
func (s *Syncer) warnPropagation(obj *unstructured.Unstructured) {
	if s.WarnedPropagation == nil {
		return
	}
	if _, known := objmeta.PropagationOf(obj); known {
		s.WarnedPropagation.Forget(obj)
		return
	}
	if s.WarnedPropagation.First(obj, obj.GetAnnotations()[keys.DeletionPropagationPolicy]) {
		s.Event(obj, corev1.EventTypeWarning, ReasonInvalidDeletionPropagation, fmt.Sprintf(
			"The annotation %s is not one of background, foreground, orphan; if this object is deleted, the object on the service cluster will be deleted in the background.", keys.DeletionPropagationPolicy))
	}
}
