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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
)

// ReasonRelatedObjectRefused (ours, Warning): kcp refused to write a
// related object into the consumer's workspace.
const ReasonRelatedObjectRefused = "RelatedObjectRefused"

// RefusedError is kcp's refusal (403 Forbidden) to write a related object
// into a consumer's workspace: the consumer's APIBinding does not allow it
// (the claim for its type is not accepted, is accepted with fewer verbs,
// or, since kcp 0.32, with a label selector the object does not match).
// Only the consumer (or the labels of the service-side object) can change
// that, so the pass goes on with the other related objects, and the
// object is tried again with backoff.
type RefusedError struct {
	// Identifier is the related entry's identifier.
	Identifier string
	// Kind, Namespace and Name name the object in kcp.
	Kind, Namespace, Name string
	// Existing is set when the agent's copy exists (an update was refused).
	Existing bool
	Err      error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("kcp refused to write related object %q (%s %s): %v", e.Identifier, e.Kind, objmeta.QualifiedName(e.Namespace, e.Name), e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// ConsumerMessage is the text of the Event on the consumer's object: what
// was refused and what decides it, never kcp's error text.
func (e *RefusedError) ConsumerMessage() string {
	return fmt.Sprintf("The related %s %s could not be written into this workspace: the APIBinding does not allow it "+
		"(the permission claim for its type is not accepted, is accepted with fewer verbs, or with a label selector that excludes it). "+
		"The service provider has been notified.", e.Kind, objmeta.QualifiedName(e.Namespace, e.Name))
}

// refusal returns a RefusedError for err when err is kcp's 403 for a write
// of entry e into the workspace (a service-origin entry's destination),
// else nil (callers compare it with nil before they return it as an error).
// existing says whether the agent's copy exists.
func refusal(e *related.Entry, kind string, key types.NamespacedName, existing bool, err error) *RefusedError {
	// A namespace being deleted is not the binding's doing.
	if e.Origin != related.SideService || !apierrors.IsForbidden(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return &RefusedError{Identifier: e.Identifier, Kind: kind, Namespace: key.Namespace, Name: key.Name, Existing: existing, Err: err}
}

// Refusals returns every RefusedError in err's tree (a pass joins one per
// refused related object), in order.
func Refusals(err error) []*RefusedError {
	var out []*RefusedError
	var walk func(error)
	walk = func(e error) {
		switch e := e.(type) {
		case nil:
		case *RefusedError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}
