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
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/kcp-syncagent/api-syncagent/internal/fence"
)

// Workspace is an engaged consumer workspace.
type Workspace struct {
	Name string
	// Cluster reads (its cache is scoped to the workspace) and writes in
	// the workspace.
	Cluster cluster.Cluster
	// Endpoint holds the informers of the workspace's endpoint (its
	// wildcard cache): every workspace of an endpoint shares them.
	Endpoint cache.Informers
	// EndpointID names the endpoint connection Endpoint belongs to (empty:
	// none); the kcp informers the controller uses are recorded under it.
	EndpointID string
	// Lists, if set, lists one object of a resource across the endpoint.
	// kcp's wildcard list of a new type lags its discovery for a few
	// seconds; the endpoint's handlers are added once it answers, so that
	// a healthy start logs no failed watches.
	Lists func(ctx context.Context, gvr schema.GroupVersionResource) error
	// Fence, if set, is the endpoint's: every write of a pass over the
	// workspace passes it (an agent of a partition holds the endpoint's
	// Lease).
	Fence *fence.Fence
}

// kcpWatch is a kcp-side type whose events enqueue primaries: keys maps an
// object of a workspace (and its previous version on updates, else nil) to
// the primaries to reconcile.
type kcpWatch struct {
	obj  *unstructured.Unstructured
	gvr  schema.GroupVersionResource
	keys func(ws Workspace, old, obj *unstructured.Unstructured) []types.NamespacedName
}

// Registering a kcp-side handler is retried (a type an endpoint does not
// serve yet has no REST mapping) after registerRetryMin, doubling up to
// registerRetryMax.
const (
	registerRetryMin = time.Second
	registerRetryMax = time.Minute
)

// While an endpoint does not list a type yet, it is asked again after
// listRetryMin, doubling, for at most listWaitMax; then the handler is
// added anyway (its informer retries on its own, and says why).
const (
	listRetryMin = 250 * time.Millisecond
	listWaitMax  = 30 * time.Second
)

// hub routes the events of kcp-side informers to the controller's queue.
//
// kcp's informers are per endpoint and hold the objects of all its
// workspaces. The hub adds one handler per watched type and endpoint,
// however many workspaces the endpoint has, and enqueues an event only for
// the workspace the object belongs to and only while that workspace is
// engaged: one reconcile per event. The handlers are removed when the last
// workspace of their endpoint is disengaged and when the controller stops,
// so that nothing fires for a stopped controller.
//
// The hub is the controller's source: Start hands it the queue. Engage
// never waits: registrations (which may ask the endpoint's discovery) run
// on their own goroutine, and no lock is held across them.
type hub struct {
	watches []kcpWatch
	log     logr.Logger

	mu sync.RWMutex
	// ctx is the controller's run context, set by Start; cancel ends it
	// when the hub stops (the controller may stop with an error while its
	// context lives on), so that registrations and replays end.
	ctx        context.Context //nolint:containedctx // see above.
	cancel     context.CancelFunc
	queue      workqueue.TypedRateLimitingInterface[mcreconcile.Request]
	stopped    bool
	workspaces map[string]*engagedWorkspace
	// users counts the engaged workspaces of each endpoint.
	users     map[cache.Informers]int
	endpoints map[cache.Informers]*endpointWatch
	// informers records the kcp types whose informers the controller used.
	informers kcpInformers
	// running counts the registration and replay goroutines: stop waits
	// for them, so that nothing starts an informer after the controller
	// stopped. Added to under mu while not stopped.
	running sync.WaitGroup
	// disengaged, when set, is told each workspace that disengaged, after
	// the hub forgot it (outside mu); engaged, each workspace that was
	// engaged (outside mu, never waits).
	disengaged func(name string)
	engaged    func(name string)
}

type engagedWorkspace struct {
	Workspace
	// release undoes the disengage-on-context-end registration.
	release func() bool
}

// endpointWatch is the registration of the watches on one endpoint:
// handles grows, in the order of the watches, while it is being made.
type endpointWatch struct {
	handles []handle
}

type handle struct {
	informer cache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
}

func newHub(log logr.Logger, watches []kcpWatch) *hub {
	return &hub{
		watches:    watches,
		log:        log,
		workspaces: map[string]*engagedWorkspace{},
		users:      map[cache.Informers]int{},
		endpoints:  map[cache.Informers]*endpointWatch{},
	}
}

// Start implements source.TypedSource: the controller starts it with its
// queue.
func (h *hub) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[mcreconcile.Request]) error {
	h.mu.Lock()
	if h.queue != nil || h.stopped {
		h.mu.Unlock()
		return errors.New("the kcp event hub was started twice")
	}
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.queue = queue
	var todo []registration
	for _, ws := range h.workspaces {
		if _, ok := h.endpoints[ws.Endpoint]; !ok {
			ew := &endpointWatch{}
			h.endpoints[ws.Endpoint] = ew
			todo = append(todo, registration{ws.Endpoint, ws.EndpointID, ws.Lists, ew})
		}
	}
	h.running.Add(len(todo))
	h.mu.Unlock()
	for _, r := range todo {
		go h.register(r)
	}
	context.AfterFunc(ctx, h.stop)
	return nil
}

func (h *hub) String() string { return "kcp workspaces" }

type registration struct {
	endpoint   cache.Informers
	endpointID string
	lists      func(ctx context.Context, gvr schema.GroupVersionResource) error
	watch      *endpointWatch
}

// Engage routes the workspace's events to the controller from now until
// ctx ends. Engaging the same cluster again is a no-op.
func (h *hub) Engage(ctx context.Context, ws Workspace) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	var drop []handle
	if old, ok := h.workspaces[ws.Name]; ok {
		if old.Cluster == ws.Cluster {
			h.mu.Unlock()
			return
		}
		old.release()
		drop = h.forget(old)
	}
	e := &engagedWorkspace{Workspace: ws}
	h.workspaces[ws.Name] = e
	h.users[ws.Endpoint]++
	e.release = context.AfterFunc(ctx, func() { h.disengage(e) })
	var todo *registration
	_, registered := h.endpoints[ws.Endpoint]
	switch {
	case h.queue == nil:
		// Start registers.
	case !registered:
		ew := &endpointWatch{}
		h.endpoints[ws.Endpoint] = ew
		todo = &registration{ws.Endpoint, ws.EndpointID, ws.Lists, ew}
	}
	if h.queue != nil {
		h.running.Add(1) // a registration or a replay
	}
	h.mu.Unlock()
	removeHandles(drop)

	switch {
	case todo != nil:
		// New handlers are told of every object of the endpoint.
		go h.register(*todo)
	case registered:
		// The handlers (being) added may have been told of this
		// workspace's objects before it was engaged.
		go h.replay(e)
	}
	if h.engaged != nil {
		h.engaged(ws.Name)
	}
}

// workspace returns an engaged workspace.
func (h *hub) workspace(name string) (Workspace, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.workspaces[name]
	if !ok {
		return Workspace{}, false
	}
	return e.Workspace, true
}

// names returns the engaged workspaces, sorted.
func (h *hub) names() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Sorted(maps.Keys(h.workspaces))
}

// enqueue adds req to the controller's queue; false if the controller has
// not started or has stopped.
func (h *hub) enqueue(req mcreconcile.Request) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.queue == nil || h.stopped {
		return false
	}
	h.queue.Add(req)
	return true
}

// registered reports whether the handlers of a workspace's endpoint are in
// place: reads of the workspace's cache before that would start the
// informers themselves, before the endpoint lists the types.
func (h *hub) registered(name string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.workspaces[name]
	if !ok {
		return false
	}
	ew := h.endpoints[e.Endpoint]
	return ew != nil && len(ew.handles) > 0
}

func (h *hub) disengage(e *engagedWorkspace) {
	h.mu.Lock()
	if h.workspaces[e.Name] != e {
		h.mu.Unlock()
		return
	}
	drop := h.forget(e)
	h.mu.Unlock()
	removeHandles(drop)
	if h.disengaged != nil {
		h.disengaged(e.Name)
	}
}

// forget removes a workspace and returns the handlers of its endpoint if
// no other workspace uses it. Callers hold h.mu.
func (h *hub) forget(e *engagedWorkspace) []handle {
	delete(h.workspaces, e.Name)
	if h.users[e.Endpoint]--; h.users[e.Endpoint] > 0 {
		return nil
	}
	delete(h.users, e.Endpoint)
	ew := h.endpoints[e.Endpoint]
	if ew == nil {
		return nil
	}
	delete(h.endpoints, e.Endpoint)
	return ew.handles
}

// stop removes every handler and waits for the registrations and replays
// under way (they end with the run context); the hub routes nothing
// afterwards.
func (h *hub) stop() {
	h.mu.Lock()
	h.stopped = true
	var drop []handle
	for _, ew := range h.endpoints {
		drop = append(drop, ew.handles...)
	}
	for _, e := range h.workspaces {
		e.release()
	}
	h.workspaces = map[string]*engagedWorkspace{}
	h.users = map[cache.Informers]int{}
	h.endpoints = map[cache.Informers]*endpointWatch{}
	cancel := h.cancel
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	removeHandles(drop)
	h.running.Wait()
}

// current reports whether a registration is still wanted.
func (h *hub) current(r registration) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return !h.stopped && h.endpoints[r.endpoint] == r.watch
}

// register adds the handlers of every watch to the endpoint's informers,
// retrying with backoff while a type cannot be found, and keeps them if
// the registration is still wanted.
func (h *hub) register(r registration) {
	defer h.running.Done()
	wait := registerRetryMin
	for _, w := range h.watches {
		h.waitListed(r, w.gvr)
		for {
			if !h.current(r) {
				return
			}
			hd, err := h.addHandler(r, w)
			if err == nil {
				// Kept at once, so that disengage and stop remove it; the
				// primaries' handler (the first) makes the endpoint's
				// workspaces reconcilable.
				h.mu.Lock()
				keep := !h.stopped && h.endpoints[r.endpoint] == r.watch
				if keep {
					r.watch.handles = append(r.watch.handles, hd)
				}
				h.mu.Unlock()
				if !keep {
					removeHandles([]handle{hd})
					return
				}
				break
			}
			h.log.Info("Cannot watch a kcp type yet; retrying", "kind", w.obj.GetKind(), "after", wait, "error", err.Error())
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, registerRetryMax)
		}
	}
}

// waitListed waits until the endpoint lists gvr (not found: kcp has not
// caught up with its discovery yet), at most listWaitMax.
func (h *hub) waitListed(r registration, gvr schema.GroupVersionResource) {
	if r.lists == nil || gvr.Resource == "" {
		return
	}
	deadline := time.Now().Add(listWaitMax)
	for wait := listRetryMin; ; wait *= 2 {
		err := r.lists(h.ctx, gvr)
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) || !h.current(r) {
			return
		}
		h.log.V(1).Info("The endpoint does not list the type yet", "resource", gvr.String())
		select {
		case <-h.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (h *hub) addHandler(r registration, w kcpWatch) (handle, error) {
	ep := r.endpoint
	inf, err := ep.GetInformer(h.ctx, w.obj.DeepCopy(), cache.BlockUntilSynced(false))
	if err != nil {
		return handle{}, err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.route(ep, w, nil, obj) },
		UpdateFunc: func(old, obj any) { h.route(ep, w, old, obj) },
		DeleteFunc: func(obj any) { h.route(ep, w, nil, obj) },
	})
	if err != nil {
		return handle{}, err
	}
	h.informers.used(r.endpointID, w.obj.GroupVersionKind())
	return handle{informer: inf, reg: reg}, nil
}

// route enqueues the primaries an event of the endpoint concerns, if the
// object's workspace is engaged through that endpoint.
func (h *hub) route(ep cache.Informers, w kcpWatch, oldObj, obj any) {
	o := asUnstructured(obj)
	if o == nil {
		return
	}
	name := logicalcluster.From(o).String()
	h.mu.RLock()
	e, ok := h.workspaces[name]
	queue := h.queue
	stopped := h.stopped
	h.mu.RUnlock()
	if !ok || stopped || e.Endpoint != ep {
		return
	}
	for _, k := range w.keys(e.Workspace, asUnstructured(oldObj), o) {
		queue.Add(mcreconcile.Request{ClusterName: name, Request: reconcile.Request{NamespacedName: k}})
	}
}

// replay enqueues the primaries of a workspace engaged after its
// endpoint's handlers listed the endpoint.
func (h *hub) replay(e *engagedWorkspace) {
	defer h.running.Done()
	list := &unstructured.UnstructuredList{}
	gvk := h.watches[0].obj.GroupVersionKind()
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	h.mu.RLock()
	ctx, queue := h.ctx, h.queue
	h.mu.RUnlock()
	// keys only reads (the handlers give it the cache's objects too).
	if err := e.Cluster.GetCache().List(ctx, list, ctrlruntimeclient.UnsafeDisableDeepCopy); err != nil {
		// The endpoint's handlers are told of every object of their
		// informer when it syncs; an informer still syncing lists what
		// it has so far, and the rest comes through the handlers.
		h.log.V(1).Info("Cannot list the objects of a newly engaged workspace", "cluster", e.Name, "error", err.Error())
		return
	}
	for i := range list.Items {
		for _, k := range h.watches[0].keys(e.Workspace, nil, &list.Items[i]) {
			queue.Add(mcreconcile.Request{ClusterName: e.Name, Request: reconcile.Request{NamespacedName: k}})
		}
	}
}

func asUnstructured(obj any) *unstructured.Unstructured {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

func removeHandles(handles []handle) {
	for _, hd := range handles {
		_ = hd.informer.RemoveEventHandler(hd.reg)
	}
}
