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
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCheckAccess(t *testing.T) {
	things := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	// allow allows verbs on things and secretVerbs on secrets.
	allowSecrets := func(secretVerbs []string, allowed ...string) accessReviewer {
		return func(_ context.Context, verb string, gvr schema.GroupVersionResource) (bool, error) {
			switch gvr {
			case things:
				return slices.Contains(allowed, verb), nil
			case secrets:
				return slices.Contains(secretVerbs, verb), nil
			}
			t.Errorf("reviewed %s", gvr)
			return false, nil
		}
	}
	allow := func(allowed ...string) accessReviewer { return allowSecrets(cacheVerbs, allowed...) }
	testcases := []struct {
		name    string
		review  accessReviewer
		want    string // "" means no error
		wantAcc bool   // the error is an *accessError
	}{
		{name: "everything allowed", review: allow(cacheVerbs...)},
		{
			name:    "no list and watch: both named",
			review:  allow("get"),
			want:    "the agent may not list, watch things.example.com cluster-wide on the service cluster; grant it (for example with the chart's rbac.extraRules)",
			wantAcc: true,
		},
		{
			name:    "every type is checked and every denial named",
			review:  allowSecrets([]string{"list"}, "list"),
			want:    "the agent may not watch things.example.com cluster-wide on the service cluster; grant it (for example with the chart's rbac.extraRules)\nthe agent may not watch secrets cluster-wide on the service cluster; grant it (for example with the chart's rbac.extraRules)",
			wantAcc: true,
		},
		{
			name: "a failed review is an error, not a denial",
			review: func(context.Context, string, schema.GroupVersionResource) (bool, error) {
				return false, errors.New("connection refused")
			},
			want: "connection refused",
		},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAccess(context.Background(), tc.review, []schema.GroupVersionResource{things, secrets}, cacheVerbs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			var acc *accessError
			if errors.As(err, &acc) != tc.wantAcc {
				t.Errorf("error %v: access error %v, want %v", err, !tc.wantAcc, tc.wantAcc)
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q, want %q", err, tc.want)
			}
		})
	}
}
