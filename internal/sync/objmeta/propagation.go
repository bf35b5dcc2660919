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

package objmeta

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-syncagent/api-syncagent/internal/keys"
)

// Propagation is what happens to the service-cluster copy of a kcp object
// when the kcp object is deleted (its annotation
// keys.DeletionPropagationPolicy).
type Propagation string

const (
	// PropagateBackground deletes the copy at once; the service cluster's
	// garbage collector deletes its dependents afterwards. The default.
	PropagateBackground Propagation = "background"
	// PropagateForeground deletes the copy's dependents first; the copy,
	// and so the kcp object, goes once they are gone.
	PropagateForeground Propagation = "foreground"
	// PropagateOrphan keeps the copy, without the metadata that tied it to
	// the kcp object.
	PropagateOrphan Propagation = "orphan"
)

// PropagationOf reads obj's policy: background when obj has none, and
// background with known false for a value it does not know.
func PropagationOf(obj metav1.Object) (p Propagation, known bool) {
	v, ok := obj.GetAnnotations()[keys.DeletionPropagationPolicy]
	switch p := Propagation(v); {
	case !ok:
		return PropagateBackground, true
	case p == PropagateBackground || p == PropagateForeground || p == PropagateOrphan:
		return p, true
	}
	return PropagateBackground, false
}

// DeletionPropagation is the API server's propagation policy of a delete
// under p (orphan deletes nothing and maps to background).
func (p Propagation) DeletionPropagation() metav1.DeletionPropagation {
	if p == PropagateForeground {
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}

// linkLabels and linkAnnotations tie a local copy to its kcp object and
// its agent: the copy is found by them (Remote.Selector) and adopted only
// with them.
var (
	linkLabels      = []string{keys.RemoteObjectCluster, keys.RemoteObjectNameHash, keys.RemoteObjectNamespaceHash, keys.AgentName}
	linkAnnotations = []string{keys.RemoteObjectName, keys.RemoteObjectNamespace, keys.RemoteObjectWorkspacePath, keys.RemoteObjectKind}
)

// UnlinkPatch is the JSON merge patch that orphans the local copy of uid
// made for r: it removes every label and annotation that ties a copy to
// its kcp object and agent (whether the copy as read shows them or not)
// and records r in keys.OrphanedFrom, so that neither r's agent nor a
// later kcp object of the same name takes it for a copy. The API server
// refuses it for another object of the same name.
func UnlinkPatch(uid types.UID, r Remote) []byte {
	return orphanPatch(uid, r.Cluster+"/"+r.Namespace+"/"+r.Name, true)
}

// OrphanPatch is the JSON merge patch that marks the object of uid as kept
// by the deletion of from (keys.OrphanedFrom), for related copies, which
// carry no link labels.
func OrphanPatch(uid types.UID, from string) []byte {
	return orphanPatch(uid, from, false)
}

// DropClaimPatch is the JSON merge patch that gives the object of uid, as
// read at resourceVersion, back to the service owner after an import
// claimed it: it removes every label and annotation that ties a copy to
// its kcp object and agent, and the claim (keys.Importing). The API
// server refuses it for a changed or another object.
func DropClaimPatch(uid types.UID, resourceVersion string) []byte {
	labels, annotations := map[string]any{}, map[string]any{keys.Importing: nil}
	unlinked(labels, annotations)
	return metadataPatch(map[string]any{"uid": uid, "resourceVersion": resourceVersion, "labels": labels, "annotations": annotations})
}

func orphanPatch(uid types.UID, from string, unlink bool) []byte {
	labels, annotations := map[string]any{}, map[string]any{keys.OrphanedFrom: from}
	if unlink {
		unlinked(labels, annotations)
	}
	meta := map[string]any{"uid": uid, "annotations": annotations}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	return metadataPatch(meta)
}

// unlinked sets every label and annotation that ties a copy to its kcp
// object and agent to null in the patch maps labels and annotations.
func unlinked(labels, annotations map[string]any) {
	for _, k := range linkLabels {
		labels[k] = nil
	}
	for _, k := range linkAnnotations {
		annotations[k] = nil
	}
}

// metadataPatch is the JSON merge patch of meta.
func metadataPatch(meta map[string]any) []byte {
	// Maps of strings and nils always encode.
	data, _ := json.Marshal(map[string]any{"metadata": meta})
	return data
}
