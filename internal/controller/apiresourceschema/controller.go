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
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/conditions"
	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/lifecycle"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	"github.com/kcp-syncagent/api-syncagent/internal/publisher"
	"github.com/kcp-syncagent/api-syncagent/internal/selection"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// ControllerName is the controller's name in logs, metrics and as field manager.
const ControllerName = "syncagent-apiresourceschema"

// sourceNotFoundRetry is how often a PublishedResource whose source type is
// not served is retried. CRDs trigger a reconcile when they appear; this
// interval covers aggregated APIs, which send no CRD event.
const sourceNotFoundRetry = time.Minute

// undecidedRetry is how soon a PublishedResource is looked at again while
// the apiexport controller has not yet read whether this agent publishes
// (its first pass, moments after the start).
const undecidedRetry = 2 * time.Second

// notPublisherRecheck is how often a PublishedResource is looked at again
// while another agent of this name publishes: a handover (the record
// removed) is seen by the apiexport controller at once, and here within
// this time.
const notPublisherRecheck = time.Minute

// Options configure the controller.
type Options struct {
	// AgentName is written into the schemas' labels and annotations.
	AgentName string
	// Selector selects the PublishedResources of this agent.
	Selector labels.Selector
	// KcpClient writes to the APIExport's workspace.
	KcpClient ctrlruntimeclient.Client
	// Resolver finds source types on the service cluster.
	Resolver *discovery.Resolver
	// Workers is the number of concurrent reconciles (reference: 4).
	Workers int
	// Gate says whether this agent publishes (nil: it does); see
	// internal/publisher.
	Gate *publisher.Gate
}

// Reconciler reconciles PublishedResources into APIResourceSchemas.
type Reconciler struct {
	Options
	client   ctrlruntimeclient.Client
	recorder record.EventRecorder
	status   *conditions.Writer
	log      logr.Logger
	// deprecations remembers the generations whose deprecated inputs
	// were logged (contract §2.9: once per generation).
	deprecations *once.PerGeneration
	// waitLogged: the wait for the publisher decision was logged.
	waitLogged atomic.Bool
}

// Add sets up the controller with the manager.
func Add(mgr manager.Manager, opts Options) error {
	switch {
	case opts.AgentName == "", opts.Selector == nil, opts.KcpClient == nil, opts.Resolver == nil:
		return errors.New("apiresourceschema: AgentName, Selector, KcpClient and Resolver are required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	log := mgr.GetLogger().WithName(ControllerName)
	r := &Reconciler{
		Options:  opts,
		client:   mgr.GetClient(),
		recorder: mgr.GetEventRecorderFor(ControllerName),
		status:   &conditions.Writer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), FieldOwner: ControllerName, Log: log},
		log:      log,

		deprecations: once.NewPerGeneration(),
	}

	selected := predicate.NewPredicateFuncs(func(o ctrlruntimeclient.Object) bool { return selection.Matches(opts.Selector, o) })
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers}).
		// Status changes matter too: Ready is recomputed from the other
		// controllers' conditions. Writes happen only on differences.
		For(&syncagentv1alpha1.PublishedResource{}, builder.WithPredicates(selected)).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, selection.CRDEventHandler(r.client, opts.Selector, opts.Resolver.Invalidate, log)).
		Complete(lifecycle.QuietOnStop[reconcile.Request](r))
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := r.log.WithValues("publishedresource", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)

	pr := &syncagentv1alpha1.PublishedResource{}
	if err := r.client.Get(ctx, req.NamespacedName, pr); err != nil {
		return reconcile.Result{}, ctrlruntimeclient.IgnoreNotFound(err)
	}
	// Deleting a PublishedResource deletes nothing in kcp: schemas stay so
	// that consumers' data is not lost by accident.
	if pr.DeletionTimestamp != nil || !selection.Matches(r.Selector, pr) {
		return reconcile.Result{}, nil
	}
	// Another agent of this name publishes: no schema, no condition (its
	// would be overwritten). The apiexport controller reports it.
	switch state, other := r.Gate.Get(); state {
	case publisher.Unknown:
		if !r.waitLogged.Swap(true) {
			log.Info("Waiting for the apiexport controller to read whether this agent is its name's publisher (its log says why if it cannot)")
		}
		return reconcile.Result{RequeueAfter: undecidedRetry}, nil
	case publisher.Refused:
		log.V(1).Info("Not publishing: another agent of this name does", "publisher", other)
		return reconcile.Result{RequeueAfter: notPublisherRecheck}, nil
	}

	out := r.reconcile(ctx, pr)

	if err := r.status.Update(ctx, pr, func(st *syncagentv1alpha1.PublishedResourceStatus) {
		if out.schemaName != "" {
			st.ResourceSchemaName = out.schemaName
		}
		st.ObservedGeneration = pr.Generation
		conditions.Apply(st, out.schema, pr.Generation)
		conditions.Apply(st, out.config, pr.Generation)
	}); err != nil {
		return reconcile.Result{}, err
	}

	if out.err != nil {
		var perr *projection.Error
		var nf *discovery.NotFoundError
		switch {
		case errors.As(out.err, &nf):
			return reconcile.Result{RequeueAfter: sourceNotFoundRetry}, nil
		case errors.As(out.err, &perr), errors.Is(out.err, errConflict):
			// Invalid input: retrying cannot help until the
			// PublishedResource or the CRD changes, which triggers a
			// reconcile anyway.
			return reconcile.Result{}, reconcile.TerminalError(out.err)
		default:
			return reconcile.Result{}, fmt.Errorf("failed to publish the schema: %w", out.err)
		}
	}
	return reconcile.Result{}, nil
}
