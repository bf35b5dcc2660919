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
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// RuleEndpointOneWriter: a replica wrote for a workspace of an endpoint
// while another replica held the endpoint's Lease.
const RuleEndpointOneWriter = "endpoint-one-writer"

// WrittenObject is an object of the service cluster as an audit event
// names it.
type WrittenObject struct {
	Group, Resource, Namespace, Name string
}

// EndpointOneWriter reads a kube-apiserver audit log (as OneWriter) and
// reports every write of a replica of the agent, to an object that belongs
// to a workspace of a virtual-workspace endpoint, that the server received
// while the endpoint's Lease (endpointOf names it for an object; "" for
// objects of no endpoint, such as the agent's own state) was not held by
// that replica: the holder at a time is the one named by the last
// successful write of the Lease that had completed (a deletion leaves it
// without holder). The agent's replicas are every writer but those that
// wrote a leader Lease (syncagent.…) other than leaders and none of
// leaders. It also returns how many writes it judged, by endpoint Lease.
func EndpointOneWriter(r io.Reader, namespace string, leaders []string, endpointOf func(WrittenObject) string) ([]Violation, map[string]int, error) {
	holders := map[string]timeline{}
	type write struct {
		e        auditEvent
		endpoint string
	}
	var writes []write
	ours, others := map[string]bool{}, map[string]bool{}
	err := scanAgentEvents(r, func(e auditEvent) error {
		ref := e.ObjectRef
		switch {
		case isLease(ref, namespace):
			if isWrite(e.Verb) {
				if slices.Contains(leaders, ref.Name) {
					ours[writerOf(e)] = true
				} else {
					others[writerOf(e)] = true
				}
			}
		case isEndpointLease(ref, namespace):
			if !isWrite(e.Verb) || e.ResponseStatus == nil || e.ResponseStatus.Code >= 300 {
				return nil
			}
			holder := ""
			if e.Verb != "delete" {
				if e.RequestObject == nil {
					return fmt.Errorf("the audit log has no request body for the Lease write at %s: the policy must log Leases at level Request", e.Done)
				}
				if h := e.RequestObject.Spec.HolderIdentity; h != nil {
					holder = *h
				}
			}
			holders[ref.Name] = append(holders[ref.Name], holding{e.Done, holder})
		case isWrite(e.Verb):
			if endpoint := endpointOf(WrittenObject{Group: ref.APIGroup, Resource: ref.Resource, Namespace: ref.Namespace, Name: ref.Name}); endpoint != "" {
				writes = append(writes, write{e, endpoint})
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, l := range holders {
		l.sort()
	}
	var out []Violation
	judged := map[string]int{}
	for _, w := range writes {
		writer := writerOf(w.e)
		if others[writer] && !ours[writer] {
			continue // a replica of another agent
		}
		judged[w.endpoint]++
		if holder := holders[w.endpoint].holderAt(w.e.Received); writer != holder {
			out = append(out, Violation{RuleEndpointOneWriter, describe(w.e.ObjectRef),
				"writes from the holder " + holder + " of the endpoint's Lease " + w.endpoint + " only",
				fmt.Sprintf("%s by %s at %s", w.e.Verb, writer, w.e.Received.Format(time.RFC3339Nano))})
		}
	}
	return out, judged, nil
}

// isEndpointLease: an endpoint's Lease (endpoint.<hash>.syncagent…).
func isEndpointLease(ref *auditObjectRef, namespace string) bool {
	return ref.Resource == "leases" && ref.APIGroup == "coordination.k8s.io" && ref.Namespace == namespace &&
		strings.HasPrefix(ref.Name, "endpoint.")
}

// holding is one successful write of a Lease: from its completion on, the
// Lease names holder.
type holding struct {
	at     time.Time
	holder string
}

// timeline is a Lease's writes in the order of the audit log.
type timeline []holding

// sort orders the writes by their completion.
func (l timeline) sort() {
	sort.SliceStable(l, func(i, j int) bool { return l[i].at.Before(l[j].at) })
}

// holderAt is the holder named by the last write that completed before at
// ("" before the first); l is sorted.
func (l timeline) holderAt(at time.Time) string {
	i := sort.Search(len(l), func(i int) bool { return !l[i].at.Before(at) })
	if i == 0 {
		return ""
	}
	return l[i-1].holder
}

// describe names an audit event's object ("<resource>.<group> <namespace>/<name>[/<subresource>]").
func describe(ref *auditObjectRef) string {
	object := strings.Trim(ref.Resource+"."+ref.APIGroup, ".") + " " + strings.TrimPrefix(ref.Namespace+"/"+ref.Name, "/")
	if ref.Subresource != "" {
		object += "/" + ref.Subresource
	}
	return object
}
