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

package export

import (
	"encoding/json"
	"fmt"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// Publisher is who publishes into the export: the agent's name and its
// Lease (keys.LeaderLease), which tells the agents of one name apart.
// Claim: the agent serves a partition, and records itself in the export
// as the one agent of its name that publishes (keys.PublisherOf); an agent
// without a partition checks the record but does not write one (the
// replicas of such an agent share one Lease, and so one leader).
type Publisher struct {
	AgentName string
	Lease     string
	Claim     bool
}

// NotPublisherError: the export records another agent of the same name as
// its publisher.
type NotPublisherError struct {
	// Annotation is the record's key, Publisher the Lease it names.
	Annotation, Publisher string
}

func (e *NotPublisherError) Error() string {
	return fmt.Sprintf("another agent of this name publishes into the APIExport: its annotation %s names the Lease %s, not this agent's; remove the annotation to hand publishing over", e.Annotation, e.Publisher)
}

// Update is the agent's change to an APIExport.
type Update struct {
	// Patch is a JSON merge patch of the keys the agent owns, with the
	// export's resourceVersion (a conflict when it changed since the read);
	// nil when nothing changes.
	Patch []byte
	// Added and Removed name the schemas that enter or leave the export;
	// AddedClaims are the claims added.
	Added, Removed []string
	AddedClaims    []Claim
	// ClaimsAnnotationErr is set when the V1alpha1ClaimsAnnotation is no
	// list of claims: the claims are then not described there (the rest of
	// the update goes on).
	ClaimsAnnotationErr error
}

// ComputeUpdate computes the agent's change to the APIExport current, as
// stored (unstructured, so that fields of a newer kcp are kept): the ready
// schemas of the PublishedResources and the claims they need are merged in,
// and the agent's name is set (unless another agent's already is). The
// patch holds only what changes: the
// agent's annotations and whichever of spec.resources and
// spec.permissionClaims changed, where every existing entry is written back
// exactly as stored. If the export records another agent of the same name
// as its publisher, it returns a *NotPublisherError and no update; a
// publisher that claims records itself where nobody is recorded.
func ComputeUpdate(current *unstructured.Unstructured, prs []syncagentv1alpha1.PublishedResource, pub Publisher) (Update, error) {
	exp := &kcpapisv1alpha2.APIExport{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, exp); err != nil {
		return Update{}, fmt.Errorf("failed to decode the APIExport: %w", err)
	}
	agentName := pub.AgentName
	recordKey := keys.PublisherOf(agentName)
	recorded := exp.Annotations[recordKey]
	if recorded != "" && recorded != pub.Lease {
		return Update{}, &NotPublisherError{Annotation: recordKey, Publisher: recorded}
	}
	var ready []string
	for _, pr := range prs {
		if pr.Status.ResourceSchemaName != "" {
			ready = append(ready, pr.Status.ResourceSchemaName)
		}
	}

	var u Update
	var resources []kcpapisv1alpha2.ResourceSchema
	resources, u.Added, u.Removed = MergeResources(exp.Spec.Resources, ready)
	required := RequiredClaims(prs, OwnGRs(resources, prs))
	claims, addedClaims := MergeClaims(exp.Spec.PermissionClaims, required)
	u.AddedClaims = addedClaims
	claimsText, described, err := V1alpha1Claims(exp.Annotations[V1alpha1ClaimsAnnotation], claims, required)
	if err != nil {
		u.ClaimsAnnotationErr = err
		described = false
	}

	spec := map[string]any{}
	if err := putIfChanged(spec, current, "resources", resources); err != nil {
		return Update{}, err
	}
	if err := putIfChanged(spec, current, "permissionClaims", claims); err != nil {
		return Update{}, err
	}
	annotations := map[string]any{}
	// The annotation names the agent that first published into the
	// export; another agent that shares the export leaves it (two agents
	// setting their own names in turn would wake each other without end).
	if exp.Annotations[keys.AgentName] == "" {
		annotations[keys.AgentName] = agentName
	}
	if described {
		annotations[V1alpha1ClaimsAnnotation] = claimsText
	}
	if pub.Claim && recorded == "" {
		// With the resourceVersion below: of two agents that claim at
		// once, one conflicts and reads the other's record.
		annotations[recordKey] = pub.Lease
	}
	if len(spec) == 0 && len(annotations) == 0 {
		return u, nil
	}

	metadata := map[string]any{"resourceVersion": current.GetResourceVersion()}
	if len(annotations) > 0 {
		metadata["annotations"] = annotations
	}
	patch := map[string]any{"metadata": metadata}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	if u.Patch, err = json.Marshal(patch); err != nil {
		return Update{}, fmt.Errorf("failed to encode the APIExport patch: %w", err)
	}
	return u, nil
}

// OwnGRs returns the group/resources the export provides itself: those of
// its schemas and of every selected PublishedResource's schema. For a
// PublishedResource without a schema yet, an explicitly projected group and
// plural are used (the plural of an unprojected type needs discovery).
func OwnGRs(resources []kcpapisv1alpha2.ResourceSchema, prs []syncagentv1alpha1.PublishedResource) sets.Set[schema.GroupResource] {
	grs := sets.New[schema.GroupResource]()
	for _, r := range resources {
		grs.Insert(ResourceGR(r))
	}
	for _, pr := range prs {
		if gr, ok := projection.SchemaGroupResource(pr.Status.ResourceSchemaName); ok {
			grs.Insert(gr)
		} else if p := pr.Spec.Projection; p != nil && p.Group != "" && p.Plural != "" {
			grs.Insert(schema.GroupResource{Group: p.Group, Resource: p.Plural})
		}
	}
	return grs
}

// putIfChanged puts the stored form of spec.<field> of current merged with
// merged (KeepRaw) into spec, when it holds other entries than the stored
// list.
func putIfChanged[T any](spec map[string]any, current *unstructured.Unstructured, field string, merged []T) error {
	raw, _, err := unstructured.NestedSlice(current.Object, "spec", field)
	if err != nil {
		return fmt.Errorf("spec.%s of the APIExport: %w", field, err)
	}
	list, changed, err := KeepRaw(raw, merged)
	if err != nil {
		return fmt.Errorf("spec.%s of the APIExport: %w", field, err)
	}
	if changed {
		spec[field] = list
	}
	return nil
}
