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

// Package claims reads a consumer's APIBinding and says whether it grants
// the export's permission claims as the export asks: each claim accepted,
// with the verbs and (kcp 0.31 and newer) the default selector the export
// names. The agent needs the claims for related objects; a workspace whose
// binding grants less sees its related objects refused or hidden.
//
// It reads bindings as unstructured objects, so what kcp 0.28 and kcp 0.32
// write are read alike, and it only reads: it never decides anything about
// the binding's workspace on its own.
package claims

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	kcpapisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// State is how a binding grants the export's claims, worst first.
type State string

const (
	// Invalid: kcp found the binding's claims invalid
	// (PermissionClaimsValid=False for a reason other than a mismatch).
	Invalid State = "invalid"
	// NotAccepted: the binding rejects a claim of the export, or does not
	// accept it (yet).
	NotAccepted State = "not-accepted"
	// Mismatch: a claim is accepted with other verbs than the export's, or
	// with a selector other than the export's default selector (kcp 0.32
	// reports this as PermissionClaimsMismatch).
	Mismatch State = "mismatch"
	// Pending: kcp has not assessed the binding's claims yet.
	Pending State = "pending"
	// Valid: every claim of the export is granted as asked.
	Valid State = "valid"
)

// States lists every state, worst first.
var States = []State{Invalid, NotAccepted, Mismatch, Pending, Valid}

// kcpMismatchReason is kcp's reason for a binding whose accepted claims differ
// from the export's.
const kcpMismatchReason = "PermissionClaimsMismatch"

// Finding is what Assess found in one binding.
type Finding struct {
	State State
	// Claims are the export's claims the binding does not grant as asked
	// (empty for Valid and Pending, and for Invalid when kcp's complaint
	// is about claims the export does not make).
	Claims []Claim
	// Message says what differs, in words, for an Event. It is the same
	// for the same binding content (kcp's own messages are left out where
	// their order varies).
	Message string
}

// Claim is a claimed resource: its group, resource and the identity of the
// export that provides it (empty for built-in types).
type Claim struct {
	Group, Resource, IdentityHash string
}

// String names the resource as kubectl does: resource.group, or resource
// for the core group.
func (c Claim) String() string {
	if c.Group == "" {
		return c.Resource
	}
	return c.Resource + "." + c.Group
}

// Assess reads one binding. The export's claims come from the binding's own
// status (exportPermissionClaims), which kcp keeps in step with the export.
func Assess(binding *unstructured.Unstructured) Finding {
	var problems []string
	var affected []Claim
	state := Valid
	mismatched := false
	worse := func(s State) {
		if slices.Index(States, s) < slices.Index(States, state) {
			state = s
		}
	}
	accepted := map[Claim]map[string]any{}
	acceptedList, _, _ := unstructured.NestedSlice(binding.Object, "spec", "permissionClaims")
	for _, a := range acceptedList {
		if m, ok := a.(map[string]any); ok {
			accepted[claimOf(m)] = m
		}
	}
	exported, _, _ := unstructured.NestedSlice(binding.Object, "status", "exportPermissionClaims")
	for _, e := range exported {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		c := claimOf(m)
		a, ok := accepted[c]
		var problem string
		switch {
		case !ok:
			worse(NotAccepted)
			problem = "not accepted"
		case str(a, "state") != "Accepted":
			worse(NotAccepted)
			problem = strings.ToLower(cmp.Or(str(a, "state"), "not accepted"))
		default:
			if problem = differs(m, a); problem != "" {
				mismatched = true
				worse(Mismatch)
			}
		}
		if problem != "" {
			problems = append(problems, c.String()+": "+problem)
			affected = append(affected, c)
		}
	}
	switch status, reason, message := condition(binding, "PermissionClaimsValid"); {
	case status == "False" && reason == kcpMismatchReason:
		if !mismatched {
			// kcp compared something the agent did not see differ; its
			// message lists the claims in no fixed order.
			problems = append(problems, "kcp reports "+kcpMismatchReason)
		}
		worse(Mismatch)
	case status == "False":
		worse(Invalid)
		problems = append(problems, fmt.Sprintf("kcp: %s: %s", reason, message))
	case status != "True" && state == Valid:
		worse(Pending)
	}
	if status, reason, _ := condition(binding, "PermissionClaimsApplied"); status == "False" {
		worse(Invalid)
		problems = append(problems, "kcp could not apply the accepted claims: "+reason)
	}
	return Finding{State: state, Claims: affected, Message: strings.Join(problems, "; ")}
}

// differs says how an accepted claim falls short of the export's claim m.
// Verbs: kcp's authorizer lets the service use the verbs both sides name,
// compared as plain strings ("*" on one side only grants nothing), so any
// verb of the export's the binding does not repeat is missing. Selector:
// compared with a default selector the export sets, as kcp compares them
// (the decoded values, not the stored JSON).
func differs(m, accepted map[string]any) string {
	var diffs []string
	asked, got := strs(m, "verbs"), strs(accepted, "verbs")
	if missing := slices.DeleteFunc(slices.Clone(asked), func(v string) bool { return slices.Contains(got, v) }); len(missing) > 0 {
		usable := slices.DeleteFunc(slices.Clone(asked), func(v string) bool { return !slices.Contains(got, v) })
		diffs = append(diffs, fmt.Sprintf("verbs %v accepted, %v asked: kcp lets the service use %v", got, asked, usable))
	}
	if def, ok := m["defaultSelector"].(map[string]any); ok && !sameSelector(def, accepted["selector"]) {
		diffs = append(diffs, "a selector other than the export's default selector accepted")
	}
	return strings.Join(diffs, ", ")
}

// sameSelector compares two claim selectors as kcp does, decoded.
func sameSelector(a map[string]any, b any) bool {
	bm, _ := b.(map[string]any)
	var x, y kcpapisv1alpha2.PermissionClaimSelector
	if runtime.DefaultUnstructuredConverter.FromUnstructured(a, &x) != nil || runtime.DefaultUnstructuredConverter.FromUnstructured(bm, &y) != nil {
		return reflect.DeepEqual(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// condition is the binding's kcp condition of type t.
func condition(binding *unstructured.Unstructured, t string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(binding.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && str(m, "type") == t {
			return str(m, "status"), str(m, "reason"), str(m, "message")
		}
	}
	return "", "", ""
}

func str(m map[string]any, field string) string {
	s, _ := m[field].(string)
	return s
}

func strs(m map[string]any, field string) []string {
	list, _ := m[field].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func claimOf(m map[string]any) Claim {
	return Claim{Group: str(m, "group"), Resource: str(m, "resource"), IdentityHash: str(m, "identityHash")}
}
