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

package syncer

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-syncagent/api-syncagent/internal/sync/naming"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/objmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/sync/references"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// withReferences makes Things name other Things in spec.partner and
// status.partner; the syncer's own type is registered as the target unless
// unregistered is set.
func (e *env) withReferences(t *testing.T, unregistered bool) {
	t.Helper()
	refs, err := references.Compile([]syncagentv1alpha1.ResourceReference{
		{Path: "spec.partner", Group: remoteGVK.Group, Kind: remoteGVK.Kind},
		{Path: "status.partner", Group: remoteGVK.Group, Kind: remoteGVK.Kind},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.References = refs
	e.syncer.Targets = &Targets{}
	if !unregistered {
		e.syncer.Targets.Register(&Target{Syncer: e.syncer, RemoteGVK: remoteGVK, RemoteNamespaced: true})
	}
}

// copyOf returns the local copy of the kcp object default/name.
func (e *env) copyOf(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	p := primaryOf(Workspace{Cluster: cluster}, refTo("default", name))
	local, err := e.syncer.findLocal(context.Background(), p)
	if err != nil || local == nil {
		t.Fatalf("no local copy of %s: %v", name, err)
	}
	return local
}

func refTo(namespace, name string) *unstructured.Unstructured {
	u := typed(remoteGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func specPartner(u *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(u.Object, "spec", "partner")
	return v
}

func TestReferences_spec(t *testing.T) {
	for _, tc := range []struct {
		name string
		// barSynced syncs default/bar before foo; barExists creates it.
		barExists, barSynced, unregistered bool
		partner                            string
		// wantBarCopyName: foo's copy names bar's copy; else wantPartner.
		wantBarCopyName bool
		wantPartner     string
		wantUnresolved  bool
	}{
		{name: "a synced object: its copy's name", barExists: true, barSynced: true, partner: "bar", wantBarCopyName: true},
		{name: "an object not synced yet: the name its copy gets", barExists: true, partner: "bar", wantBarCopyName: true},
		{name: "nothing of that name: as written", partner: "bar", wantPartner: "bar", wantUnresolved: true},
		// Without the kind's local type, a name cannot be checked: left out.
		{name: "a kind the agent does not sync: left out of a new copy", barExists: true, barSynced: true, unregistered: true, partner: "bar", wantPartner: "", wantUnresolved: true},
		{name: "not an object name: as written", partner: "../bar", wantPartner: "../bar", wantUnresolved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.withReferences(t, tc.unregistered)
			if tc.barExists {
				e.createRemote(t, "default", "bar", map[string]any{"color": "red"})
			}
			if tc.barSynced {
				if _, err := e.converge(t, "default", "bar"); err != nil {
					t.Fatal(err)
				}
			}
			e.createRemote(t, "default", "foo", map[string]any{"partner": tc.partner})
			e.events = nil
			obj := e.getRemote(t, "default", "foo")
			res, err := e.syncer.Process(context.Background(), Workspace{Client: e.kcp, Cluster: cluster}, obj)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.converge(t, "default", "foo"); err != nil {
				t.Fatal(err)
			}
			want := tc.wantPartner
			if tc.wantBarCopyName {
				if !tc.barSynced {
					if _, err := e.converge(t, "default", "bar"); err != nil {
						t.Fatal(err)
					}
				}
				want = e.copyOf(t, "bar").GetName()
				if want == "bar" {
					t.Fatal("the test needs a naming that renames")
				}
			}
			if got := specPartner(e.copyOf(t, "foo")); got != want {
				t.Errorf("the copy's spec.partner = %q, want %q", got, want)
			}
			if res.Unresolved != tc.wantUnresolved || slices.Contains(e.events, ReasonReferenceUnresolved) != tc.wantUnresolved {
				t.Errorf("Unresolved = %v, Events %v; want unresolved %v", res.Unresolved, e.events, tc.wantUnresolved)
			}
			// The kcp object keeps the consumer's name.
			if got := specPartner(e.getRemote(t, "default", "foo")); got != tc.partner {
				t.Errorf("kcp spec.partner = %q, want %q", got, tc.partner)
			}
		})
	}
}

// TestReferences_status: a name the service reports is given back as the
// kcp name only for a copy of an object of the same workspace.
func TestReferences_status(t *testing.T) {
	for _, tc := range []struct {
		name string
		// reported picks the local name the service reports: bar's copy,
		// a copy of another workspace's object, or a name of nothing.
		reported       string
		wantPartner    string
		wantUnresolved bool
	}{
		{name: "the copy of an object of the workspace", reported: "bar", wantPartner: "bar"},
		{name: "a copy of another workspace's object", reported: "other", wantPartner: "kept", wantUnresolved: true},
		{name: "nothing", reported: "ghost", wantPartner: "kept", wantUnresolved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := typed(localGVK)
			other.SetNamespace(cluster)
			other.SetName("copy-of-other")
			other.SetLabels(objmeta.Remote{Cluster: "elsewhere", Namespace: "default", Name: "bar"}.Labels("agent"))
			other.SetAnnotations(objmeta.Remote{Cluster: "elsewhere", Namespace: "default", Name: "bar"}.Annotations())
			e := newEnv(t, other)
			e.withReferences(t, false)
			e.createRemote(t, "default", "bar", nil)
			e.createRemote(t, "default", "foo", nil)
			for _, n := range []string{"bar", "foo"} {
				if _, err := e.converge(t, "default", n); err != nil {
					t.Fatal(err)
				}
			}
			// The kcp status holds a value of its own.
			foo := e.getRemote(t, "default", "foo")
			foo.Object["status"] = map[string]any{"partner": "kept"}
			if err := e.kcp.Status().Update(context.Background(), foo); err != nil {
				t.Fatal(err)
			}
			reported := map[string]string{"bar": e.copyOf(t, "bar").GetName(), "other": "copy-of-other", "ghost": "ghost"}[tc.reported]
			local := e.copyOf(t, "foo")
			local.Object["status"] = map[string]any{"partner": reported, "phase": "Ready"}
			if err := e.service.Status().Update(context.Background(), local); err != nil {
				t.Fatal(err)
			}
			e.events = nil
			res, err := e.syncer.Process(context.Background(), Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
			if err != nil {
				t.Fatal(err)
			}
			status := e.getRemote(t, "default", "foo").Object["status"].(map[string]any)
			if status["partner"] != tc.wantPartner || status["phase"] != "Ready" {
				t.Errorf("kcp status = %v, want partner %q and the phase", status, tc.wantPartner)
			}
			if res.Unresolved != tc.wantUnresolved || slices.Contains(e.events, ReasonReferenceUnresolved) != tc.wantUnresolved {
				t.Errorf("Unresolved = %v, Events %v; want unresolved %v", res.Unresolved, e.events, tc.wantUnresolved)
			}
		})
	}
}

func TestTargets_unregisterLeavesALaterRegistration(t *testing.T) {
	ts := &Targets{}
	first := &Target{RemoteGVK: remoteGVK}
	second := &Target{RemoteGVK: remoteGVK}
	unregisterFirst := ts.Register(first)
	unregisterSecond := ts.Register(second)
	unregisterFirst()
	if ts.lookup(remoteGVK.GroupKind()) != second {
		t.Fatal("the first controller's stop removed the second's registration")
	}
	unregisterSecond()
	if ts.lookup(remoteGVK.GroupKind()) != nil || ts.lookup(schema.GroupKind{}) != nil {
		t.Fatal("a stopped controller is still a target")
	}
}

// sharedNaming names copies x-<name> in namespace shared: copies of two
// workspaces can collide.
func (e *env) sharedNaming(t *testing.T) {
	t.Helper()
	namer, err := naming.NewNamer(&syncagentv1alpha1.ResourceNaming{Name: "x-{{ .Object.metadata.name }}", Namespace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.Namer = namer
}

// otherWorkspacesCopy is the copy of workspace elsewhere's Thing
// default/<kcpName>, named shared/<localName>.
func otherWorkspacesCopy(localName, kcpName string) *unstructured.Unstructured {
	u := typed(localGVK)
	u.SetNamespace("shared")
	u.SetName(localName)
	r := objmeta.Remote{Cluster: "elsewhere", Namespace: "default", Name: kcpName}
	u.SetLabels(r.Labels("agent"))
	u.SetAnnotations(r.Annotations())
	return u
}

// TestReferences_neverAnotherWorkspacesCopy: neither the name a referenced
// object's copy would get (when another workspace's copy holds it) nor a
// consumer's name that is another workspace's copy's reaches the copy.
func TestReferences_neverAnotherWorkspacesCopy(t *testing.T) {
	for _, tc := range []struct {
		name, partner, wantPartner string
		wantPresent                bool
	}{
		// bar exists but is not synced; x-bar belongs to elsewhere.
		{name: "the computed name is taken", partner: "bar", wantPartner: "bar", wantPresent: true},
		// No Thing x-taken in this workspace; shared/x-taken is elsewhere's.
		{name: "the consumer names another workspace's copy", partner: "x-taken", wantPresent: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, otherWorkspacesCopy("x-bar", "bar"), otherWorkspacesCopy("x-taken", "taken"))
			e.sharedNaming(t)
			e.withReferences(t, false)
			e.createRemote(t, "default", "bar", nil)
			e.createRemote(t, "default", "foo", map[string]any{"partner": tc.partner})
			res, err := e.syncer.Process(context.Background(), Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
			if err != nil {
				t.Fatal(err)
			}
			got, present, _ := unstructured.NestedString(e.copyOf(t, "foo").Object, "spec", "partner")
			if present != tc.wantPresent || got != tc.wantPartner {
				t.Errorf("the copy's spec.partner = %q (present %v), want %q (present %v)", got, present, tc.wantPartner, tc.wantPresent)
			}
			if !res.Unresolved || !slices.Contains(e.events, ReasonReferenceUnresolved) {
				t.Errorf("Unresolved = %v, Events %v; want it reported", res.Unresolved, e.events)
			}
		})
	}
}

// TestReferences_targetAwayKeepsTheCopy: while the referenced kind's
// controller does not run (a restart), the copy keeps the name it has.
func TestReferences_targetAwayKeepsTheCopy(t *testing.T) {
	e := newEnv(t)
	e.withReferences(t, false)
	e.createRemote(t, "default", "bar", nil)
	e.createRemote(t, "default", "foo", map[string]any{"partner": "bar"})
	for _, n := range []string{"bar", "foo"} {
		if _, err := e.converge(t, "default", n); err != nil {
			t.Fatal(err)
		}
	}
	want := e.copyOf(t, "bar").GetName()
	if got := specPartner(e.copyOf(t, "foo")); got != want {
		t.Fatalf("the copy's spec.partner = %q, want %q", got, want)
	}
	e.syncer.Targets = &Targets{}
	res, err := e.syncer.Process(context.Background(), Workspace{Client: e.kcp, Cluster: cluster}, e.getRemote(t, "default", "foo"))
	if err != nil {
		t.Fatal(err)
	}
	if got := specPartner(e.copyOf(t, "foo")); got != want || res.Writes != 0 || !res.Unresolved {
		t.Errorf("with the target away: the copy's spec.partner = %q (want %q kept), %d writes, unresolved %v", got, want, res.Writes, res.Unresolved)
	}
}
