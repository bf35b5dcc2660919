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

package projection

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // the contract fixes SHA-1 for schema names; it is not used for security.
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemaName returns the APIResourceSchema name of a projected CRD (contract
// §3.3): "v" + the first 8 hex characters of the SHA-1 of the JSON encoding
// of its spec (conversion cleared, Encoder output including its trailing
// newline) + "." + plural + "." + group. Identical input gives an identical
// name, so a reverted change reuses the old schema.
func SchemaName(projected *apiextensionsv1.CustomResourceDefinition) (string, error) {
	spec := projected.Spec.DeepCopy()
	spec.Conversion = nil

	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(spec); err != nil {
		return "", fmt.Errorf("failed to encode CRD spec: %w", err)
	}
	sum := sha1.Sum(buf.Bytes()) //nolint:gosec // see import.
	return fmt.Sprintf("v%s.%s.%s", hex.EncodeToString(sum[:])[:8], projected.Spec.Names.Plural, projected.Spec.Group), nil
}

// SchemaGroupResource parses a schema name "<version>.<resource>.<group>"
// into its group/resource by splitting at the first two dots.
func SchemaGroupResource(name string) (schema.GroupResource, bool) {
	parts := strings.SplitN(name, ".", 3)
	if len(parts) != 3 {
		return schema.GroupResource{}, false
	}
	return schema.GroupResource{Resource: parts[1], Group: parts[2]}, true
}
