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
	"fmt"
	"strconv"
	"strings"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// defaultNameValidation is kcp's default of APIResourceSchema
// spec.nameValidation; set, so that the schema compares equal to the one
// kcp stores.
const defaultNameValidation = "DNS1123Subdomain"

// Schema returns the APIResourceSchema of a projected CRD as the agent
// writes it (the apiresourceschema controller and the preview): named by
// SchemaName, labelled with the agent's name, annotated with the source
// CRD's generation.
func Schema(src, projected *apiextensionsv1.CustomResourceDefinition, agentName string) (*kcpapisv1alpha1.APIResourceSchema, error) {
	name, err := SchemaName(projected)
	if err != nil {
		return nil, err
	}
	ars, err := kcpapisv1alpha1.CRDToAPIResourceSchema(projected, strings.TrimSuffix(name, "."+projected.Name))
	if err != nil {
		return nil, &Error{Reason: syncagentv1alpha1.ReasonInvalidProjection, Message: fmt.Sprintf("cannot convert the projected CRD: %v", err)}
	}
	if ars.Spec.NameValidation == "" {
		ars.Spec.NameValidation = defaultNameValidation
	}
	ars.Labels = map[string]string{keys.AgentName: agentName}
	ars.Annotations = map[string]string{
		keys.AgentName:        agentName,
		keys.SourceGeneration: strconv.FormatInt(src.Generation, 10),
	}
	return ars, nil
}
