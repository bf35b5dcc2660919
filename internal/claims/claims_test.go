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

package claims

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// binding builds an APIBinding as kcp stores it, from JSON fragments of
// spec.permissionClaims, status.exportPermissionClaims and
// status.conditions.
func binding(t *testing.T, accepted, exported, conditions string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	doc := fmt.Sprintf(`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIBinding","metadata":{"name":"b"},
		"spec":{"permissionClaims":[%s]},"status":{"exportPermissionClaims":[%s],"conditions":[%s]}}`, accepted, exported, conditions)
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("%v in %s", err, doc)
	}
	return &unstructured.Unstructured{Object: obj}
}

const (
	secretsAll      = `{"group":"","resource":"secrets","verbs":["*"]}`
	secretsGold     = `{"group":"","resource":"secrets","verbs":["*"],"defaultSelector":{"matchLabels":{"tier":"gold"}}}`
	secretsRead     = `{"group":"","resource":"secrets","verbs":["get","list","watch"]}`
	configmapsAll   = `{"group":"","resource":"configmaps","verbs":["*"]}`
	acceptedAll     = `{"group":"","resource":"secrets","verbs":["*"],"selector":{"matchAll":true},"state":"Accepted"}`
	acceptedGold    = `{"group":"","resource":"secrets","verbs":["*"],"selector":{"matchLabels":{"tier":"gold"}},"state":"Accepted"}`
	acceptedGet     = `{"group":"","resource":"secrets","verbs":["list","get"],"selector":{"matchAll":true},"state":"Accepted"}`
	acceptedGoldRaw = `{"group":"","resource":"secrets","verbs":["*"],"selector":{"matchAll":false,"matchLabels":{"tier":"gold"}},"state":"Accepted"}`
	acceptedReadSet = `{"group":"","resource":"secrets","verbs":["watch","list","get"],"selector":{"matchAll":true},"state":"Accepted"}`
	rejected        = `{"group":"","resource":"secrets","verbs":["*"],"selector":{"matchAll":true},"state":"Rejected"}`
	valid           = `{"type":"PermissionClaimsValid","status":"True"}`
	mismatch        = `{"type":"PermissionClaimsValid","status":"False","reason":"PermissionClaimsMismatch","message":"1 permission claim(s) have mismatched verbs or selectors"}`
	notApplied      = `{"type":"PermissionClaimsValid","status":"True"},{"type":"PermissionClaimsApplied","status":"False","reason":"InternalError","message":"x"}`
	unknown         = `{"type":"PermissionClaimsValid","status":"Unknown"}`
	invalid         = `{"type":"PermissionClaimsValid","status":"False","reason":"InvalidPermissionClaims","message":"unexpected/invalid claim for things.example.com"}`
)

func TestAssess(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		accepted, exported, conds    string
		want                         State
		wantResources, wantInMessage string
	}{
		{name: "everything accepted as asked", accepted: acceptedAll, exported: secretsAll, conds: valid, want: Valid},
		{name: "no claims at all", conds: valid, want: Valid},
		{name: "kcp has not looked yet", accepted: acceptedAll, exported: secretsAll, want: Pending},
		{name: "a claim not accepted", exported: secretsAll + "," + configmapsAll, accepted: acceptedAll, conds: valid,
			want: NotAccepted, wantResources: "configmaps", wantInMessage: "configmaps: not accepted"},
		{name: "a claim rejected", accepted: rejected, exported: secretsAll, conds: valid,
			want: NotAccepted, wantResources: "secrets", wantInMessage: "secrets: rejected"},
		{name: "not accepted, without kcp's verdict", exported: secretsAll, want: NotAccepted, wantResources: "secrets"},
		{name: "fewer verbs than asked", accepted: acceptedGet, exported: secretsRead, conds: mismatch,
			want: Mismatch, wantResources: "secrets", wantInMessage: "verbs [list get] accepted, [get list watch] asked: kcp lets the service use [get list]"},
		{name: "the same verbs in another order", accepted: acceptedReadSet, exported: secretsRead, conds: valid, want: Valid},
		{name: "verbs where the export asks for all (kcp's condition says valid; its authorizer grants none)", accepted: acceptedGet, exported: secretsAll, conds: valid,
			want: Mismatch, wantResources: "secrets", wantInMessage: "kcp lets the service use []"},
		{name: "another selector than the default", accepted: acceptedAll, exported: secretsGold, conds: mismatch,
			want: Mismatch, wantResources: "secrets", wantInMessage: "default selector"},
		{name: "the default selector", accepted: acceptedGold, exported: secretsGold, conds: valid, want: Valid},
		{name: "the default selector, written with a false matchAll", accepted: acceptedGoldRaw, exported: secretsGold, conds: valid, want: Valid},
		{name: "kcp sees a mismatch the agent cannot tell", accepted: acceptedAll, exported: secretsAll, conds: mismatch,
			want: Mismatch, wantInMessage: "kcp reports PermissionClaimsMismatch"},
		{name: "invalid claims", accepted: acceptedAll, exported: secretsAll, conds: invalid,
			want: Invalid, wantInMessage: "kcp: InvalidPermissionClaims: unexpected/invalid claim"},
		{name: "invalid wins over not accepted", accepted: rejected, exported: secretsAll, conds: invalid,
			want: Invalid, wantResources: "secrets", wantInMessage: "secrets: rejected"},
		{name: "claims kcp could not apply", accepted: acceptedAll, exported: secretsAll, conds: notApplied,
			want: Invalid, wantInMessage: "kcp could not apply the accepted claims: InternalError"},
		{name: "kcp's verdict unknown", accepted: acceptedAll, exported: secretsAll, conds: unknown, want: Pending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Assess(binding(t, tc.accepted, tc.exported, tc.conds))
			if got.State != tc.want {
				t.Errorf("state: got %q, want %q (message %q)", got.State, tc.want, got.Message)
			}
			var resources []string
			for _, c := range got.Claims {
				resources = append(resources, c.String())
			}
			if strings.Join(resources, ",") != tc.wantResources {
				t.Errorf("resources: got %v, want %q", resources, tc.wantResources)
			}
			if !strings.Contains(got.Message, tc.wantInMessage) {
				t.Errorf("message: got %q, want it to contain %q", got.Message, tc.wantInMessage)
			}
			if tc.want == Valid && got.Message != "" {
				t.Errorf("message of a valid binding: %q", got.Message)
			}
		})
	}
}
