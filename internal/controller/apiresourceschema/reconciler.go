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

package apiresourceschema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	"github.com/kcp-syncagent/api-syncagent/internal/selection"
	"github.com/kcp-syncagent/api-syncagent/internal/validation"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// errConflict marks a schema name collision (contract §7 #22).
var errConflict = errors.New("an APIResourceSchema with this name but a different spec exists")

// outcome is what one reconcile found out.
type outcome struct {
	// schemaName is set when the schema exists and matches.
	schemaName string
	schema     metav1.Condition
	config     metav1.Condition
	err        error
}

func (r *Reconciler) reconcile(ctx context.Context, pr *syncagentv1alpha1.PublishedResource) outcome {
	var out outcome

	src, err := r.Resolver.Resolve(ctx, projection.SourceGK(pr))
	var projected *apiextensionsv1.CustomResourceDefinition
	if err == nil {
		projected, err = projection.Project(src, pr)
	}

	in := validation.Input{SharedSourceWith: r.sharedSource(ctx, pr)}
	if projected != nil {
		in.KcpScope = projected.Spec.Scope
	}
	if src != nil {
		in.LocalScope = src.Spec.Scope
	}
	checked := validation.Check(pr, in)
	out.config = checked.Condition()
	if len(checked.Deprecated) > 0 && r.deprecations.First(pr) {
		r.log.Info("The PublishedResource uses deprecated inputs; they keep working", "publishedresource", pr.Name, "generation", pr.Generation, "deprecated", checked.Deprecated)
	}

	if err == nil {
		out.schemaName, err = r.ensureSchema(ctx, pr, src, projected)
	}
	if err != nil {
		out.err = err
		out.schema = failure(err)
		if !carries(pr, out.schema) {
			r.recorder.Event(pr, corev1.EventTypeWarning, out.schema.Reason, out.schema.Message)
		}
		return out
	}
	out.schema = conditions.New(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSchemaAvailable,
		fmt.Sprintf("APIResourceSchema %s is available.", out.schemaName))
	return out
}

// carries reports whether pr already carries cond (same reason and status)
// for its generation, so repeated failures do not repeat their Event.
func carries(pr *syncagentv1alpha1.PublishedResource, cond metav1.Condition) bool {
	c := meta.FindStatusCondition(pr.Status.Conditions, cond.Type)
	return c != nil && c.Status == cond.Status && c.Reason == cond.Reason && c.ObservedGeneration == pr.Generation
}

// failure maps an error to the SchemaReady condition.
func failure(err error) metav1.Condition {
	var (
		perr *projection.Error
		nf   *discovery.NotFoundError
	)
	reason := syncagentv1alpha1.ReasonSchemaCreateFailed
	msg := err.Error()
	switch {
	case errors.As(err, &nf):
		reason = syncagentv1alpha1.ReasonSourceNotFound
	case errors.As(err, &perr):
		reason = perr.Reason
	case errors.Is(err, errConflict):
		reason = syncagentv1alpha1.ReasonSchemaConflict
	}
	return conditions.New(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionFalse, reason, msg)
}

// sharedSource lists the other selected PublishedResources with the same
// source group/kind, sorted.
func (r *Reconciler) sharedSource(ctx context.Context, pr *syncagentv1alpha1.PublishedResource) []string {
	prs, err := selection.List(ctx, r.client, r.Selector)
	if err != nil {
		return nil
	}
	var names []string
	for _, other := range prs {
		if other.Name != pr.Name && projection.SourceGK(&other) == projection.SourceGK(pr) {
			names = append(names, other.Name)
		}
	}
	slices.Sort(names)
	return names
}

// ensureSchema makes sure the schema of the projected CRD exists in kcp and
// returns its name. A schema that was already confirmed for this generation
// is not fetched again.
func (r *Reconciler) ensureSchema(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, src, projected *apiextensionsv1.CustomResourceDefinition) (string, error) {
	name, err := projection.SchemaName(projected)
	if err != nil {
		return "", err
	}
	if pr.Status.ResourceSchemaName == name && carries(pr, conditions.New(syncagentv1alpha1.ConditionSchemaReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSchemaAvailable, "")) {
		return name, nil
	}

	want, err := projection.Schema(src, projected, r.AgentName)
	if err != nil {
		return "", err
	}

	log := ctrl.LoggerFrom(ctx).WithValues("apiresourceschema", name)
	existing := &kcpapisv1alpha1.APIResourceSchema{}
	err = r.KcpClient.Get(ctx, types.NamespacedName{Name: name}, existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.KcpClient.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("failed to create APIResourceSchema %s: %w", name, err)
		} else if err == nil {
			log.Info("Created APIResourceSchema")
			r.recorder.Eventf(pr, corev1.EventTypeNormal, syncagentv1alpha1.ReasonSchemaAvailable, "Created APIResourceSchema %s", name)
			return name, nil
		}
		if err := r.KcpClient.Get(ctx, types.NamespacedName{Name: name}, existing); err != nil {
			return "", fmt.Errorf("failed to get APIResourceSchema %s: %w", name, err)
		}
	case err != nil:
		return "", fmt.Errorf("failed to get APIResourceSchema %s: %w", name, err)
	}

	same, err := sameSpec(existing.Spec, want.Spec)
	if err != nil {
		return "", err
	}
	if !same {
		log.V(1).Info("Existing APIResourceSchema differs", "diff", cmp.Diff(existing.Spec, want.Spec))
		return "", fmt.Errorf("%w: %s (hash collision; change the projection or the CRD to get another name)", errConflict, name)
	}
	r.repairMetadata(ctx, log, existing)
	return name, nil
}

// sameSpec compares two schema specs by their JSON meaning (embedded raw
// schemas may be formatted differently after a round trip through kcp).
func sameSpec(a, b kcpapisv1alpha1.APIResourceSchemaSpec) (bool, error) {
	var x, y any
	for _, p := range []struct {
		in  kcpapisv1alpha1.APIResourceSchemaSpec
		out *any
	}{{a, &x}, {b, &y}} {
		data, err := json.Marshal(p.in)
		if err != nil {
			return false, fmt.Errorf("failed to encode schema spec: %w", err)
		}
		if err := json.Unmarshal(data, p.out); err != nil {
			return false, fmt.Errorf("failed to decode schema spec: %w", err)
		}
	}
	return equality.Semantic.DeepEqual(x, y), nil
}

// repairMetadata restores our agent label and annotation on an existing
// schema with a merge patch of just those keys (a typed update would drop
// the fields of a newer kcp; informational, a forbidden patch is logged).
func (r *Reconciler) repairMetadata(ctx context.Context, log logr.Logger, ars *kcpapisv1alpha1.APIResourceSchema) {
	if ars.Labels[keys.AgentName] == r.AgentName && ars.Annotations[keys.AgentName] == r.AgentName {
		return
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{keys.AgentName: r.AgentName},
		"annotations": map[string]string{keys.AgentName: r.AgentName},
	}})
	if err == nil {
		err = r.KcpClient.Patch(ctx, ars, ctrlruntimeclient.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		log.Info("Could not repair the agent label of an APIResourceSchema", "error", err.Error())
	}
}
