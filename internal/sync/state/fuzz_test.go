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

package state

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// FuzzDecode: state Secrets are read back from the service cluster, where
// anyone with Secret write access (or a reference agent, or a truncated
// write) may have left anything. Decoding never panics, is deterministic,
// and a primary's state is never taken from another group/kind.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(referenceValue), []byte(`{"primary":{"apiVersion":"kcp.example.com/v1","kind":"Thing","name":"foo"},"identifier":"x","originSide":"kcp"}`))
	f.Add([]byte(`{"apiVersion":"other/v1","kind":"Widget","spec":{}}`), []byte(`{}`))
	f.Add([]byte(`null`), []byte(`[`))
	f.Add([]byte(``), []byte(`{"primary":null}`))
	gk := schema.GroupKind{Group: "kcp.example.com", Kind: "Thing"}
	f.Fuzz(func(t *testing.T, data, record []byte) {
		got := normalize(data, &gk)
		if again := normalize(data, &gk); !reflect.DeepEqual(got, again) {
			t.Errorf("non-deterministic: %v vs %v", got, again)
		}
		if got != nil && normalize(data, &schema.GroupKind{Group: "other", Kind: "Other"}) != nil {
			t.Errorf("state of %s accepted as another group/kind too", gk)
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{keys.RelatedIdentifier: "x"}},
			Data:       map[string][]byte{relatedRecordKey: record, relatedStateKey: data},
		}
		_, _ = PrimaryOfRelated(secret)
		_, _ = storedRelated(secret)
		_ = RelatedObjectIndexValues(secret)
	})
}
