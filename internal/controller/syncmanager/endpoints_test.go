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
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"
	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
)

func TestEndpoints(t *testing.T) {
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "things"},
		Status: kcpapisv1alpha1.APIExportEndpointSliceStatus{APIExportEndpoints: []kcpapisv1alpha1.APIExportEndpoint{
			{URL: "https://shard-b/services/apiexport/root:org/things"}, {URL: "https://shard-a/services/apiexport/root:org/things"},
		}},
	}
	export := &kcpapisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: "things"},
		Status: kcpapisv1alpha2.APIExportStatus{VirtualWorkspaces: []kcpapisv1alpha2.VirtualWorkspace{
			{URL: "https://vw-2/things"}, {URL: "https://vw-1/things"},
		}},
	}
	testcases := []struct {
		name       string
		exportMode bool
		rewrites   kcp.Rewrites
		objects    []ctrlruntimeclient.Object
		want       []string
	}{
		{name: "slice: every endpoint, sorted", objects: []ctrlruntimeclient.Object{slice, export},
			want: []string{"https://shard-a/services/apiexport/root:org/things", "https://shard-b/services/apiexport/root:org/things"}},
		{name: "export mode prefers the slice", exportMode: true, objects: []ctrlruntimeclient.Object{slice, export},
			want: []string{"https://shard-a/services/apiexport/root:org/things", "https://shard-b/services/apiexport/root:org/things"}},
		{name: "export mode without a slice: the export's virtual workspaces", exportMode: true, objects: []ctrlruntimeclient.Object{export},
			want: []string{"https://vw-1/things", "https://vw-2/things"}},
		{name: "endpoint slice mode without a slice: none", objects: []ctrlruntimeclient.Object{export}},
		{name: "rewritten (--endpoint-url-rewrite), then sorted", objects: []ctrlruntimeclient.Object{slice},
			rewrites: kcp.Rewrites{{From: "https://shard-a", To: "https://z.example.com/a"}},
			want:     []string{"https://shard-b/services/apiexport/root:org/things", "https://z.example.com/a/services/apiexport/root:org/things"}},
		{name: "export mode rewritten too", exportMode: true, objects: []ctrlruntimeclient.Object{export},
			rewrites: kcp.Rewrites{{From: "https://vw-2", To: "https://vw.example.com"}},
			want:     []string{"https://vw-1/things", "https://vw.example.com/things"}},
		{name: "export mode with neither: none", exportMode: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			r := &reconciler{
				Options:  Options{Target: &kcp.Target{EndpointSliceName: "things", APIExportName: "things", APIExportMode: tc.exportMode, EndpointRewrites: tc.rewrites}},
				kcpCache: fake.NewClientBuilder().WithScheme(kcp.NewScheme()).WithObjects(tc.objects...).Build(),
			}
			got, err := r.endpoints(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
		})
	}
	// --apiexport-ref takes no partitioned slice: it would serve one
	// partition's shards with the keys of an agent without one.
	partitioned := slice.DeepCopy()
	partitioned.Spec.Partition = "eu"
	r := &reconciler{
		Options:  Options{Target: &kcp.Target{EndpointSliceName: "things", APIExportName: "things", APIExportMode: true}},
		kcpCache: fake.NewClientBuilder().WithScheme(kcp.NewScheme()).WithObjects(partitioned, export).Build(),
	}
	if _, err := r.endpoints(t.Context()); !errors.Is(err, errPartitionChanged) {
		t.Errorf("export mode with a partitioned slice: %v, want errPartitionChanged", err)
	}
}

func TestCheckEndpoints(t *testing.T) {
	down := errors.New("connection refused")
	answers := map[string]error{"https://a": nil, "https://b": down, "https://c": nil, "https://d": down}
	served := map[string]bool{"https://a": true}
	probe := func(u string) (bool, error) { return served[u], answers[u] }

	testcases := []struct {
		name            string
		urls            []string
		wantServing     []string
		wantNotServing  []string
		wantUnreachable string
	}{
		{name: "none"},
		{name: "all serving", urls: []string{"https://a"}, wantServing: []string{"https://a"}},
		{name: "one shard down", urls: []string{"https://a", "https://b"}, wantServing: []string{"https://a"}, wantUnreachable: "https://b (connection refused)"},
		{name: "reachable but not serving", urls: []string{"https://a", "https://c"}, wantServing: []string{"https://a"}, wantNotServing: []string{"https://c"}},
		{name: "all down, sorted", urls: []string{"https://d", "https://b"}, wantUnreachable: "https://b (connection refused), https://d (connection refused)"},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got := checkEndpoints(tc.urls, probe)
			if diff := cmp.Diff(tc.wantServing, got.serving); diff != "" {
				t.Errorf("serving (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotServing, got.notServing); diff != "" {
				t.Errorf("not serving (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnreachable, got.unreachableList()); diff != "" {
				t.Errorf("unreachable (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEndpointsOfAnotherPartition: a slice whose Partition is the one the
// agent read at start gives its endpoints; one that names another (edited
// while the agent runs) gives none and errPartitionChanged, so the agent
// stops serving shards that may be another partition's agent's now.
func TestEndpointsOfAnotherPartition(t *testing.T) {
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "things-eu"},
		Spec:       kcpapisv1alpha1.APIExportEndpointSliceSpec{Partition: "eu"},
		Status:     kcpapisv1alpha1.APIExportEndpointSliceStatus{APIExportEndpoints: []kcpapisv1alpha1.APIExportEndpoint{{URL: "https://shard-a/services/apiexport/root:org/things"}}},
	}
	for _, tc := range []struct {
		partition string
		wantURLs  int
		wantErr   error
	}{
		{partition: "eu", wantURLs: 1},
		{partition: "us", wantErr: errPartitionChanged},
		{partition: "", wantErr: errPartitionChanged},
	} {
		r := &reconciler{
			Options:  Options{Partition: tc.partition, Target: &kcp.Target{EndpointSliceName: "things-eu"}},
			kcpCache: fake.NewClientBuilder().WithScheme(kcp.NewScheme()).WithObjects(slice).Build(),
		}
		got, err := r.endpoints(t.Context())
		if len(got) != tc.wantURLs || !errors.Is(err, tc.wantErr) {
			t.Errorf("agent of partition %q: %v, %v; want %d endpoints, error %v", tc.partition, got, err, tc.wantURLs, tc.wantErr)
		}
	}
}
