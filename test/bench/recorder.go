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

package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// Labels and annotations by which a local copy names its kcp object (the
// same in the reference agent).
const (
	labelRemoteCluster   = "syncagent.kcp.io/remote-object-cluster"
	annotationRemoteName = "syncagent.kcp.io/remote-object-name"
	// cleanupFinalizer is the agents' finalizer on kcp objects (the
	// reference's; ours is cleanupFinalizer + "-<agent name>"): its
	// arrival is the agent's first write for a new object.
	cleanupFinalizer = "syncagent.kcp.io/cleanup"
	// annotationCluster names an object's workspace in a wildcard list.
	annotationCluster = "kcp.io/cluster"
)

// recorder watches both sides with informers and records, per kcp object
// (key <cluster>/<name>), when each observable step happened. Handlers only
// take a timestamp and store it, so the informers never lag behind.
type recorder struct {
	related bool
	// stop ends the recorder's informers (at the run's cleanup).
	stop chan struct{}

	mu sync.Mutex
	// Service side.
	localAdded map[string]time.Time
	localRed   map[string]time.Time
	localGone  map[string]time.Time
	localObj   map[string]*unstructured.Unstructured
	// secretAdded is keyed by "<namespace>/<name>" of the Secret.
	secretAdded map[string]time.Time
	// kcp side: the bench's own watch of each consumer workspace, and
	// vwSeen through the export's virtual workspace (the agent's view;
	// watchVirtualWorkspace).
	kcpSeen     map[string]time.Time
	vwSeen      map[string]time.Time
	kcpAccepted map[string]time.Time
	kcpStatus   map[string]time.Time
	kcpGone     map[string]time.Time
	kcpObj      map[string]*unstructured.Unstructured
}

func newRecorder(e *env) *recorder {
	r := &recorder{
		related:    e.cfg.Related,
		localAdded: map[string]time.Time{}, localRed: map[string]time.Time{}, localGone: map[string]time.Time{},
		localObj: map[string]*unstructured.Unstructured{}, secretAdded: map[string]time.Time{},
		kcpSeen: map[string]time.Time{}, vwSeen: map[string]time.Time{}, kcpAccepted: map[string]time.Time{}, kcpStatus: map[string]time.Time{}, kcpGone: map[string]time.Time{}, kcpObj: map[string]*unstructured.Unstructured{},
		stop: make(chan struct{}),
	}
	stop := r.stop
	e.t.Cleanup(func() { close(stop) })

	svc := dynamicinformer.NewDynamicSharedInformerFactory(e.svcDyn, 0)
	r.handle(svc.ForResource(localGVR).Informer(), r.onLocal, r.onLocalGone)
	if r.related {
		r.handle(svc.ForResource(secretGVR).Informer(), r.onSecret, func(*unstructured.Unstructured) {})
	}
	svc.Start(stop)
	factories := []dynamicinformer.DynamicSharedInformerFactory{svc}
	for i, ws := range e.consumers {
		if e.onlyLocalWatch {
			break
		}
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.kcpDyn[i], 0, kcpNamespace, nil)
		cluster := ws.ClusterName
		r.handle(f.ForResource(kcpGVR).Informer(),
			func(u *unstructured.Unstructured) { r.onRemote(cluster, u) },
			func(u *unstructured.Unstructured) { r.onRemoteGone(cluster, u) })
		f.Start(stop)
		factories = append(factories, f)
	}
	r.waitSynced(e.t, factories...)
	return r
}

// waitSynced waits until every informer of the started factories has
// synced.
func (r *recorder) waitSynced(t *benchT, factories ...dynamicinformer.DynamicSharedInformerFactory) {
	for _, f := range factories {
		for gvr, ok := range f.WaitForCacheSync(r.stop) {
			if !ok {
				t.Fatalf("the informer for %s did not sync", gvr)
			}
		}
	}
}

// watchVirtualWorkspace records when a watch of every workspace's objects
// through the export's virtual workspace, with the agent's identity, sees
// each object: when kcp delivers it to the agent.
func (r *recorder) watchVirtualWorkspace(e *env) {
	t := e.t
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{}
	framework.WaitFor(t, setupTimeout, "the endpoint slice's URL", func(ctx context.Context) (bool, error) {
		err := e.org.Client.Get(ctx, types.NamespacedName{Name: exportName}, slice)
		return err == nil && len(slice.Status.APIExportEndpoints) > 0, ctrlruntimeclient.IgnoreNotFound(err)
	})
	cfg := restConfig(e.k.AgentConfig(e.org.Path))
	cfg.Host = slice.Status.APIExportEndpoints[0].URL + "/clusters/*"
	dyn, err := dynamic.NewForConfig(cfg)
	t.check(err)
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	r.handle(f.ForResource(kcpGVR).Informer(), func(u *unstructured.Unstructured) {
		now := time.Now()
		key := u.GetAnnotations()[annotationCluster] + "/" + u.GetName()
		r.mu.Lock()
		defer r.mu.Unlock()
		first(r.vwSeen, key, now)
	}, func(*unstructured.Unstructured) {})
	f.Start(r.stop)
	r.waitSynced(t, f)
}

func (r *recorder) handle(inf cache.SharedIndexInformer, upsert, gone func(*unstructured.Unstructured)) {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { upsert(obj.(*unstructured.Unstructured)) },
		UpdateFunc: func(_, obj any) { upsert(obj.(*unstructured.Unstructured)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				gone(u)
			}
		},
	})
	if err != nil {
		panic(err) // only fails on a stopped informer
	}
}

func first(m map[string]time.Time, key string, now time.Time) {
	if _, ok := m[key]; !ok {
		m[key] = now
	}
}

func localKeyOf(u *unstructured.Unstructured) (string, bool) {
	cluster, name := u.GetLabels()[labelRemoteCluster], u.GetAnnotations()[annotationRemoteName]
	if cluster == "" || name == "" {
		return "", false
	}
	return cluster + "/" + name, true
}

func (r *recorder) onLocal(u *unstructured.Unstructured) {
	now := time.Now()
	key, ok := localKeyOf(u)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first(r.localAdded, key, now)
	r.localObj[key] = u
	if color, _, _ := unstructured.NestedString(u.Object, "spec", "color"); color == "red" {
		first(r.localRed, key, now)
	}
}

func (r *recorder) onLocalGone(u *unstructured.Unstructured) {
	now := time.Now()
	if key, ok := localKeyOf(u); ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		first(r.localGone, key, now)
	}
}

func (r *recorder) onSecret(u *unstructured.Unstructured) {
	now := time.Now()
	if u.GetNamespace() == framework.AgentNamespace {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first(r.secretAdded, u.GetNamespace()+"/"+u.GetName(), now)
}

func (r *recorder) onRemote(cluster string, u *unstructured.Unstructured) {
	now := time.Now()
	key := cluster + "/" + u.GetName()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kcpObj[key] = u
	first(r.kcpSeen, key, now)
	if slices.ContainsFunc(u.GetFinalizers(), func(f string) bool { return f == cleanupFinalizer || strings.HasPrefix(f, cleanupFinalizer+"-") }) {
		first(r.kcpAccepted, key, now)
	}
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "Ready" {
		first(r.kcpStatus, key, now)
	}
}

func (r *recorder) onRemoteGone(cluster string, u *unstructured.Unstructured) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	first(r.kcpGone, cluster+"/"+u.GetName(), now)
}

func (r *recorder) get(m map[string]time.Time, key string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, ok := m[key]
	return ts, ok
}

// synced returns when the kcp object's local copy (and, with related
// objects, the copy of its Secret) appeared.
func (r *recorder) synced(key string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, ok := r.localAdded[key]
	if !ok || !r.related {
		return ts, ok
	}
	u := r.localObj[key]
	// The related Secret is named after the local copy (template
	// "{{ .Object.metadata.name }}-secret" on the service side).
	sec, ok := r.secretAdded[u.GetNamespace()+"/"+u.GetName()+"-secret"]
	if !ok {
		return time.Time{}, false
	}
	return later(ts, sec), true
}

// local returns a copy of the latest local copy of key.
func (r *recorder) local(key string) (*unstructured.Unstructured, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.localObj[key]
	if !ok {
		return nil, false
	}
	return u.DeepCopy(), true
}

// remote returns a copy of the latest kcp object of key.
func (r *recorder) remote(key string) (*unstructured.Unstructured, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.kcpObj[key]
	if !ok {
		return nil, false
	}
	return u.DeepCopy(), true
}
