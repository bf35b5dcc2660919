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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
)

// TestThroughEveryEndpoint: a release runs through the endpoints it was
// given, then through those that joined the endpoint slice meanwhile (a
// shard added during a long release), once each, until none is new; one
// that left is not run through again. A failure stops it.
func TestThroughEveryEndpoint(t *testing.T) {
	withEndpoints := func(urls ...string) *kcpapisv1alpha1.APIExportEndpointSlice {
		s := &kcpapisv1alpha1.APIExportEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "things"}}
		for _, u := range urls {
			s.Status.APIExportEndpoints = append(s.Status.APIExportEndpoints, kcpapisv1alpha1.APIExportEndpoint{URL: u})
		}
		return s
	}
	errShard := errors.New("shard down")
	testcases := []struct {
		name string
		// during[i] is the slice's endpoints once the i-th pass ran.
		during  [][]string
		failAt  int
		want    [][]string
		wantErr bool
	}{
		{name: "no endpoint joins: one pass", during: [][]string{{"a", "b"}}, want: [][]string{{"a", "b"}}},
		{name: "c joins during the first pass, d during the second, b leaves",
			during: [][]string{{"a", "c"}, {"a", "c", "d"}, {"a", "c", "d"}}, want: [][]string{{"a", "b"}, {"c"}, {"d"}}},
		{name: "a failure ends it", during: [][]string{{"a", "b", "c"}}, failAt: 1, want: [][]string{{"a", "b"}}, wantErr: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(kcp.NewScheme()).WithObjects(withEndpoints("a", "b")).Build()
			r := &reconciler{Options: Options{Target: &kcp.Target{EndpointSliceName: "things"}}, kcpCache: c}
			var got [][]string
			err := r.throughEveryEndpoint(t.Context(), []string{"a", "b"}, func(urls []string) error {
				got = append(got, urls)
				if len(got) == tc.failAt {
					return errShard
				}
				slice := withEndpoints(tc.during[len(got)-1]...)
				cur := &kcpapisv1alpha1.APIExportEndpointSlice{}
				if err := c.Get(t.Context(), types.NamespacedName{Name: "things"}, cur); err != nil {
					t.Fatal(err)
				}
				cur.Status = slice.Status
				if err := c.Update(t.Context(), cur); err != nil {
					t.Fatal(err)
				}
				return nil
			})
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, errShard)) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("passes (-want +got):\n%s", diff)
			}
		})
	}
}
