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

package apiexport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/eventsapi"
	"github.com/kcp-syncagent/api-syncagent/internal/export"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/publisher"
	"github.com/kcp-syncagent/api-syncagent/internal/selection"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// ControllerName is the controller's name in logs, metrics and as field manager.
const ControllerName = "syncagent-apiexport"

// Event reasons on the APIExport (contract §4.6).
const (
	ReasonAddingResourceSchemas   = "AddingResourceSchemas"
	ReasonRemovingResourceSchemas = "RemovingResourceSchemas"
	ReasonAddingPermissionClaims  = "AddingPermissionClaims"
	// ReasonInvalidClaimsAnnotation (Warning, ours): kcp's annotation for
	// v1alpha1 clients cannot be read, so our claims are not described there.
	ReasonInvalidClaimsAnnotation = "InvalidClaimsAnnotation"
	// ReasonPublisherConflict (Warning, ours; on the APIExport and the
	// selected PublishedResources): another agent of this agent's name is
	// recorded as the export's publisher, so this one publishes nothing.
	ReasonPublisherConflict = "PublisherConflict"
)

// Options configure the controller.
type Options struct {
	AgentName string
	Selector  labels.Selector
	// ExportName is the APIExport's name; ExportConfig points to its workspace.
	ExportName   string
	ExportConfig *rest.Config
	// Partition is the Partition of the agent's endpoint slice (""
	// without one): an agent of a partition records itself as its agent
	// name's publisher in the export (export.Publisher).
	Partition string
	// Gate receives the decision whether this agent publishes (nil: the
	// controller keeps it to itself, to report its changes).
	Gate *publisher.Gate
}

// Reconciler merges PublishedResources into the APIExport.
type Reconciler struct {
	Options
	client      ctrlruntimeclient.Client // service cluster (cached)
	kcpCache    ctrlruntimeclient.Reader // the APIExport, by name
	kcpClient   ctrlruntimeclient.Client // live writes to the export workspace
	kcpRecorder record.EventRecorder     // Events on the APIExport
	prEvents    record.EventRecorder     // Events on PublishedResources
	status      *conditions.Writer
	log         logr.Logger
}

// exportKey is the single work item: all events lead to one reconcile of the export.
var exportKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "apiexport"}}

// Add sets up the controller with the manager.
func Add(mgr manager.Manager, opts Options) error {
	if opts.AgentName == "" || opts.Selector == nil || opts.ExportName == "" || opts.ExportConfig == nil {
		return errors.New("apiexport: AgentName, Selector, ExportName and ExportConfig are required")
	}
	log := mgr.GetLogger().WithName(ControllerName)
	if opts.Gate == nil {
		opts.Gate = publisher.NewGate()
	}

	kcpCache, err := cache.New(opts.ExportConfig, cache.Options{
		Scheme: kcp.NewScheme(),
		ByObject: map[ctrlruntimeclient.Object]cache.ByObject{
			&kcpapisv1alpha2.APIExport{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.ExportName)},
		},
	})
	if err != nil {
		return fmt.Errorf("failed to create the APIExport cache: %w", err)
	}
	if err := mgr.Add(kcpCache); err != nil {
		return err
	}
	kcpClient, err := ctrlruntimeclient.New(opts.ExportConfig, ctrlruntimeclient.Options{Scheme: kcp.NewScheme()})
	if err != nil {
		return fmt.Errorf("failed to create kcp client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(opts.ExportConfig)
	if err != nil {
		return fmt.Errorf("failed to create kcp event client: %w", err)
	}
	broadcaster := eventsapi.NewBroadcaster(&eventsapi.Sink{Client: cs.EventsV1(), Core: cs.CoreV1(), Controller: ControllerName, Instance: eventsapi.ReportingInstance()})
	broadcaster.StartRecordingToSink(nil)

	r := &Reconciler{
		Options:     opts,
		client:      mgr.GetClient(),
		kcpCache:    kcpCache,
		kcpClient:   kcpClient,
		kcpRecorder: broadcaster.NewRecorder(kcp.NewScheme(), corev1.EventSource{Component: ControllerName}),
		prEvents:    mgr.GetEventRecorderFor(ControllerName),
		status:      &conditions.Writer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), FieldOwner: ControllerName, Log: log},
		log:         log,
	}

	toExport := handler.EnqueueRequestsFromMapFunc(func(context.Context, ctrlruntimeclient.Object) []reconcile.Request {
		return []reconcile.Request{exportKey}
	})
	selected := predicate.NewPredicateFuncs(func(o ctrlruntimeclient.Object) bool { return selection.Matches(opts.Selector, o) })
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		// One worker, as in the reference: there is one APIExport.
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Watches(&syncagentv1alpha1.PublishedResource{}, toExport, builder.WithPredicates(selected)).
		WatchesRawSource(source.Kind(kcpCache, ctrlruntimeclient.Object(&kcpapisv1alpha2.APIExport{}), toExport)).
		Complete(lifecycle.QuietOnStop[reconcile.Request](r))
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	prs, err := selection.List(ctx, r.client, r.Selector)
	if err != nil {
		return reconcile.Result{}, err
	}
	metrics.PublishedResources.Set(float64(len(prs)))

	exp := &kcpapisv1alpha2.APIExport{}
	err = r.kcpCache.Get(ctx, types.NamespacedName{Name: r.ExportName}, exp)
	if apierrors.IsNotFound(err) {
		// Nobody is recorded as the publisher of an export that does not
		// exist: the schemas may be created for it.
		r.decided(prs, publisher.Publishing, nil, nil)
		// The agent never creates the APIExport; its creation is an event.
		return reconcile.Result{}, r.setConditions(ctx, prs, func(*syncagentv1alpha1.PublishedResource) metav1.Condition {
			return conditions.New(syncagentv1alpha1.ConditionExportReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonAPIExportNotFound,
				fmt.Sprintf("The APIExport %s does not exist in kcp; the agent does not create it.", r.ExportName))
		})
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("failed to get APIExport %s: %w", r.ExportName, err)
	}

	stored, err := r.updateExport(ctx, prs)
	if np := (*export.NotPublisherError)(nil); errors.As(err, &np) {
		// Not ours to publish: no write, no condition (the publisher's
		// would be overwritten); the record's change is an event.
		r.decided(prs, publisher.Refused, np, exp)
		return reconcile.Result{}, nil
	}
	if err != nil {
		updateErr := err
		if cerr := r.setConditions(ctx, prs, func(*syncagentv1alpha1.PublishedResource) metav1.Condition {
			return conditions.New(syncagentv1alpha1.ConditionExportReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonExportUpdateFailed,
				"Updating the APIExport failed; see the agent's log.")
		}); cerr != nil {
			return reconcile.Result{}, errors.Join(updateErr, cerr)
		}
		return reconcile.Result{}, updateErr
	}

	r.decided(prs, publisher.Publishing, nil, nil)
	exportGRs := export.OwnGRs(stored.Spec.Resources, prs)
	return reconcile.Result{}, r.setConditions(ctx, prs, func(pr *syncagentv1alpha1.PublishedResource) metav1.Condition {
		return exportReady(pr, stored, exportGRs)
	})
}

// updateExport merges the schemas and claims into the APIExport, retrying
// on conflicts with a fresh copy, and returns the stored export. It reads
// the export unstructured and patches only the keys the agent owns, so that
// fields of a newer kcp than the agent's types survive.
func (r *Reconciler) updateExport(ctx context.Context, prs []syncagentv1alpha1.PublishedResource) (*kcpapisv1alpha2.APIExport, error) {
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(kcpapisv1alpha2.SchemeGroupVersion.WithKind("APIExport"))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := r.kcpClient.Get(ctx, types.NamespacedName{Name: r.ExportName}, current); err != nil {
			return err
		}
		u, err := export.ComputeUpdate(current, prs, r.publisher())
		if err != nil {
			return err
		}
		if u.ClaimsAnnotationErr != nil {
			// kcp reads the annotation only for v1alpha1 clients; it is not
			// ours to repair, and it must not stop the schemas and claims.
			r.log.Error(u.ClaimsAnnotationErr, "Not describing the claims for apis.kcp.io/v1alpha1 clients")
			r.kcpRecorder.Eventf(current, corev1.EventTypeWarning, ReasonInvalidClaimsAnnotation,
				"Annotation %s is no list of permission claims; the agent's claims are not described for apis.kcp.io/v1alpha1 clients.", export.V1alpha1ClaimsAnnotation)
		}
		if u.Patch == nil {
			return nil
		}
		if err := r.kcpClient.Patch(ctx, current, ctrlruntimeclient.RawPatch(types.MergePatchType, u.Patch)); err != nil {
			return err
		}

		r.log.Info("Updated APIExport", "added", u.Added, "removed", u.Removed, "claimsAdded", len(u.AddedClaims))
		if len(u.Added) > 0 {
			r.kcpRecorder.Eventf(current, corev1.EventTypeNormal, ReasonAddingResourceSchemas, "Added resource schemas: %s", strings.Join(u.Added, ", "))
		}
		if len(u.Removed) > 0 {
			r.kcpRecorder.Eventf(current, corev1.EventTypeWarning, ReasonRemovingResourceSchemas, "Replaced resource schemas: %s", strings.Join(u.Removed, ", "))
		}
		if len(u.AddedClaims) > 0 {
			r.kcpRecorder.Eventf(current, corev1.EventTypeNormal, ReasonAddingPermissionClaims, "Added permission claims: %s", claimList(u.AddedClaims))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to update APIExport %s: %w", r.ExportName, err)
	}
	exp := &kcpapisv1alpha2.APIExport{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, exp); err != nil {
		return nil, fmt.Errorf("failed to decode APIExport %s: %w", r.ExportName, err)
	}
	return exp, nil
}

// publisher is who this agent is as a publisher into the export.
func (r *Reconciler) publisher() export.Publisher {
	return export.Publisher{AgentName: r.AgentName, Lease: keys.LeaderLease(r.AgentName, r.Partition), Claim: r.Partition != ""}
}

// decided passes whether this agent publishes on to the gate and, when
// that changes, says so: in the log, and while another agent publishes
// (np, found in exp) with a Warning Event on the APIExport and every
// selected PublishedResource (the metric sync_agent_publisher_refused
// holds it meanwhile).
func (r *Reconciler) decided(prs []syncagentv1alpha1.PublishedResource, state publisher.State, np *export.NotPublisherError, exp *kcpapisv1alpha2.APIExport) {
	other := ""
	if np != nil {
		other = np.Publisher
	}
	metrics.PublisherRefused.Set(map[bool]float64{true: 1}[state == publisher.Refused])
	if !r.Gate.Set(state, other) {
		return
	}
	if state != publisher.Refused {
		r.log.Info("Publishing into the APIExport", "apiexport", r.ExportName, "lease", r.publisher().Lease)
		return
	}
	r.log.Error(np, "Not publishing", "apiexport", r.ExportName)
	msg := fmt.Sprintf("Not publishing into APIExport %s: %v.", r.ExportName, np)
	r.kcpRecorder.Event(exp, corev1.EventTypeWarning, ReasonPublisherConflict, msg)
	for i := range prs {
		r.prEvents.Event(&prs[i], corev1.EventTypeWarning, ReasonPublisherConflict, msg)
	}
}

func claimList(claims []export.Claim) string {
	parts := make([]string, 0, len(claims))
	for _, c := range claims {
		gr := schema.GroupResource{Group: c.Group, Resource: c.Resource}.String()
		if c.IdentityHash != "" {
			gr += ":" + c.IdentityHash
		}
		parts = append(parts, gr)
	}
	return strings.Join(parts, ", ")
}

// exportReady computes a PublishedResource's ExportReady condition.
func exportReady(pr *syncagentv1alpha1.PublishedResource, exp *kcpapisv1alpha2.APIExport, exportGRs sets.Set[schema.GroupResource]) metav1.Condition {
	name := pr.Status.ResourceSchemaName
	if name == "" {
		return conditions.New(syncagentv1alpha1.ConditionExportReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonWaitingForSchema,
			"The APIResourceSchema does not exist yet.")
	}
	listed := slices.ContainsFunc(exp.Spec.Resources, func(r kcpapisv1alpha2.ResourceSchema) bool { return r.Schema == name })
	missing := export.MissingClaims(exp.Spec.PermissionClaims, export.RequiredClaims([]syncagentv1alpha1.PublishedResource{*pr}, exportGRs))
	if !listed || len(missing) > 0 {
		return conditions.New(syncagentv1alpha1.ConditionExportReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonWaitingForSchema,
			fmt.Sprintf("APIExport %s does not list schema %s and all required claims yet.", exp.Name, name))
	}
	return conditions.New(syncagentv1alpha1.ConditionExportReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonSchemaExported,
		fmt.Sprintf("Schema %s is exported by APIExport %s.", name, exp.Name))
}

// setConditions writes each PublishedResource's ExportReady condition (only
// where it changed).
func (r *Reconciler) setConditions(ctx context.Context, prs []syncagentv1alpha1.PublishedResource, compute func(*syncagentv1alpha1.PublishedResource) metav1.Condition) error {
	var errs []error
	for i := range prs {
		pr := &prs[i]
		cond := compute(pr)
		if err := r.status.Update(ctx, pr, func(st *syncagentv1alpha1.PublishedResourceStatus) {
			conditions.Apply(st, cond, pr.Generation)
		}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
