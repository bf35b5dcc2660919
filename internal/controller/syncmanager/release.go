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

package syncmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
	"github.com/kcp-syncagent/api-syncagent/internal/finalizer"
	"github.com/kcp-syncagent/api-syncagent/internal/keys"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	"github.com/kcp-syncagent/api-syncagent/internal/selection"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/related"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/state"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// releaseRequestTimeout bounds each request of a release; lists are read
// in pages of releaseListPage objects.
const (
	releaseRequestTimeout = 30 * time.Second
	releaseListPage       = 500
)

// endpointClients returns a dynamic client for one workspace of an
// endpoint, or for all of them with cluster "*".
type endpointClients func(url, cluster string) (dynamic.Interface, error)

func (r *reconciler) newEndpointClient(url, cluster string) (dynamic.Interface, error) {
	return endpointClientsFor(r.Target.Config)(url, cluster)
}

// endpointClientsFor makes endpoint clients with base's credentials.
func endpointClientsFor(base *rest.Config) endpointClients {
	return func(url, cluster string) (dynamic.Interface, error) {
		cfg := rest.CopyConfig(base)
		cfg.Host = strings.TrimSuffix(url, "/") + "/clusters/" + cluster
		cfg.Timeout = releaseRequestTimeout
		return dynamic.NewForConfig(cfg)
	}
}

// release is one pass of releasing a deleted PublishedResource: our
// finalizer is removed from every object of its kcp type on every
// endpoint, engaged or not, and from the kcp-origin related objects its
// primaries' records name (their records are deleted). It reports the
// first problem; the caller keeps the PublishedResource's finalizer and
// tries again.
type release struct {
	urls    []string
	clients endpointClients
	// served finds the version and kind of a resource on an endpoint
	// (false if the endpoint does not serve it).
	served func(url string, gr schema.GroupResource) (schema.GroupVersionKind, bool, error)
	// resourceOf finds the resource of a kind on an endpoint (false if the
	// endpoint does not serve it).
	resourceOf func(url string, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error)
	// fenceOf is the fence of an endpoint's writes (nil: none).
	// othersRelease: another partition's agent has a release finalizer on
	// the PublishedResource too; servesWorkspace then tells the workspaces
	// engaged by the endpoints this agent serves.
	fenceOf         func(url string) *fence.Fence
	othersRelease   bool
	servesWorkspace func(cluster string) bool
	state           *state.Store
	// fin are the agent's finalizers.
	fin finalizer.Of
	// event records an Event on an object of an engaged workspace.
	event func(cluster string, obj *unstructured.Unstructured)
	// progress counts the objects found and released (nil: not counted).
	progress *releaseProgress
}

// fenced is ctx with the fence of the endpoint url (an agent of a
// partition releases only the endpoints whose Leases it holds, and stops
// writing for one the moment it gives it up).
func (rel *release) fenced(ctx context.Context, url string) context.Context {
	if rel.fenceOf == nil {
		return ctx
	}
	return fence.WithEndpoint(ctx, rel.fenceOf(url))
}

// run releases the objects of gr; it returns how many were released.
func (rel *release) run(ctx context.Context, gr schema.GroupResource) (int, error) {
	released := 0
	var kinds []schema.GroupVersionKind
	var errs []error
	for _, url := range rel.urls {
		gvk, ok, err := rel.served(url, gr)
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", url, err))
			continue
		}
		if !ok {
			continue
		}
		kinds = append(kinds, gvk)
		n, err := rel.releaseOn(rel.fenced(ctx, url), url, gvk.GroupVersion().WithResource(gr.Resource))
		released += n
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", url, err))
		}
	}
	if len(kinds) > 0 {
		if err := rel.releaseRelated(ctx, kinds[0].GroupKind()); err != nil {
			errs = append(errs, err)
		}
	}
	return released, errors.Join(errs...)
}

// releaseUnrecorded removes the agent's own finalizer from the objects of
// a kcp-origin related resource on one endpoint that no record of the
// agent names: a source gets the finalizer before its first copy, so one
// whose copy was never written (refused by the service cluster, its
// namespace not creatable) has no record, and nothing else would release
// it. The legacy finalizer is left: without a record it may be another
// agent's. A resource the endpoint does not serve has nothing to release.
func (rel *release) releaseUnrecorded(ctx context.Context, url string, gvr schema.GroupVersionResource) (int, error) {
	released := 0
	err := rel.eachObject(ctx, url, gvr, true, func(obj *unstructured.Unstructured) error {
		if !rel.fin.Owns(obj) {
			return nil
		}
		ref := state.RefOf(obj)
		cluster := logicalcluster.From(obj).String()
		records, err := rel.state.RecordsOfSource(ctx, cluster, ref)
		if err == nil && len(records) == 0 {
			// A record written a moment ago may not be cached yet.
			records, err = rel.state.RecordsOfSourceLive(ctx, cluster, ref)
		}
		if err != nil || len(records) > 0 {
			return err // released with its records, or held by another primary
		}
		ok, err := rel.releaseObject(ctx, url, gvr, obj, false)
		if err != nil {
			return err
		}
		released += rel.tally(ok)
		return nil
	})
	return released, err
}

// releaseOn removes our finalizer from the objects of gvr on one endpoint.
func (rel *release) releaseOn(ctx context.Context, url string, gvr schema.GroupVersionResource) (int, error) {
	released := 0
	var errs []error
	err := rel.eachObject(ctx, url, gvr, false, func(obj *unstructured.Unstructured) error {
		if !rel.fin.Holds(obj) {
			return nil
		}
		legacy := !rel.fin.Owns(obj)
		if ours, err := rel.ours(ctx, obj, legacy); err != nil || !ours {
			if err != nil {
				errs = append(errs, err)
			}
			return nil
		}
		ok, err := rel.releaseObject(ctx, url, gvr, obj, legacy)
		if err != nil {
			errs = append(errs, err)
		}
		released += rel.tally(ok)
		return nil
	})
	return released, errors.Join(append(errs, err)...)
}

// eachObject calls fn for every object of gvr in the workspaces of an
// endpoint, listed releaseListPage at a time, and stops at fn's first
// error. A resource the endpoint does not serve has no objects if
// missingIsEmpty is set, and is an error otherwise.
func (rel *release) eachObject(ctx context.Context, url string, gvr schema.GroupVersionResource, missingIsEmpty bool, fn func(*unstructured.Unstructured) error) error {
	all, err := rel.clients(url, "*")
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{Limit: releaseListPage}
	for {
		list, err := all.Resource(gvr).List(ctx, opts)
		if missingIsEmpty && apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to list %s: %w", gvr.GroupResource(), err)
		}
		for i := range list.Items {
			if err := fn(&list.Items[i]); err != nil {
				return err
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// tally counts an object found with the agent's finalizer into the
// release's progress, released or not, and returns what it adds to the
// count released.
func (rel *release) tally(released bool) int {
	n := 0
	if released {
		n = 1
	}
	rel.progress.count(1, n)
	return n
}

// ours reports whether a primary with the agent's finalizer is this
// agent's to release. With its own finalizer it is, synced or not (an
// object accepted but never synced has no state, and must not keep the
// finalizer); with the legacy one only if the agent holds its state
// (another agent may use the legacy finalizer, and an object accepted but
// never synced before per-agent finalizers is indistinguishable from
// another agent's). Either way not while a related record names it as a
// kcp-origin source (another PublishedResource still needs the finalizer).
func (rel *release) ours(ctx context.Context, obj *unstructured.Unstructured, legacy bool) (bool, error) {
	p := state.Primary{Remote: objmeta.Remote{Cluster: logicalcluster.From(obj).String(), Namespace: obj.GetNamespace(), Name: obj.GetName()},
		APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind()}
	if legacy {
		st, err := rel.state.Get(ctx, p)
		if err != nil || st == nil {
			return false, err
		}
	}
	ref := state.RefOf(obj)
	holders, err := rel.state.SourceHolders(ctx, p, ref)
	return err == nil && len(holders) == 0, err
}

// releaseObject removes our finalizer from obj (of a workspace of the
// endpoint) if it has it. The patch fails if the object changed since it
// was read (another controller's finalizer must not be lost); then the
// object is read again and the patch retried, so a consumer's concurrent
// write does not leave our finalizer behind (a one-pass release has no
// second chance). An object re-created under the name meanwhile is left
// alone.
func (rel *release) releaseObject(ctx context.Context, url string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, legacyOurs bool) (bool, error) {
	cluster := logicalcluster.From(obj).String()
	c, err := rel.clients(url, cluster)
	if err != nil {
		return false, err
	}
	objects := c.Resource(gvr).Namespace(obj.GetNamespace())
	released := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rest := obj.DeepCopy()
		if !rel.fin.Release(rest, legacyOurs) {
			return nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": rest.GetFinalizers(), "resourceVersion": obj.GetResourceVersion()}})
		if err != nil {
			return err
		}
		_, err = objects.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsConflict(err) {
			fresh, gerr := objects.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			if fresh.GetUID() != obj.GetUID() {
				// Another object with the name: not the one this pass
				// decided to release.
				return nil
			}
			obj = fresh
		}
		released = err == nil
		return err
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to release %s %s in workspace %s: %w", gvr.Resource, objmeta.QualifiedName(obj.GetNamespace(), obj.GetName()), cluster, err)
	}
	if released && rel.event != nil {
		rel.event(cluster, obj)
	}
	return released, nil
}

// releaseRelated removes our finalizer from the kcp-origin related objects
// that primaries of group/kind gk hold (their records name them), unless
// a primary of another kind holds them too, and deletes those primaries'
// related records: with their PublishedResource gone, nothing would
// release the sources later.
func (rel *release) releaseRelated(ctx context.Context, gk schema.GroupKind) error {
	records, err := rel.state.RelatedRecordsOf(ctx, gk)
	if err != nil {
		return err
	}
	var errs []error
	for _, rec := range records {
		found, err := rel.releaseSource(ctx, gk, rec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if rec.Agent != "" && rec.Agent != rel.state.AgentName {
			// Another agent's record now (it took the PublishedResource
			// over): this agent's finalizer on the source is released, the
			// record is the other agent's.
			continue
		}
		if rel.othersRelease && !found && (rec.OriginSide == string(related.SideKcp) || !rel.servesWorkspace(rec.Cluster)) {
			// Perhaps a workspace of an endpoint another partition's agent
			// serves: its record is that agent's to release (it still has
			// a finalizer on the PublishedResource). The last partition to
			// release deletes what is left.
			continue
		}
		if err := rel.state.DeleteRelated(ctx, rec.SecretName); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// releaseSource removes our finalizer from a record's kcp-origin source on
// whichever endpoint serves its workspace, unless the record of a primary
// of another kind than gk names it as its kcp origin too; found: an
// endpoint of rel has the source. A source that no reachable endpoint has
// is gone.
func (rel *release) releaseSource(ctx context.Context, gk schema.GroupKind, rec state.StoredRelated) (found bool, err error) {
	if rec.OriginSide != string(related.SideKcp) || rec.Origin.Name == "" {
		return false, nil
	}
	holders, err := rel.state.SourceHolders(ctx, rec.PrimaryOf(), rec.Origin)
	if err != nil {
		return false, err
	}
	for _, o := range holders {
		if o.Primary.GroupKind() != gk {
			return false, nil
		}
	}
	legacyOurs := state.LegacyFinalizerOurs(&rec.RelatedRecord, false, holders)
	gvk := schema.FromAPIVersionAndKind(rec.Origin.APIVersion, rec.Origin.Kind)
	var errs []error
	for _, url := range rel.urls {
		ctx := rel.fenced(ctx, url)
		gvr, ok, err := rel.resourceOf(url, gvk)
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", url, err))
			continue
		}
		if !ok {
			continue
		}
		c, err := rel.clients(url, rec.Cluster)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		obj, err := c.Resource(gvr).Namespace(rec.Origin.Namespace).Get(ctx, rec.Origin.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// Not this endpoint's workspace, or gone.
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("endpoint %s: %w", url, err))
			continue
		}
		_, err = rel.releaseObject(ctx, url, gvr, obj, legacyOurs)
		return true, err
	}
	return false, errors.Join(errs...)
}

// releaseEvent records ObjectReleased on an object of an engaged workspace.
func (f *fleet) releaseEvent(cluster string, obj *unstructured.Unstructured) {
	if f.engagedCluster(cluster) != nil {
		f.kcpEvents(cluster, ControllerName).Event(obj, corev1.EventTypeNormal, ReasonObjectReleased, "The service no longer synchronizes this object; it was released.")
	}
}

// othersRelease reports whether another partition's agent has a release
// finalizer on the PublishedResource (false without a partition, and when
// it is gone).
func (r *reconciler) othersRelease(ctx context.Context, prName string) bool {
	if r.Partition == "" {
		return false
	}
	pr := &syncagentv1alpha1.PublishedResource{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: prName}, pr); err != nil {
		return !apierrors.IsNotFound(err) // unsure: keep the records
	}
	// Another partition's finalizer of this agent name (a name too long
	// for the key is hashed and not recognised: its records go as
	// without partitions).
	ours := strings.TrimSuffix(keys.ReleaseFinalizerIn(r.AgentName, "x"), "x")
	return slices.ContainsFunc(pr.Finalizers, func(f string) bool { return f != r.releaseFinalizer() && strings.HasPrefix(f, ours) })
}

// hasReleaseFinalizer reports whether the PublishedResource carries ours.
func (r *reconciler) hasReleaseFinalizer(pr *syncagentv1alpha1.PublishedResource) bool {
	return controllerutil.ContainsFinalizer(pr, r.releaseFinalizer())
}

// newRelease prepares a release through the given endpoints, counting
// into progress (nil: not counted).
func (r *reconciler) newRelease(urls []string, progress *releaseProgress) *release {
	return &release{urls: urls, clients: r.endpointClients, served: r.servedResource, resourceOf: r.resourceOfKind,
		fenceOf: r.fleet.endpointFence, servesWorkspace: r.fleet.servesWorkspace(), state: r.fleet.state, fin: finalizer.For(r.AgentName), event: r.fleet.releaseEvent, progress: progress}
}

// inUseElsewhere reports whether another selected PublishedResource syncs
// gr (records it, or its schema publishes it): its objects are then not
// released (a renamed PublishedResource, two of them for one resource).
func (r *reconciler) inUseElsewhere(ctx context.Context, gr schema.GroupResource, prName string) (bool, error) {
	prs, err := selection.List(ctx, r.client, r.Selector)
	if err != nil {
		return false, err
	}
	for i := range prs {
		other := &prs[i]
		if other.Name == prName {
			continue
		}
		if current, ok := projection.SchemaGroupResource(other.Status.ResourceSchemaName); (ok && current == gr) || slices.Contains(r.syncedResources(other), gr) {
			return true, nil
		}
	}
	return false, nil
}

// releaseResource releases the objects of gr for the PublishedResource,
// unless another one syncs gr (never, in release-only mode).
func (r *reconciler) releaseResource(ctx context.Context, prName string, gr schema.GroupResource, urls []string, progress *releaseProgress) (int, error) {
	rel := r.newRelease(urls, progress)
	rel.othersRelease = r.othersRelease(ctx, prName)
	if r.ReleaseOnly {
		// Nothing of this agent syncs: no other PublishedResource needs
		// the finalizers (two for one resource would each leave the
		// objects to the other).
		return rel.run(ctx, gr)
	}
	used, err := r.inUseElsewhere(ctx, gr, prName)
	if err != nil || used {
		if used {
			r.log.Info("Not releasing the objects of a resource another PublishedResource syncs", "publishedresource", prName, "resource", gr.String())
		}
		return 0, err
	}
	return rel.run(ctx, gr)
}

// releaseUnrecordedSources releases, on every endpoint, the objects of
// pr's kcp-origin related resources that carry the agent's own finalizer
// and that no record names (release.releaseUnrecorded). A resource that
// another selected PublishedResource syncs or reads as a kcp-origin
// source is left (its passes may be between the finalizer and the record;
// outside release-only mode).
func (r *reconciler) releaseUnrecordedSources(ctx context.Context, pr *syncagentv1alpha1.PublishedResource, urls []string, progress *releaseProgress) error {
	rel := r.newRelease(urls, progress)
	var errs []error
	for _, gvr := range kcpSourceResources(pr) {
		if !r.ReleaseOnly {
			used, err := r.sourceInUseElsewhere(ctx, gvr.GroupResource(), pr.Name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if used {
				continue
			}
		}
		for _, url := range urls {
			if _, err := rel.releaseUnrecorded(rel.fenced(ctx, url), url, gvr); err != nil {
				errs = append(errs, fmt.Errorf("endpoint %s: %w", url, err))
			}
		}
	}
	return errors.Join(errs...)
}

// sourceInUseElsewhere reports whether another selected PublishedResource
// syncs gr or reads it as a kcp-origin related resource.
func (r *reconciler) sourceInUseElsewhere(ctx context.Context, gr schema.GroupResource, prName string) (bool, error) {
	if used, err := r.inUseElsewhere(ctx, gr, prName); err != nil || used {
		return used, err
	}
	prs, err := selection.List(ctx, r.client, r.Selector)
	if err != nil {
		return false, err
	}
	for i := range prs {
		if prs[i].Name == prName {
			continue
		}
		if slices.ContainsFunc(kcpSourceResources(&prs[i]), func(g schema.GroupVersionResource) bool { return g.GroupResource() == gr }) {
			return true, nil
		}
	}
	return false, nil
}

// kcpSourceResources returns the kcp-side resources of pr's kcp-origin
// related entries.
func kcpSourceResources(pr *syncagentv1alpha1.PublishedResource) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for i := range pr.Spec.Related {
		e := &pr.Spec.Related[i]
		if e.Origin != syncagentv1alpha1.RelatedResourceOriginKcp {
			continue
		}
		if gvr, _ := related.GVRs(e); gvr.Resource != "" && gvr.Version != "" && !slices.Contains(out, gvr) {
			out = append(out, gvr)
		}
	}
	return out
}
