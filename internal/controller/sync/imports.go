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

package sync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
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
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
	"github.com/kcp-syncagent/api-syncagent/internal/once"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/imports"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
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
	metrics.ForgetWithPublishedResource(Imports.MetricVec)
}

// importListTimeout bounds the read of a newly engaged workspace's import
// requests from the cache (it waits for nothing else).
const importListTimeout = 10 * time.Second

// importer handles the import requests of a PublishedResource: objects of
// its local type labelled syncagent.kcp.io/import-into. A request is
// handled in the pass of the kcp object it asks for, so that nothing else
// runs for that object meanwhile: the object is checked and claimed, the
// kcp object is created (with the agent's finalizer and the object's UID),
// and the sync of that kcp object, in the same pass or a later one,
// finishes the import (see syncer.finishImport).
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
	log     logr.Logger
	// told remembers what was said last on each object, so that passes
	// over a kcp object do not repeat it.
	told *once.PerValue
}

// setUpImports gives the controller its importer: a watch of the import
// requests of the local type (returned, to be added to the controller) and
// the hub's hook for workspaces engaged later. Before the controller runs,
// the watch's first list brings the requests; after it, a request for a
// workspace that was not engaged is read again in a goroutine once it is
// (the hub's Engage never waits).
func (c *Controller) setUpImports(opts Options, r *reconciler, log logr.Logger) *localSource {
	r.imports = &importer{
		cache: opts.ImportCache, localGVK: opts.LocalGVK, kcpNamespaced: opts.RemoteNamespaced,
		prName: opts.PublishedResource.Name, agentName: opts.AgentName, service: opts.Service, live: opts.ServiceReader,
		events: opts.Events, log: log, told: once.NewPerValue(),
	}
	source := newLocalSource(opts.ImportCache, typed(opts.LocalGVK), r.imports.keys)
	c.local = append(c.local, source)
	c.hub.engaged = func(name string) {
		select {
		case <-c.synced:
		default:
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), importListTimeout)
			defer cancel()
			for _, req := range r.imports.forWorkspace(ctx, name) {
				c.hub.enqueue(req)
			}
		}()
	}
	return source
}

// keys maps an object with an import request to the kcp object it asks
// for; an invalid request is said on the object at once.
func (im *importer) keys(_ context.Context, _, obj *unstructured.Unstructured) []mcreconcile.Request {
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	req, ok, err := imports.Of(obj, im.kcpNamespaced)
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
		if r, ok, err := imports.Of(item, im.kcpNamespaced); ok && err == nil && item.GetDeletionTimestamp() == nil && r.Key == req.NamespacedName {
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
	im.log.Info("Refused to import a service-cluster object", "local", objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()), "reason", why)
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

// done removes the request from local (read from the API server).
func (im *importer) done(ctx context.Context, local *unstructured.Unstructured) error {
	cur := typed(im.localGVK)
	if err := im.live.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(local), cur); err != nil {
		return ctrlruntimeclient.IgnoreNotFound(err)
	}
	if _, asks := cur.GetLabels()[keys.ImportInto]; !asks || cur.GetUID() != local.GetUID() {
		return nil
	}
	if err := im.service.Patch(ctx, cur, ctrlruntimeclient.RawPatch(types.MergePatchType, imports.Done())); err != nil {
		return fmt.Errorf("failed to remove the import request: %w", ctrlruntimeclient.IgnoreNotFound(err))
	}
	return nil
}

// importPass handles an import request for the kcp object of req (obj,
// from the cache; nil if it does not exist) in its workspace: it refuses
// it, or claims the object and creates the kcp object (returned: the pass
// goes on with it, and the sync finishes the import, see
// syncer.finishImport). handled means the pass ends here (with err).
func (r *reconciler) importPass(ctx context.Context, engaged Workspace, kcpClient ctrlruntimeclient.Client, req mcreconcile.Request, obj *unstructured.Unstructured, p *pass) (created *unstructured.Unstructured, handled bool, err error) {
	im := r.imports
	local, err := im.pending(ctx, req)
	if err != nil || local == nil {
		return nil, false, err
	}
	if obj != nil {
		// The cache may lag behind a deletion or a creation.
		if err := engaged.Cluster.GetClient().Get(ctx, req.NamespacedName, obj); err != nil {
			return nil, true, err
		}
		switch {
		case !imports.CreatedBy(obj, local):
			// The sync drops a claim an earlier pass may have left.
			im.refuse(local, fmt.Sprintf("%s %s exists already", r.remoteGVK.Kind, importTarget(req)))
		case obj.GetDeletionTimestamp() != nil:
			// The sync drops the claim unless the import was finished.
			im.refuse(local, fmt.Sprintf("%s %s, created by its import, is being deleted", r.remoteGVK.Kind, importTarget(req)))
			return nil, false, im.done(ctx, local)
		}
		return nil, false, nil
	}
	ws := syncer.Workspace{Client: kcpClient, Live: engaged.Cluster.GetClient(), Cluster: req.ClusterName}
	if r.pr.Spec.EnableWorkspacePaths {
		if ws.Path, err = workspacePath(ctx, kcpClient); err != nil {
			return nil, true, err
		}
	}
	s := *r.syncer
	r.count(&s, &ws, req, p)
	defer r.record(p)
	created, why, err := r.createImported(ctx, &s, ws, req, local)
	if why != "" {
		im.refuse(local, why)
	}
	return created, false, err
}

// imported says that the pass finished the import of local as obj.
func (r *reconciler) imported(ctx context.Context, req mcreconcile.Request, obj, local *unstructured.Unstructured, recorder record.EventRecorder) {
	Imports.WithLabelValues(r.pr.Name, "imported").Inc()
	log.FromContext(ctx).Info("Imported a service-cluster object", "local", objmeta.QualifiedName(local.GetNamespace(), local.GetName()))
	r.prRecorder.Event(local, corev1.EventTypeNormal, ReasonObjectImported, fmt.Sprintf("The object was imported as %s %s.", r.remoteGVK.Kind, importTarget(req)))
	recorder.Event(obj, corev1.EventTypeNormal, ReasonObjectImported, "The object was imported from the service cluster.")
	if r.imports != nil {
		r.imports.told.Forget(local)
	}
}

// createImported checks the request req of cached (as the API server has
// the object now), claims the object (it gets the sync labels of the kcp
// object, so that no pass makes a second copy) and creates the kcp object.
// why says why the request is refused (nothing is written; a claim is
// dropped); no object and no reason: the request changed since the cache
// saw it (its own event comes), or a write failed (err).
func (r *reconciler) createImported(ctx context.Context, s *syncer.Syncer, ws syncer.Workspace, req mcreconcile.Request, cached *unstructured.Unstructured) (created *unstructured.Unstructured, why string, err error) {
	im := r.imports
	local := typed(im.localGVK)
	if err := im.live.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(cached), local); err != nil {
		return nil, "", ctrlruntimeclient.IgnoreNotFound(err)
	}
	ir, ok, err := imports.Of(local, im.kcpNamespaced)
	switch {
	case !ok || local.GetUID() != cached.GetUID() || local.GetDeletionTimestamp() != nil:
		return nil, "", nil
	case err != nil:
		return nil, err.Error(), nil
	case ir.Cluster != req.ClusterName || ir.Key != req.NamespacedName:
		return nil, "", nil
	}
	obj := imports.KcpObject(local, r.remoteGVK, ir, finalizer.For(im.agentName).Own)
	p := syncer.ImportPrimary(ws, obj)
	if why, err := r.importRefusal(ctx, ws, local, ir, obj, p); why != "" || err != nil {
		return nil, why, err
	}
	if err := s.ClaimForImport(ctx, local, p); err != nil {
		return nil, "", err
	}
	err = ws.Client.Create(ctx, obj)
	switch {
	case err == nil:
		return obj, "", nil
	case apierrors.IsAlreadyExists(err):
		// Perhaps this import's own, whose answer was lost.
		cur := typed(r.remoteGVK)
		if err := ws.Live.Get(ctx, req.NamespacedName, cur); err != nil {
			return nil, "", err
		}
		if imports.CreatedBy(cur, local) {
			return cur, "", nil
		}
		why = fmt.Sprintf("%s %s exists already", r.remoteGVK.Kind, importTarget(req))
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsNotFound(err):
		why = fmt.Sprintf("kcp refused the object (%s): %s", apierrors.ReasonForError(err), apiMessage(err))
	default:
		// Tried again: the claim stays for that (a claimed object is
		// neither deleted nor taken over by another kcp object).
		return nil, "", fmt.Errorf("failed to create the imported kcp object: %w", err)
	}
	_, err = s.DropClaim(ctx, ctrlruntimeclient.ObjectKeyFromObject(local), p)
	return nil, why, err
}

// importRefusal returns why local may not be imported as obj (the primary
// p) by the request ir; empty if it may.
func (r *reconciler) importRefusal(ctx context.Context, ws syncer.Workspace, local *unstructured.Unstructured, ir imports.Request, obj *unstructured.Unstructured, p state.Primary) (string, error) {
	im := r.imports
	var nsLabels map[string]string
	if ns := local.GetNamespace(); ns != "" {
		namespace := &corev1.Namespace{}
		if err := im.live.Get(ctx, types.NamespacedName{Name: ns}, namespace); err != nil {
			return "", fmt.Errorf("failed to read the namespace of an object to import: %w", err)
		}
		nsLabels = namespace.Labels
	}
	if why := imports.Refusal(local, ir, nsLabels, p.Labels(im.agentName)); why != "" {
		return why, nil
	}
	other, err := imports.NamespaceOfOther(ctx, im.live, im.localGVK, local.GetNamespace(), ir.Cluster)
	if err != nil {
		return "", err
	}
	if other != "" {
		return fmt.Sprintf("its namespace is named after workspace %s and holds copies of its objects", other), nil
	}
	if ns := obj.GetNamespace(); ns != "" {
		if err := ws.Client.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			return fmt.Sprintf("namespace %s does not exist in workspace %s", ns, ir.Cluster), nil
		}
	}
	matches, err := r.matches(ctx, ws.Client, obj)
	if err != nil {
		return "", err
	}
	if !matches {
		return "the PublishedResource's filter would not select the kcp object", nil
	}
	return "", nil
}

// apiMessage is the message of an API error.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
