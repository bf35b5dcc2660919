package sync

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/imports"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/syncer"
)

// Event reasons of imports, on the service-cluster object that asks for
// one.
const (
	ReasonObjectImported = "ObjectImported"
	ReasonImportRefused  = "ImportRefused"
	ReasonImportWaiting  = "ImportWaiting"
)

// Imports counts the imports of service-cluster objects into kcp per
// PublishedResource and result (imported, refused).
var Imports = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sync_agent_imports_total",
	Help: "Service-cluster objects imported into a kcp workspace (result=imported), and import requests refused (result=refused).",
}, []string{"published_resource", "result"})

func init() { //nolint:gochecknoinits // metrics must be registered once, before the metrics server starts.
	ctrlmetrics.Registry.MustRegister(Imports)
}

// importer handles the import requests of a PublishedResource: objects of
// its local type labelled syncagent.kcp.io/import-into. A request is
// handled in the pass of the kcp object it asks for, so that nothing else
// runs for that object meanwhile: the kcp object is created (with the
// agent's finalizer and the object's UID), the service-cluster object is
// adopted as its copy (state first, then labels), and the request is
// removed. A pass that finds the kcp object created by the request goes on
// from there, whatever step an earlier one stopped at.
type importer struct {
	// cache holds the objects that carry the request label.
	cache         ctrlruntimeclient.Reader
	localGVK      schema.GroupVersionKind
	kcpNamespaced bool
	prName        string
	agentName     string
	// service writes the service-cluster object; live reads from the API
	// server.
	service ctrlruntimeclient.Client
	live    ctrlruntimeclient.Reader
	events  record.EventRecorder
	// told remembers what was said last on each object, so that passes
	// over a kcp object do not repeat it.
	told *once.PerValue
}

// requestOf returns the import request of obj; ok is false if it asks
// for none.
func (im *importer) requestOf(obj *unstructured.Unstructured) (imports.Request, bool, error) {
	return imports.Of(obj, im.kcpNamespaced)
}

// keys maps an object with an import request to the kcp object it asks
// for; an invalid request is said on the object at once.
func (im *importer) keys(_ context.Context, _, obj *unstructured.Unstructured) []mcreconcile.Request {
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	req, ok, err := im.requestOf(obj)
	switch {
	case !ok:
		return nil
	case err != nil:
		im.refuse(obj, err.Error())
		return nil
	}
	return []mcreconcile.Request{{ClusterName: req.Cluster, Request: reconcile.Request{NamespacedName: req.Key}}}
}

// forWorkspace returns the kcp objects that requests ask for in a
// workspace (from the cache).
func (im *importer) forWorkspace(ctx context.Context, cluster string) []mcreconcile.Request {
	items, err := im.list(ctx, cluster)
	if err != nil {
		return nil
	}
	var out []mcreconcile.Request
	for i := range items {
		out = append(out, im.keys(ctx, nil, &items[i])...)
	}
	return out
}

func (im *importer) list(ctx context.Context, cluster string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(im.localGVK.GroupVersion().WithKind(im.localGVK.Kind + "List"))
	if err := im.cache.List(ctx, list, ctrlruntimeclient.MatchingLabels{keys.ImportInto: cluster}); err != nil {
		return nil, fmt.Errorf("failed to list the import requests: %w", err)
	}
	return list.Items, nil
}

// pending returns the object whose request asks for the kcp object of
// req (from the cache), nil if none does. Two objects asking for the same
// kcp object are both refused.
func (im *importer) pending(ctx context.Context, req mcreconcile.Request) (*unstructured.Unstructured, error) {
	items, err := im.list(ctx, req.ClusterName)
	if err != nil {
		return nil, err
	}
	var found []*unstructured.Unstructured
	for i := range items {
		item := &items[i]
		if r, ok, err := im.requestOf(item); ok && err == nil && item.GetDeletionTimestamp() == nil && r.Key == req.NamespacedName {
			found = append(found, item)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0].DeepCopy(), nil
	}
	for _, f := range found {
		im.refuse(f, fmt.Sprintf("%d objects ask to be imported as %s", len(found), importTarget(req)))
	}
	return nil, nil
}

func importTarget(req mcreconcile.Request) string {
	return imports.Request{Cluster: req.ClusterName, Key: req.NamespacedName}.String()
}

// refuse says on obj why its import request is refused (once per
// reason).
func (im *importer) refuse(obj *unstructured.Unstructured, why string) {
	if !im.told.First(obj, why) {
		return
	}
	Imports.WithLabelValues(im.prName, "refused").Inc()
	im.events.Event(obj, corev1.EventTypeWarning, ReasonImportRefused, fmt.Sprintf("The object is not imported: %s.", why))
}

// notEngaged says on the objects asking for the kcp object of req that
// its workspace is not engaged; they are looked at again when it is.
func (im *importer) notEngaged(ctx context.Context, req mcreconcile.Request) {
	if im == nil {
		return
	}
	local, err := im.pending(ctx, req)
	if err != nil || local == nil || !im.told.First(local, "waiting for "+req.ClusterName) {
		return
	}
	im.events.Event(local, corev1.EventTypeWarning, ReasonImportWaiting,
		fmt.Sprintf("The import waits: workspace %s does not bind the export, or the agent has not connected to it yet.", req.ClusterName))
}

// done removes the request from local.
func (im *importer) done(ctx context.Context, local *unstructured.Unstructured) error {
	if err := im.service.Patch(ctx, local, ctrlruntimeclient.RawPatch(types.MergePatchType, imports.Done())); err != nil {
		return fmt.Errorf("failed to remove the import request: %w", ctrlruntimeclient.IgnoreNotFound(err))
	}
	return nil
}

// importPass handles an import request for the kcp object of req (obj,
// nil if it does not exist) in its workspace; handled is false if there
// is none to handle now, and the pass goes on as usual.
func (r *reconciler) importPass(ctx context.Context, engaged Workspace, kcpClient ctrlruntimeclient.Client, req mcreconcile.Request, obj *unstructured.Unstructured, p *pass) (reconcile.Result, bool, error) {
	im := r.imports
	local, err := im.pending(ctx, req)
	if err != nil || local == nil {
		return reconcile.Result{}, false, err
	}
	switch {
	case obj != nil && !imports.CreatedBy(obj, local):
		im.refuse(local, fmt.Sprintf("%s %s exists already", r.remoteGVK.Kind, importTarget(req)))
		return reconcile.Result{}, false, nil
	case obj != nil && obj.GetDeletionTimestamp() != nil:
		im.refuse(local, fmt.Sprintf("%s %s, created by its import, was deleted before the import was done", r.remoteGVK.Kind, importTarget(req)))
		return reconcile.Result{}, false, im.done(ctx, local)
	case obj == nil:
		created, why, err := r.createImported(ctx, kcpClient, req, local)
		if err != nil || why != "" {
			if why != "" {
				im.refuse(local, why)
			}
			return reconcile.Result{}, false, err
		}
		obj = created
	}

	ws := syncer.Workspace{Client: kcpClient, Live: engaged.Cluster.GetClient(), Cluster: req.ClusterName}
	if r.pr.Spec.EnableWorkspacePaths {
		if ws.Path, err = workspacePath(ctx, kcpClient); err != nil {
			return reconcile.Result{}, true, err
		}
	}
	recorder := r.kcpRecorder(req.ClusterName, engaged.Cluster)
	s := *r.syncer
	s.Event = func(o ctrlruntimeclient.Object, eventType, reason, message string) {
		recorder.Event(o, eventType, reason, message)
	}
	r.count(&s, &ws, req, p)
	res, err := s.AdoptImported(ctx, ws, obj, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()})
	r.record(p)
	switch {
	case errors.Is(err, syncer.ErrConflict):
		im.refuse(local, "it became the copy of another object while it was imported")
		return reconcile.Result{}, true, im.done(ctx, local)
	case err != nil:
		return reconcile.Result{}, true, err
	case res.Waiting != "":
		return reconcile.Result{RequeueAfter: waitRetryMin}, true, nil
	}
	if err := im.done(ctx, local); err != nil {
		return reconcile.Result{}, true, err
	}
	im.told.Forget(local)
	Imports.WithLabelValues(im.prName, "imported").Inc()
	log.FromContext(ctx).Info("Imported a service-cluster object", "local", objmeta.QualifiedName(local.GetNamespace(), local.GetName()))
	im.events.Event(local, corev1.EventTypeNormal, ReasonObjectImported, fmt.Sprintf("The object was imported as %s %s.", r.remoteGVK.Kind, importTarget(req)))
	recorder.Event(obj, corev1.EventTypeNormal, ReasonObjectImported, "The object was imported from the service cluster.")
	return reconcile.Result{RequeueAfter: requeueAfterWrite}, true, nil
}

// createImported creates the kcp object that local's request req asks
// for, unless the request is refused (why says why) or changed since the
// cache saw it (nothing, no reason: its own event comes).
func (r *reconciler) createImported(ctx context.Context, kcpClient ctrlruntimeclient.Client, req mcreconcile.Request, cached *unstructured.Unstructured) (created *unstructured.Unstructured, why string, err error) {
	im := r.imports
	// The request as the API server has it now.
	local := typed(im.localGVK)
	if err := im.live.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(cached), local); err != nil {
		return nil, "", ctrlruntimeclient.IgnoreNotFound(err)
	}
	ir, ok, err := im.requestOf(local)
	switch {
	case !ok || local.GetUID() != cached.GetUID() || local.GetDeletionTimestamp() != nil:
		return nil, "", nil
	case err != nil:
		return nil, err.Error(), nil
	case ir.Cluster != req.ClusterName || ir.Key != req.NamespacedName:
		return nil, "", nil
	}
	var nsLabels map[string]string
	if local.GetNamespace() != "" {
		ns := &corev1.Namespace{}
		if err := im.live.Get(ctx, types.NamespacedName{Name: local.GetNamespace()}, ns); err != nil {
			return nil, "", fmt.Errorf("failed to read the namespace of an object to import: %w", err)
		}
		nsLabels = ns.Labels
	}
	if why := imports.Refusal(local, ir, nsLabels); why != "" {
		return nil, why, nil
	}
	obj := imports.KcpObject(local, r.remoteGVK, ir, finalizer.For(im.agentName).Own)
	if obj.GetNamespace() != "" {
		if err := kcpClient.Get(ctx, types.NamespacedName{Name: obj.GetNamespace()}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("namespace %s does not exist in workspace %s", obj.GetNamespace(), req.ClusterName), nil
		}
	}
	matches, err := r.matches(ctx, kcpClient, obj)
	if err != nil {
		return nil, "", err
	}
	if !matches {
		return nil, "the PublishedResource's filter would not select the kcp object", nil
	}
	err = kcpClient.Create(ctx, obj)
	switch {
	case apierrors.IsAlreadyExists(err):
		// Created since the pass read it: the next pass decides.
		return nil, "", err
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("kcp refused the object (%s): %s", apierrors.ReasonForError(err), apiMessage(err)), nil
	case err != nil:
		return nil, "", fmt.Errorf("failed to create the imported kcp object: %w", err)
	}
	return obj, "", nil
}

// apiMessage is the message of an API error.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
