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
	"io"
	"strings"
)

// LeasesOfWriters reads a kube-apiserver audit log (as OneWriter) and
// returns, for every object of the API group group that replicas of the
// agent wrote ("<resource>.<group> <namespace>/<name>"), the leader Leases
// in namespace held by the replicas that wrote it: a replica belongs to
// the Lease it wrote naming itself holder. With the agents of several
// partitions each object must have one Lease, its workspace's partition's.
// A write by a replica that never held a Lease is counted under "".
func LeasesOfWriters(r io.Reader, namespace, group string) (map[string]map[string]bool, error) {
	leaseOf := map[string]string{}
	var writes []auditEvent
	err := scanAgentEvents(r, func(e auditEvent) error {
		ref := e.ObjectRef
		switch {
		case isLease(ref, namespace):
			if (e.Verb == "create" || e.Verb == "update") && e.ResponseStatus != nil && e.ResponseStatus.Code < 300 &&
				e.RequestObject != nil && e.RequestObject.Spec.HolderIdentity != nil && *e.RequestObject.Spec.HolderIdentity == writerOf(e) {
				leaseOf[writerOf(e)] = ref.Name
			}
		case ref.APIGroup == group && isWrite(e.Verb):
			writes = append(writes, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, w := range writes {
		ref := w.ObjectRef
		object := ref.Resource + "." + ref.APIGroup + " " + strings.TrimPrefix(ref.Namespace+"/"+ref.Name, "/")
		if out[object] == nil {
			out[object] = map[string]bool{}
		}
		out[object][leaseOf[writerOf(w)]] = true
	}
	return out, nil
}
