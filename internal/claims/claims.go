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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// conditionType is kcp's condition on the binding's claims.
const conditionType = "PermissionClaimsValid"

// Finding is what Assess found in one binding.
type Finding struct {
	State State
	// Resources are the claimed resources the binding does not grant as
	// asked (empty for Valid and Pending, and for Invalid when kcp names
	// none the agent can tell).
	Resources []schema.GroupResource
	// Message says what differs, in words, for an Event.
	Message string
}

// claim is one claim of the export as the binding's status repeats it.
type claim struct {
	gr              schema.GroupResource
	identity        string
	verbs           []string
	defaultSelector any
}

// Assess reads one binding. The export's claims come from the binding's own
// status (exportPermissionClaims), which kcp keeps in step with the export.
func Assess(binding *unstructured.Unstructured) Finding {
	var problems []string
	var resources []schema.GroupResource
	state := Valid
	mismatched := false
	worse := func(s State) {
		if slices.Index(States, s) < slices.Index(States, state) {
			state = s
		}
	}
	accepted := map[string]map[string]any{}
	acceptedList, _, _ := unstructured.NestedSlice(binding.Object, "spec", "permissionClaims")
	for _, a := range acceptedList {
		if m, ok := a.(map[string]any); ok {
			accepted[key(m)] = m
		}
	}
	exported, _, _ := unstructured.NestedSlice(binding.Object, "status", "exportPermissionClaims")
	for _, e := range exported {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		c := claim{gr: groupResource(m), identity: str(m, "identityHash"), verbs: strs(m, "verbs"), defaultSelector: m["defaultSelector"]}
		a, ok := accepted[key(m)]
		switch {
		case !ok:
			worse(NotAccepted)
			problems = append(problems, fmt.Sprintf("%s: not accepted", grString(c.gr)))
			resources = append(resources, c.gr)
		case str(a, "state") != "Accepted":
			worse(NotAccepted)
			problems = append(problems, fmt.Sprintf("%s: %s", grString(c.gr), strings.ToLower(cmp.Or(str(a, "state"), "not accepted"))))
			resources = append(resources, c.gr)
		default:
			if diff := differs(c, a); diff != "" {
				mismatched = true
				worse(Mismatch)
				problems = append(problems, fmt.Sprintf("%s: %s", grString(c.gr), diff))
				resources = append(resources, c.gr)
			}
		}
	}
	status, reason, message := condition(binding)
	switch {
	case status == "False" && reason == kcpMismatchReason:
		if !mismatched {
			// kcp compares the typed objects; say what it saw.
			problems = append(problems, "kcp: "+message)
		}
		worse(Mismatch)
	case status == "False":
		worse(Invalid)
		problems = append(problems, fmt.Sprintf("kcp: %s: %s", reason, message))
	case status == "" && state == Valid:
		worse(Pending)
	}
	return Finding{State: state, Resources: resources, Message: strings.Join(problems, "; ")}
}

// differs says how an accepted claim differs from the export's, as kcp
// compares them: verbs as a set unless either side has "*", the selector
// only against a default selector the export sets.
func differs(c claim, accepted map[string]any) string {
	var diffs []string
	got := strs(accepted, "verbs")
	if !slices.Contains(got, "*") && !slices.Contains(c.verbs, "*") && !sameSet(got, c.verbs) {
		diffs = append(diffs, fmt.Sprintf("verbs %v accepted, %v asked", got, c.verbs))
	}
	if c.defaultSelector != nil && !reflect.DeepEqual(accepted["selector"], c.defaultSelector) {
		diffs = append(diffs, "a selector other than the export's default selector accepted")
	}
	return strings.Join(diffs, ", ")
}

// condition is kcp's PermissionClaimsValid condition of the binding.
func condition(binding *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(binding.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && str(m, "type") == conditionType {
			return str(m, "status"), str(m, "reason"), str(m, "message")
		}
	}
	return "", "", ""
}

func key(m map[string]any) string {
	return str(m, "group") + "/" + str(m, "resource") + "/" + str(m, "identityHash")
}

func groupResource(m map[string]any) schema.GroupResource {
	return schema.GroupResource{Group: str(m, "group"), Resource: str(m, "resource")}
}

// grString names a resource as kubectl does: resource.group, or resource
// for the core group.
func grString(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.String()
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

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
