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

// Package keys holds the label, annotation and finalizer keys the agent
// writes (contract §4). Their names and value formats are frozen: objects
// written by the reference agent must keep working.
package keys

import (
	"crypto/sha256"
	"encoding/hex"
)

const (
	// AgentName is the label and annotation with the agent's name (local
	// copies, state Secrets, APIResourceSchemas, the APIExport).
	AgentName = "syncagent.kcp.io/agent-name"
	// SourceGeneration is the annotation on an APIResourceSchema with the
	// generation of the source CRD (0 for built-in types).
	SourceGeneration = "syncagent.kcp.io/source-generation"

	// RemoteObjectCluster is the label on local copies with the logical
	// cluster of the kcp object.
	RemoteObjectCluster = "syncagent.kcp.io/remote-object-cluster"
	// RemoteObjectNameHash is the label with the SHA-1 of the kcp name.
	RemoteObjectNameHash = "syncagent.kcp.io/remote-object-name-hash"
	// RemoteObjectNamespaceHash is the label with the SHA-1 of the kcp namespace.
	RemoteObjectNamespaceHash = "syncagent.kcp.io/remote-object-namespace-hash"
	// RemoteObjectName is the annotation with the kcp name.
	RemoteObjectName = "syncagent.kcp.io/remote-object-name"
	// RemoteObjectNamespace is the annotation with the kcp namespace.
	RemoteObjectNamespace = "syncagent.kcp.io/remote-object-namespace"
	// RemoteObjectWorkspacePath is the annotation with the workspace path.
	RemoteObjectWorkspacePath = "syncagent.kcp.io/remote-object-workspace-path"
	// RemoteObjectKind is the annotation with the kcp object's kind and
	// group ("Thing.kcp.example.com"; ours): copies of two kcp kinds with
	// the same workspace, namespace and name are told apart by it (copies
	// without it, of the reference or earlier versions, are anyone's of
	// the PublishedResource).
	RemoteObjectKind = "syncagent.kcp.io/remote-object-kind"

	// CreatedBy (ours) labels the service-cluster namespaces the agent
	// created, with the agent's name: only those may it delete again.
	CreatedBy = "syncagent.kcp.io/created-by"
	// CreatedForCluster (ours) labels a namespace the agent created with
	// the logical cluster of the workspace it was created for.
	CreatedForCluster = "syncagent.kcp.io/created-for-cluster"
	// DeletionCandidate (ours) is the annotation with which the sweep
	// marks a created namespace it found empty; the next sweep deletes the
	// namespace only if nothing changed it since. Every agent that is about
	// to write into a namespace removes the mark first, which changes the
	// namespace and so stops the deletion.
	DeletionCandidate = "syncagent.kcp.io/deletion-candidate"
	// NamespaceMetadata (ours) is the annotation on a namespace the agent
	// created that records which labels and annotations the agent put on
	// it (--namespace-label, --namespace-annotation), so that a key taken
	// out of the configuration is removed and no other key is touched.
	NamespaceMetadata = "syncagent.kcp.io/namespace-metadata"

	// ObjectState labels the state Secrets.
	ObjectState = "syncagent.kcp.io/object-state"
	// RelatedIdentifier labels the state Secrets of related objects (ours)
	// with the related entry's identifier.
	RelatedIdentifier = "syncagent.kcp.io/related-identifier"
	// FieldManager is the prefix of the field managers of the related
	// copies the agent creates (one per record, on either side: the mark,
	// kept by the API server in managedFields, that a copy whose record is
	// missing is that record's), and the manager of kcp-origin copies
	// created before they had their own. It is also what the API servers
	// derive from the agent's User-Agent for its writes without a field
	// manager: no mark on its own.
	FieldManager = "api-syncagent"
	// CleanupFinalizer is the legacy finalizer that guarded the deletion of
	// synced kcp objects for every agent alike (the reference's, and this
	// agent's before CleanupFinalizerOf); see internal/finalizer.
	CleanupFinalizer = "syncagent.kcp.io/cleanup"
	// SyncedResources (ours), on a PublishedResource, lists the kcp
	// resources ("plural.group", comma-separated, sorted) whose objects
	// its sync controllers may have given the cleanup finalizer: those of
	// an earlier projection are released once it changed.
	SyncedResources = "syncagent.kcp.io/synced-resources"
	// DeletionPropagationPolicy, on a kcp object (a primary or a kcp-origin
	// related object), says what happens to its service-cluster copy when
	// it is deleted: background (the default, also for a missing or
	// unknown value), foreground or orphan. It is never copied to the
	// other side.
	DeletionPropagationPolicy = "syncagent.kcp.io/deletion-propagation-policy"
	// OrphanedFrom (ours), on a service-cluster object, names the kcp
	// object ("<cluster>/<namespace>/<name>", the namespace empty for a
	// cluster-scoped one) whose deletion with the policy orphan left it:
	// no kcp object adopts it while it is there.
	OrphanedFrom = "syncagent.kcp.io/orphaned-from"
	// ImportInto (ours), a label on a service-cluster object of a
	// PublishedResource's local type, asks the agent to import the object
	// into the workspace (logical cluster name) it names: a kcp object is
	// created from it, and it becomes that object's local copy.
	// ImportName and ImportNamespace (annotations, optional) give the kcp
	// object's name and namespace (default: the object's own). None of the
	// three is ever copied to the other side.
	ImportInto      = "syncagent.kcp.io/import-into"
	ImportName      = "syncagent.kcp.io/import-name"
	ImportNamespace = "syncagent.kcp.io/import-namespace"
	// Importing (ours), on a service-cluster object, says that an import
	// claimed it for the kcp object it names ("<cluster>/<namespace>/<name>")
	// and is not finished: the object is not a copy to delete.
	Importing = "syncagent.kcp.io/importing"
	// ImportedFrom (ours), on a kcp object the agent created by an import,
	// is the UID of the service-cluster object it was imported from.
	ImportedFrom = "syncagent.kcp.io/imported-from"
	// RelatedResourcesPrefix is the prefix of the related-objects annotation
	// on kcp primaries: <prefix><identifier>.<index>.
	RelatedResourcesPrefix = "related-resources.syncagent.kcp.io/"
)

// ReleaseFinalizer (ours) is the finalizer with which an agent keeps a
// PublishedResource it selects until the cleanup finalizers of its kcp
// objects have been released: "syncagent.kcp.io/release-<agent name>", one
// per agent (agents with different selectors never touch each other's),
// with a hash of the name where the name does not fit a qualified name.
func ReleaseFinalizer(agentName string) string { return perAgent("release-", agentName) }

// ReleaseFinalizerIn is the release finalizer of an agent that serves one
// partition of the export's shards (its endpoint slice names a Partition):
// "syncagent.kcp.io/release-<agent name>.<partition>", hashed where it does
// not fit. The agents of the other partitions release their own objects
// and keep their own finalizers. Without a partition it is
// ReleaseFinalizer.
func ReleaseFinalizerIn(agentName, partition string) string {
	if partition == "" {
		return ReleaseFinalizer(agentName)
	}
	return perAgent("release-", agentName+"."+partition)
}

// SyncedResourcesIn is the SyncedResources annotation of an agent that
// serves one partition: "syncagent.kcp.io/synced-resources.<partition>"
// (a hash of the partition where it does not fit). Without a partition it
// is SyncedResources.
func SyncedResourcesIn(partition string) string {
	if partition == "" {
		return SyncedResources
	}
	return perAgent("synced-resources.", partition)
}

// LeaderLease is the name of the Lease the replicas of an agent elect
// their leader with: "syncagent.<agent name>", and with a partition
// "syncagent.<agent name>.<partition>" (a hash of the partition where the
// name would pass 253 characters), so each partition has a leader and the
// replicas of one partition only ever follow each other.
func LeaderLease(agentName, partition string) string {
	name := "syncagent." + agentName
	if partition == "" {
		return name
	}
	if len(name)+1+len(partition) > 253 {
		sum := sha256.Sum256([]byte(partition))
		return name + "." + hex.EncodeToString(sum[:])[:20]
	}
	return name + "." + partition
}

// EndpointLease is the name of the Lease with which the agents of the
// partitions of one agent name decide who serves a virtual workspace
// endpoint (internal/endpointlease): "endpoint.<hash of the URL>.syncagent.<agent name>",
// hashed as a whole where it would pass 253 characters. Leader Leases
// start with "syncagent.", so the two never collide.
func EndpointLease(agentName, url string) string {
	sum := sha256.Sum256([]byte(url))
	name := "endpoint." + hex.EncodeToString(sum[:])[:20] + ".syncagent." + agentName
	if len(name) > 253 {
		all := sha256.Sum256([]byte(agentName + "\n" + url))
		return "endpoint." + hex.EncodeToString(all[:])[:40] + ".syncagent"
	}
	return name
}

// The annotations (ours) on an endpoint's Lease: the endpoint's URL, the
// holder's partition, the partition that asked the holder to give the
// endpoint up, the order in which the partitions' slices listed it (JSON,
// partition to sequence number), and the partition an administrator moved
// it to (set by hand, cleared by that partition's agent).
const (
	EndpointURLAnnotation     = "syncagent.kcp.io/endpoint-url"
	HolderPartitionAnnotation = "syncagent.kcp.io/holder-partition"
	HandoverToAnnotation      = "syncagent.kcp.io/handover-to"
	ListingsAnnotation        = "syncagent.kcp.io/listings"
	MoveToAnnotation          = "syncagent.kcp.io/move-to"
)

// PublisherOf (ours) is the annotation on the APIExport that names, for
// the agents of one agent name, the one that publishes (its Lease name,
// LeaderLease): "syncagent.kcp.io/publisher-<agent name>", hashed as
// ReleaseFinalizer. The agent of a partition that publishes sets it; every
// agent of that name whose Lease it does not name refuses to publish.
func PublisherOf(agentName string) string { return perAgent("publisher-", agentName) }

// CleanupFinalizerOf (ours) is the finalizer with which an agent guards the
// deletion of the kcp objects it syncs (primaries and kcp-origin related
// sources): "syncagent.kcp.io/cleanup-<agent name>", one per agent, hashed
// as ReleaseFinalizer.
func CleanupFinalizerOf(agentName string) string { return perAgent("cleanup-", agentName) }

// perAgent is the key "syncagent.kcp.io/<kind><name>" (name: an agent's,
// or a partition's), with a hash of the name where it does not fit a
// qualified name.
func perAgent(kind, agentName string) string {
	name := kind + agentName
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(agentName))
		name = kind + hex.EncodeToString(sum[:])[:20]
	}
	return "syncagent.kcp.io/" + name
}
