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

package invariant

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// testFinalizer is the finalizer of the agent named "agent".
const testFinalizer = "syncagent.kcp.io/cleanup-agent"

var (
	kcpThing   = schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Thing"}
	localThing = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
)

func object(gvk schema.GroupVersionKind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

// primary is a synced kcp Thing with our finalizer and a status.
func primary(name string, spec map[string]any) *unstructured.Unstructured {
	o := object(kcpThing, "default", name, spec)
	o.SetFinalizers([]string{testFinalizer})
	o.Object["status"] = map[string]any{"phase": "Ready"}
	return o
}

// localCopy is the copy of primary name of workspace ws, as the contract
// labels it.
func localCopy(ws, name string, spec map[string]any) *unstructured.Unstructured {
	o := object(localThing, ws, "copy-"+name, spec)
	o.SetLabels(map[string]string{labelCluster: ws, labelNameHash: hash(name), labelNamespaceHash: hash("default"), labelAgent: "agent"})
	o.SetAnnotations(map[string]string{annotationName: name, annotationNS: "default"})
	o.Object["status"] = map[string]any{"phase": "Ready"}
	return o
}

// publishedResource is the PublishedResource things with its conditions.
func publishedResource(ready, syncReady string) *unstructured.Unstructured {
	return withConditions([2]string{"Ready", ready}, [2]string{"SyncReady", syncReady})
}

// withConditions is the PublishedResource things with the conditions
// (type, "status/reason").
func withConditions(conds ...[2]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Group: "syncagent.kcp.io", Version: "v1alpha1", Kind: "PublishedResource"})
	o.SetName("things")
	var conditions []any
	for _, c := range conds {
		status, reason, _ := strings.Cut(c[1], "/")
		conditions = append(conditions, map[string]any{"type": c[0], "status": status, "reason": reason})
	}
	o.Object["status"] = map[string]any{"conditions": conditions}
	return o
}

// tokenLabel is on every kcp-origin related source, so on its copies too.
const tokenLabel = "test.kcp.io/token"

// relatedSource is the kcp-origin related Secret of primary name.
func relatedSource(name, data string) *unstructured.Unstructured {
	o := labelled(secret("default", name+"-secret"), tokenLabel, "yes")
	o.SetFinalizers([]string{testFinalizer})
	o.Object["data"] = map[string]any{"token": data}
	return o
}

// relatedCopy is its copy next to the local copy of name in ws.
func relatedCopy(ws, name, data string) *unstructured.Unstructured {
	o := labelled(secret(ws, "copy-"+name+"-secret"), tokenLabel, "yes")
	o.Object["data"] = map[string]any{"token": data}
	return o
}

// credentials is a Secret with a service-origin related entry's data.
func credentials(namespace, name, data string) *unstructured.Unstructured {
	o := secret(namespace, name)
	o.Object["data"] = map[string]any{"password": data}
	return o
}

func labelled(o *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	o.SetLabels(labels)
	return o
}

func state(ws, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	o.SetNamespace("kcp-system")
	o.SetName(stateName(kcpThing, Key{ws, "default", name}))
	o.SetLabels(map[string]string{labelState: "true", labelCluster: ws, labelNameHash: hash(name), labelNamespaceHash: hash("default"), labelAgent: "agent"})
	return o
}

// world is a consistent state: two workspaces, one Thing each, synced
// with a spec mutation (color → dark-color) and a service-only field.
type world struct {
	kcp     map[string][]ctrlruntimeclient.Object
	service []ctrlruntimeclient.Object
	kept    map[Key]bool
	// released: no running controller selects the PublishedResource.
	released bool
	// gone: the objects of workspace ws3, which no longer binds the export
	// (nil: ws3 is not a gone workspace).
	gone []ctrlruntimeclient.Object
	// copyNamespace: Resource.CopyNamespace.
	copyNamespace func(string) bool
	// partitions: Checker.Partitions.
	partitions []string
}

func consistent() *world {
	return &world{
		kcp: map[string][]ctrlruntimeclient.Object{
			"ws1": {labelled(primary("a", map[string]any{"color": "red"}), "team", "red"), relatedSource("a", "dG9rZW4="), credentials("default", "a-creds", "c2VjcmV0")},
			"ws2": {primary("b", map[string]any{"color": "blue"})},
		},
		service: []ctrlruntimeclient.Object{
			labelled(labelled(localCopy("ws1", "a", map[string]any{"color": "dark-red", "replicas": int64(3)}), "team", "red"), "operator", "on"),
			localCopy("ws2", "b", map[string]any{"color": "dark-blue"}),
			state("ws1", "a"), state("ws2", "b"),
			publishedResource("True/Ready", "True/Running"),
			credentials("ws1", "copy-a-creds", "c2VjcmV0"),
			relatedCopy("ws1", "a", "dG9rZW4="),
		},
	}
}

func (w *world) check(t *testing.T) []Violation {
	t.Helper()
	c := &Checker{
		Service:   fake.NewClientBuilder().WithObjects(w.service...).Build(),
		AgentName: "agent", AgentNamespace: "kcp-system",
		CreatedNamespaces: true, Partitions: w.partitions,
		Resources: []Resource{{
			Name: "things", Kcp: kcpThing, Local: localThing, KcpNamespaced: true, Status: true,
			Spec: func(kcp map[string]any) map[string]any {
				out := map[string]any{}
				for k, v := range kcp {
					out[k] = v
				}
				if c, ok := out["color"].(string); ok {
					out["color"] = "dark-" + c
				}
				return out
			},
			ServiceOnly:  []string{"replicas"},
			Selected:     func(o *unstructured.Unstructured) bool { return o.GetLabels()["skip"] == "" },
			Related:      []RelatedSecret{{Suffix: "-secret", Label: tokenLabel}, {Suffix: "-creds", Origin: OriginService}},
			CopiedLabels: []string{"team"},
			Service: func(cp *unstructured.Unstructured) (map[string]string, map[string]any) {
				if cp.GetName() == "copy-a" { // the operator labelled it and set replicas
					return map[string]string{"operator": "on"}, map[string]any{"replicas": int64(3)}
				}
				return nil, nil
			},
			Kept:          w.kept,
			Conditions:    !w.released,
			Released:      w.released,
			CopyNamespace: w.copyNamespace,
		}},
	}
	for _, ws := range []string{"ws1", "ws2"} {
		c.Workspaces = append(c.Workspaces, Workspace{Cluster: ws, Client: fake.NewClientBuilder().WithObjects(w.kcp[ws]...).Build()})
	}
	if w.gone != nil {
		c.Gone = []Workspace{{Cluster: "ws3", Client: fake.NewClientBuilder().WithObjects(w.gone...).Build()}}
	}
	vs, err := c.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestChecker(t *testing.T) {
	deleting := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		return o
	}
	tests := []struct {
		name   string
		change func(w *world)
		want   []string // "rule object" of every violation
	}{
		{name: "converged", change: func(*world) {}},
		{name: "a copy is missing", change: func(w *world) { w.service = w.service[1:] },
			want: []string{"no-stale-related-copy ws1/copy-a-secret", "one-local-copy ws1|default/a"}},
		{name: "two copies", change: func(w *world) {
			extra := localCopy("ws1", "a", map[string]any{"color": "dark-red"})
			extra.SetName("second")
			w.service = append(w.service, extra)
		}, want: []string{"one-local-copy ws1|default/a"}},
		{name: "a spec that did not arrive", change: func(w *world) {
			w.kcp["ws2"] = []ctrlruntimeclient.Object{primary("b", map[string]any{"color": "green"})}
		}, want: []string{"spec-down ws2/copy-b (of ws2|default/b)"}},
		{name: "a status that did not arrive", change: func(w *world) {
			p := primary("b", map[string]any{"color": "blue"})
			p.Object["status"] = map[string]any{"phase": "Pending"}
			w.kcp["ws2"] = []ctrlruntimeclient.Object{p}
		}, want: []string{"status-up ws2|default/b"}},
		{name: "a lost sync label", change: func(w *world) {
			cp := localCopy("ws2", "b", map[string]any{"color": "dark-blue"})
			labels := cp.GetLabels()
			delete(labels, labelAgent)
			cp.SetLabels(labels)
			w.service[1] = cp
		}, want: []string{"sync-labels ws2/copy-b"}},
		{name: "a live primary without the finalizer", change: func(w *world) {
			p := primary("b", map[string]any{"color": "blue"})
			p.SetFinalizers(nil)
			w.kcp["ws2"] = []ctrlruntimeclient.Object{p}
		}, want: []string{"finalizer ws2|default/b"}},
		{name: "a deletion stuck on our finalizer, its copy and state left", change: func(w *world) {
			w.kcp["ws2"] = []ctrlruntimeclient.Object{deleting(primary("b", map[string]any{"color": "blue"}))}
		}, want: []string{"no-orphan-copy ws2/copy-b", "no-orphan-state kcp-system/" + stateName(kcpThing, Key{"ws2", "default", "b"}), "no-stuck-deletion ws2|default/b"}},
		{name: "a copy and state of a deleted object", change: func(w *world) { w.kcp["ws2"] = nil },
			want: []string{"no-orphan-copy ws2/copy-b", "no-orphan-state kcp-system/" + stateName(kcpThing, Key{"ws2", "default", "b"})}},
		{name: "a copy of a workspace that is not bound", change: func(w *world) {
			w.service = append(w.service, localCopy("ws9", "z", nil))
		}, want: []string{"no-unknown-workspace ws9/copy-z"}},
		{name: "an object the filter leaves out keeps no copy", change: func(w *world) {
			p := primary("b", map[string]any{"color": "blue"})
			p.SetLabels(map[string]string{"skip": "yes"})
			p.SetFinalizers(nil)
			w.kcp["ws2"] = []ctrlruntimeclient.Object{p}
		}, want: []string{"no-orphan-copy ws2/copy-b", "no-orphan-state kcp-system/" + stateName(kcpThing, Key{"ws2", "default", "b"})}},
		{name: "a related copy is missing", change: func(w *world) { w.service = w.service[:len(w.service)-1] },
			want: []string{"related-copy ws1|default/a -secret"}},
		{name: "a related copy with old data", change: func(w *world) {
			w.service[len(w.service)-1] = relatedCopy("ws1", "a", "b2xk")
		}, want: []string{"related-copy ws1|default/a -secret"}},
		{name: "a related source without the finalizer", change: func(w *world) {
			src := relatedSource("a", "dG9rZW4=")
			src.SetFinalizers(nil)
			w.kcp["ws1"][1] = src
		}, want: []string{"finalizer ws1|default/a -secret"}},
		{name: "a related copy whose source is gone", change: func(w *world) { w.kcp["ws1"] = slices.Delete(w.kcp["ws1"], 1, 2) },
			want: []string{"no-stale-related-copy ws1/copy-a-secret (of ws1|default/a -secret)"}},
		{name: "a related copy of a deleted primary", change: func(w *world) { w.kcp["ws1"] = w.kcp["ws1"][1:] },
			want: []string{"finalizer ws1|default/a-secret", "no-orphan-copy ws1/copy-a", "no-orphan-state kcp-system/" + stateName(kcpThing, Key{"ws1", "default", "a"}), "no-stale-related-copy ws1/copy-a-secret"}},
		{name: "a related copy left after the last primary of its namespace went", change: func(w *world) {
			w.kcp["ws1"] = nil
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool {
				return o.GetName() == "copy-a" || o.GetName() == stateName(kcpThing, Key{"ws1", "default", "a"})
			})
		}, want: []string{"no-stale-related-copy ws1/copy-a-secret"}},
		{name: "a copy of the same source by another agent, in its namespaces, is its own", change: func(w *world) {
			w.copyNamespace = func(ns string) bool { return ns != "other-agent" }
			w.service = append(w.service, labelled(secret("other-agent", "copy-a-ws1-secret"), tokenLabel, "yes"))
		}},
		{name: "a stale copy in a namespace of ours is found with the namespaces told", change: func(w *world) {
			w.copyNamespace = func(ns string) bool { return ns != "other-agent" }
			w.service = append(w.service, relatedCopy("ws2", "gone", "dG9rZW4="))
		}, want: []string{"no-stale-related-copy ws2/copy-gone-secret"}},
		{name: "without the namespaces told, another agent's copy is stale", change: func(w *world) {
			w.service = append(w.service, labelled(secret("other-agent", "copy-a-ws1-secret"), tokenLabel, "yes"))
		}, want: []string{"no-stale-related-copy other-agent/copy-a-ws1-secret"}},
		{name: "Secrets the service side named like related copies are not copies", change: func(w *world) {
			w.service = append(w.service, secret("ws1", "service-owned-secret"), secret("ws2", "copy-b-secret"))
		}},
		{name: "a related source keeps our finalizer after its primary went", change: func(w *world) {
			w.kcp["ws1"] = w.kcp["ws1"][1:]
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool {
				return o.GetName() == "copy-a" || o.GetName() == "copy-a-secret" || o.GetName() == stateName(kcpThing, Key{"ws1", "default", "a"})
			})
		}, want: []string{"finalizer ws1|default/a-secret"}},
		{name: "a related source whose deletion waits for our finalizer", change: func(w *world) {
			w.kcp["ws1"][1] = deleting(relatedSource("a", "dG9rZW4="))
			w.service = w.service[:len(w.service)-1]
		}, want: []string{"no-stuck-deletion ws1|default/a-secret"}},
		{name: "the related source of an object deleted with its PublishedResource is released", change: func(w *world) {
			w.kcp["ws1"] = w.kcp["ws1"][1:]
			w.kept = map[Key]bool{{Cluster: "ws1", Namespace: "default", Name: "a"}: true}
		}, want: []string{"finalizer ws1|default/a-secret"}},
		{name: "an object the filter leaves out after its sync keeps its copy and state", change: func(w *world) {
			w.kcp["ws2"] = []ctrlruntimeclient.Object{labelled(primary("b", map[string]any{"color": "green"}), "skip", "yes")}
		}},
		{name: "an object the filter leaves out has two copies", change: func(w *world) {
			w.kcp["ws2"] = []ctrlruntimeclient.Object{labelled(primary("b", map[string]any{"color": "blue"}), "skip", "yes")}
			extra := localCopy("ws2", "b", nil)
			extra.SetName("second")
			w.service = append(w.service, extra)
		}, want: []string{"one-local-copy ws2|default/b"}},
		{name: "the copy and state of an object deleted with its PublishedResource are kept", change: func(w *world) {
			w.kcp["ws2"] = nil
			w.kept = map[Key]bool{{Cluster: "ws2", Namespace: "default", Name: "b"}: true}
		}},
		{name: "the state of an object deleted with its PublishedResource is kept without its copy", change: func(w *world) {
			w.kcp["ws2"] = nil
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool { return o.GetName() == "copy-b" })
			w.kept = map[Key]bool{{Cluster: "ws2", Namespace: "default", Name: "b"}: true}
		}},
		{name: "kept is no excuse in a workspace that is not bound", change: func(w *world) {
			w.service = append(w.service, localCopy("ws9", "z", nil))
			w.kept = map[Key]bool{{Cluster: "ws9", Namespace: "default", Name: "z"}: true}
		}, want: []string{"no-unknown-workspace ws9/copy-z"}},
		{name: "a kcp label that did not arrive", change: func(w *world) {
			w.kcp["ws1"][0] = labelled(primary("a", map[string]any{"color": "red"}), "team", "blue")
		}, want: []string{"sync-labels ws1/copy-a"}},
		{name: "a kcp label that was removed stays on the copy", change: func(w *world) {
			w.kcp["ws1"][0] = primary("a", map[string]any{"color": "red"})
		}, want: []string{"sync-labels ws1/copy-a"}},
		{name: "an operator label is lost", change: func(w *world) {
			w.service[0] = labelled(localCopy("ws1", "a", map[string]any{"color": "dark-red", "replicas": int64(3)}), "team", "red")
		}, want: []string{"service-fields-kept ws1/copy-a"}},
		{name: "a service-only field is lost", change: func(w *world) {
			w.service[0] = labelled(labelled(localCopy("ws1", "a", map[string]any{"color": "dark-red"}), "team", "red"), "operator", "on")
		}, want: []string{"service-fields-kept ws1/copy-a"}},
		{name: "a service-origin copy is missing in kcp", change: func(w *world) { w.kcp["ws1"] = w.kcp["ws1"][:2] },
			want: []string{"related-copy ws1|default/a -creds"}},
		{name: "a service-origin copy with old data", change: func(w *world) {
			w.kcp["ws1"][2] = credentials("default", "a-creds", "b2xk")
		}, want: []string{"related-copy ws1|default/a -creds"}},
		{name: "a service-origin copy stays when its source goes", change: func(w *world) {
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool { return o.GetName() == "copy-a-creds" })
		}},
		{name: "a service-origin source stays when its primary goes", change: func(w *world) {
			w.kcp["ws1"] = nil
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool {
				return o.GetName() == "copy-a" || o.GetName() == "copy-a-secret" || o.GetName() == stateName(kcpThing, Key{"ws1", "default", "a"})
			})
		}},
		{name: "a PublishedResource that does not say it syncs", change: func(w *world) {
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool { return o.GetName() == "things" })
			w.service = append(w.service, publishedResource("False/NotReady", "False/EndpointUnreachable"))
		}, want: []string{"conditions-true PublishedResource things", "conditions-true PublishedResource things"}},
		{name: "each partition says it syncs", change: func(w *world) {
			w.partitions = []string{"eu", "us"}
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool { return o.GetName() == "things" })
			w.service = append(w.service, withConditions([2]string{"Ready", "True/Ready"}, [2]string{"SyncReady.eu", "True/Running"}, [2]string{"SyncReady.us", "True/Running"}))
		}},
		{name: "a partition that does not sync, and an unpartitioned SyncReady beside the partitions'", change: func(w *world) {
			w.partitions = []string{"eu", "us"}
			w.service = slices.DeleteFunc(w.service, func(o ctrlruntimeclient.Object) bool { return o.GetName() == "things" })
			w.service = append(w.service, withConditions([2]string{"Ready", "True/Ready"}, [2]string{"SyncReady", "True/Running"},
				[2]string{"SyncReady.eu", "True/Running"}, [2]string{"SyncReady.us", "False/NoEndpoints"}))
		}, want: []string{"conditions-true PublishedResource things", "conditions-true PublishedResource things"}},
		{name: "the state of a deleted object of another kind with a live object's name", change: func(w *world) {
			gadget := state("ws1", "a")
			gadget.SetName(stateName(schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"}, Key{"ws1", "default", "a"}))
			w.service = append(w.service, gadget)
		}, want: []string{"no-orphan-state kcp-system/" + stateName(schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"}, Key{"ws1", "default", "a"})}},
		{name: "a released PublishedResource's objects keep their copies, related copies and state, without our finalizer", change: func(w *world) {
			w.released = true
			for _, ws := range []string{"ws1", "ws2"} {
				for _, o := range w.kcp[ws] {
					o.SetFinalizers(nil)
				}
			}
		}},
		{name: "an object of a released PublishedResource keeps our finalizer, another the legacy one, and a related source ours", change: func(w *world) {
			w.released = true
			w.kcp["ws2"][0].SetFinalizers([]string{"syncagent.kcp.io/cleanup"})
		}, want: []string{"finalizer ws1|default/a-secret", "no-finalizer-without-controller ws1|default/a", "no-finalizer-without-controller ws2|default/b"}},
		{name: "an empty namespace created for a workspace that is gone", change: func(w *world) {
			w.service = append(w.service, createdNamespace("ws7", "ws7", "agent", false), createdNamespace("x-ws8", "ws8", "agent", false))
		}, want: []string{"no-namespace-of-gone-workspace ws7", "no-namespace-of-gone-workspace x-ws8"}},
		{name: "created namespaces that stay: being deleted, holding a Secret, of a bound workspace, shared, another agent's", change: func(w *world) {
			w.service = append(w.service, createdNamespace("ws7", "ws7", "agent", true), createdNamespace("ws8", "ws8", "agent", false), secret("ws8", "someones"),
				createdNamespace("ws1", "ws1", "agent", false), createdNamespace("shared", "ws9", "agent", false), createdNamespace("ws6", "ws6", "other", false))
		}},
		{name: "the kept copy and state of a workspace that is gone stay", change: func(w *world) {
			w.gone = []ctrlruntimeclient.Object{secret("default", "unrelated")}
			w.service = append(w.service, localCopy("ws3", "c", nil), state("ws3", "c"))
			w.kept = map[Key]bool{{Cluster: "ws3", Namespace: "default", Name: "c"}: true}
		}},
		{name: "a copy of a workspace that is gone, not kept", change: func(w *world) {
			w.gone = []ctrlruntimeclient.Object{}
			w.service = append(w.service, localCopy("ws3", "c", nil))
		}, want: []string{"no-unknown-workspace ws3/copy-c"}},
		{name: "a Secret of a workspace that is gone keeps our finalizer", change: func(w *world) {
			w.gone = []ctrlruntimeclient.Object{relatedSource("c", "dG9rZW4=")}
		}, want: []string{"no-finalizer-without-controller ws3|default/c-secret"}},
		{name: "another agent's copies are not ours to judge", change: func(w *world) {
			other := localCopy("ws9", "z", nil)
			labels := other.GetLabels()
			labels[labelAgent] = "other"
			other.SetLabels(labels)
			w.service = append(w.service, other)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := consistent()
			tt.change(w)
			var got []string
			for _, v := range w.check(t) {
				got = append(got, v.Rule+" "+v.Object)
				if v.Expected == "" || v.Seen == "" {
					t.Errorf("violation %s says neither what was expected nor what was seen", v)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestStateName: the name of a primary's state Secret as the agent wrote it
// in a soak run (contract §4.4).
func TestStateName(t *testing.T) {
	gadget := schema.GroupVersionKind{Group: "kcp.example.com", Version: "v1", Kind: "Gadget"}
	if got, want := stateName(gadget, Key{"2423iiycrchz1df4", "default", "obj-1"}), "obj-state-2423iiycrchz1df4-6ed5361bda810702b40a"; got != want {
		t.Errorf("stateName = %s, want %s", got, want)
	}
}

// secret is a Secret to be read or created.
func secret(namespace, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

// TestCheckerRefusesWhatItWouldJudgeWrongly: related Secrets of a
// cluster-scoped primary, an entry without a suffix and a kcp-origin entry
// without its sources' label are configuration errors, not findings.
func TestCheckerRefusesWhatItWouldJudgeWrongly(t *testing.T) {
	for name, r := range map[string]Resource{
		"cluster-scoped primary": {Name: "widgets", Related: []RelatedSecret{{Suffix: "-token", Label: tokenLabel}}},
		"no suffix":              {Name: "things", KcpNamespaced: true, Related: []RelatedSecret{{Label: tokenLabel}}},
		"no label":               {Name: "things", KcpNamespaced: true, Related: []RelatedSecret{{Suffix: "-token"}}},
		"one label for two entries": {Name: "things", KcpNamespaced: true, Related: []RelatedSecret{
			{Suffix: "-token", Label: tokenLabel}, {Suffix: "-key", Label: tokenLabel}}},
	} {
		c := &Checker{Service: fake.NewClientBuilder().Build(), Resources: []Resource{r}}
		if _, err := c.Check(t.Context()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// createdNamespace is a namespace agent created for the workspace cluster.
func createdNamespace(name, cluster, agent string, deleting bool) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	o.SetName(name)
	o.SetLabels(map[string]string{labelCreatedBy: agent, labelCreatedFor: cluster})
	if deleting {
		o.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		o.SetFinalizers([]string{"kubernetes"})
	}
	return o
}
