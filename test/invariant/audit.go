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
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// RuleOneWriter: a replica of the agent wrote while another held the
// leader Lease.
const RuleOneWriter = "one-writer"

// agentUserAgent starts the user agent of every request of the agent; the
// replica's identity (the Lease holder identity) is its last word.
const agentUserAgent = "api-syncagent/"

// auditEvent is what OneWriter reads of a kube-apiserver audit event.
type auditEvent struct {
	Stage          string          `json:"stage"`
	Verb           string          `json:"verb"`
	UserAgent      string          `json:"userAgent"`
	ObjectRef      *auditObjectRef `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject *struct {
		Spec struct {
			HolderIdentity *string `json:"holderIdentity"`
		} `json:"spec"`
	} `json:"requestObject"`
	Received time.Time `json:"requestReceivedTimestamp"`
	Done     time.Time `json:"stageTimestamp"`
}

type auditObjectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	APIGroup    string `json:"apiGroup"`
	Subresource string `json:"subresource"`
}

// OneWriter reads a kube-apiserver audit log (one JSON event per line,
// with the request bodies of Lease writes) and reports every write of a
// replica of the agent that the server received while the leader Lease
// namespace/name was held by someone else: the holder at a time is the one
// named by the last successful write of the Lease that had completed.
// Events are not writes of state and are left out, and so are the writes
// of replicas of other agents in the namespace (those that wrote a Lease
// syncagent.<other name> and never held this one), Lease writes included. It also returns how
// many writes it judged. A log in which the Lease was never written is an
// error: every replica would pass for another agent's and nothing be judged.
func OneWriter(r io.Reader, namespace, name string) ([]Violation, int, error) {
	var leases timeline
	var writes []auditEvent
	// ours are the replicas that held this agent's Lease, others those that
	// wrote another agent's (syncagent.<other name>).
	ours, others := map[string]bool{}, map[string]bool{}
	err := scanAgentEvents(r, func(e auditEvent) error {
		ref := e.ObjectRef
		switch {
		case isLease(ref, namespace) && ref.Name == name:
			if (e.Verb == "create" || e.Verb == "update") && e.ResponseStatus != nil && e.ResponseStatus.Code < 300 {
				holder := ""
				if e.RequestObject == nil {
					return fmt.Errorf("the audit log has no request body for the Lease write at %s: the policy must log Leases at level Request", e.Done)
				}
				if h := e.RequestObject.Spec.HolderIdentity; h != nil {
					holder = *h
				}
				leases = append(leases, holding{e.Done, holder})
				ours[holder] = true
			}
		case isLease(ref, namespace):
			// Another agent's Lease: whoever writes it is a replica of that
			// agent, unless it held this Lease too (then its writes, this
			// one included, are judged as any other).
			if isWrite(e.Verb) {
				others[writerOf(e)] = true
				writes = append(writes, e)
			}
		case ref.Resource == "events" && (ref.APIGroup == "" || ref.APIGroup == "events.k8s.io"):
		case isWrite(e.Verb):
			writes = append(writes, e)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(leases) == 0 {
		return nil, 0, fmt.Errorf("the audit log holds no successful write of the Lease %s/%s: is it the agent's?", namespace, name)
	}
	leases.sort()
	var out []Violation
	judged := 0
	for _, w := range writes {
		writer := writerOf(w)
		if others[writer] && !ours[writer] {
			continue // a replica of another agent: its writes are its own
		}
		judged++
		if holder := leases.holderAt(w.Received); writer != holder {
			out = append(out, Violation{RuleOneWriter, describe(w.ObjectRef),
				"writes from the Lease holder " + holder + " only",
				fmt.Sprintf("%s by %s at %s", w.Verb, writer, w.Received.Format(time.RFC3339Nano))})
		}
	}
	return out, judged, nil
}

// scanAgentEvents calls each with every complete event (or one the server
// panicked on or cut off) of a request of the agent that names an object.
func scanAgentEvents(r io.Reader, each func(auditEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("unreadable audit event: %w", err)
		}
		if (e.Stage != "ResponseComplete" && e.Stage != "Panic") || e.ObjectRef == nil || !strings.HasPrefix(e.UserAgent, agentUserAgent) {
			continue
		}
		if err := each(e); err != nil {
			return err
		}
	}
	return sc.Err()
}

func isLease(ref *auditObjectRef, namespace string) bool {
	return ref.Resource == "leases" && ref.APIGroup == "coordination.k8s.io" && ref.Namespace == namespace &&
		strings.HasPrefix(ref.Name, "syncagent.") // leader Leases, not the endpoints' (endpoint.<hash>.syncagent.<agent>)
}

func isWrite(verb string) bool {
	return verb == "create" || verb == "update" || verb == "patch" || verb == "delete" || verb == "deletecollection"
}

// writerOf is the replica that sent e: the last word of its user agent.
func writerOf(e auditEvent) string {
	return e.UserAgent[strings.LastIndex(e.UserAgent, " ")+1:]
}
