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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Legacy placeholders of the deprecated naming scheme. A naming pattern that
// contains no "{{" is treated as a string with these placeholders.
const (
	// Deprecated: use Go templates instead.
	PlaceholderRemoteClusterName = "$remoteClusterName"
	// Deprecated: use Go templates instead.
	PlaceholderRemoteNamespace = "$remoteNamespace"
	// Deprecated: use Go templates instead.
	PlaceholderRemoteNamespaceHash = "$remoteNamespaceHash"
	// Deprecated: use Go templates instead.
	PlaceholderRemoteName = "$remoteName"
	// Deprecated: use Go templates instead.
	PlaceholderRemoteNameHash = "$remoteNameHash"
)

// Default naming templates for local copies.
const (
	// DefaultNamingName is the template for the name of a local copy when
	// spec.naming.name is empty.
	DefaultNamingName = "{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}"
	// DefaultNamingNamespace is the template for the namespace of a local
	// copy (for namespaced local types) when spec.naming.namespace is empty.
	DefaultNamingNamespace = "{{ .ClusterName }}"
)

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.resource.kind`
// +kubebuilder:printcolumn:name="API Group",type=string,JSONPath=`.spec.resource.apiGroup`
// +kubebuilder:printcolumn:name="Schema",type=string,JSONPath=`.status.resourceSchemaName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PublishedResource describes how an API type of the service cluster (usually
// defined by a CRD) is published into kcp and how objects of that type are
// synchronized between kcp workspaces and the service cluster.
type PublishedResource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PublishedResourceSpec `json:"spec"`

	// Status contains reconciliation information for the published resource.
	// +optional
	Status PublishedResourceStatus `json:"status,omitempty"`
}

// PublishedResourceSpec describes the desired publication of a resource from
// the service cluster into kcp.
type PublishedResourceSpec struct {
	// Resource is the source type on the service cluster.
	Resource SourceResourceDescriptor `json:"resource"`

	// Filter limits which kcp objects are synchronized. Objects that do not
	// match are ignored.
	// +optional
	Filter *ResourceFilter `json:"filter,omitempty"`

	// Naming controls the name and namespace of local copies. The defaults
	// prevent collisions between workspaces; custom rules must keep names
	// unique across all workspaces.
	// +optional
	Naming *ResourceNaming `json:"naming,omitempty"`

	// EnableWorkspacePaths makes the agent resolve the workspace path of
	// every consumer workspace, expose it to templates as .ClusterPath and
	// annotate local copies with it. Requires the core.kcp.io logicalclusters
	// permission claim.
	// +optional
	EnableWorkspacePaths bool `json:"enableWorkspacePaths,omitempty"`

	// Projection reshapes the type as it is seen in kcp (group, versions,
	// kind, plural, scope, short names and categories).
	// +optional
	Projection *ResourceProjection `json:"projection,omitempty"`

	// Mutation configures ordered rewrite rules that are applied to objects
	// while they are synchronized.
	// +optional
	Mutation *ResourceMutationSpec `json:"mutation,omitempty"`

	// Related lists auxiliary objects (Secrets, ConfigMaps or any other type)
	// that are synchronized together with each primary object.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.identifier == x.identifier))",message="identifiers of related resources must be unique"
	Related []RelatedResourceSpec `json:"related,omitempty"`

	// References lists fields of the object that hold the name of another
	// object this agent synchronizes (of another PublishedResource, or of
	// this one), for example spec.configRef.name. The local copy carries the
	// name of the referenced object's copy in such a field; a name the
	// service writes into a status field is given back as the kcp object's
	// name. A reference that cannot be resolved in the object's own workspace
	// is reported with a ReferenceUnresolved Event; the copy keeps the
	// consumer's name unless that names another workspace's copy (a status
	// field keeps its value in kcp).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.path == x.path))",message="paths of references must be unique"
	References []ResourceReference `json:"references,omitempty"`

	// Synchronization controls whether objects are synchronized at all. When
	// absent, synchronization is enabled.
	// +optional
	Synchronization *SynchronizationSpec `json:"synchronization,omitempty"`
}

// ResourceReference is a field that holds the name of another synchronized
// object.
type ResourceReference struct {
	// Path of the field, dot-separated, starting with "spec." or "status."
	// (for example "spec.configRef.name"); only objects are walked, not
	// lists. In spec, the name is the kcp object's name, in status the local
	// copy's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(spec|status)(\.[^.]+)+$`
	Path string `json:"path"`

	// Group of the referenced type as it is published in kcp (after its
	// projection); empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`

	// Kind of the referenced type as it is published in kcp (after its
	// projection). A namespaced referenced object is looked up in the
	// namespace of the referencing object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
}

// SynchronizationSpec controls the object synchronization of a PublishedResource.
type SynchronizationSpec struct {
	// Enabled set to false only publishes the schema into the APIExport and
	// never synchronizes objects. This is useful for a type that another
	// PublishedResource uses as a related resource.
	Enabled bool `json:"enabled"`
}

// SourceResourceDescriptor identifies a resource type on the service cluster.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.version) && size(self.version) > 0 && has(self.versions) && size(self.versions) > 0)",message="version (deprecated) and versions are mutually exclusive"
type SourceResourceDescriptor struct {
	// APIGroup is the API group of the type, for example "example.com"; the
	// empty string means the core group.
	APIGroup string `json:"apiGroup"`

	// Version publishes only this version.
	//
	// Deprecated: use versions instead.
	// +optional
	Version string `json:"version,omitempty"`

	// Versions selects the versions to publish. Empty means all versions.
	// Listed versions that the type does not have are ignored, but at least
	// one of them must exist and be served.
	// +optional
	Versions []string `json:"versions,omitempty"`

	// Kind is the kind of the type, for example "Database". It is resolved to
	// a resource through discovery.
	Kind string `json:"kind"`
}

// ResourceFilter limits the objects that are synchronized. The CRD checks
// the selectors' operators; the related selectors, inside a list, cannot be
// checked within CEL's cost budget and are checked by ConfigValid.
type ResourceFilter struct {
	// Namespace is matched against the labels of the kcp object's namespace.
	// It is ignored for cluster-scoped kcp objects. Requires the namespaces
	// permission claim.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"
	// +optional
	Namespace *metav1.LabelSelector `json:"namespace,omitempty"`

	// Resource is matched against the labels of the kcp object itself.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"
	// +optional
	Resource *metav1.LabelSelector `json:"resource,omitempty"`
}

// ResourceNaming controls how local copies are named. Each field is either a
// Go template (when it contains "{{") or a string with the deprecated
// $remote... placeholders. Templates see .Object (the kcp object after spec
// mutations), .ClusterName and .ClusterPath.
type ResourceNaming struct {
	// Name of local copies. Empty means
	// "{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}".
	// +optional
	Name string `json:"name,omitempty"`

	// Namespace of local copies, used only when the local type is namespaced.
	// Empty means "{{ .ClusterName }}".
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ResourceScope is the scope of a resource type.
type ResourceScope string

const (
	// ClusterScoped is the scope of cluster-wide types.
	ClusterScoped ResourceScope = "Cluster"
	// NamespaceScoped is the scope of namespaced types.
	NamespaceScoped ResourceScope = "Namespaced"
)

// ResourceProjection describes how the source type is changed before it is
// published in kcp. Unset fields keep the source's value.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.version) && size(self.version) > 0 && has(self.versions) && size(self.versions) > 0)",message="version (deprecated) and versions are mutually exclusive"
type ResourceProjection struct {
	// Group is the API group in kcp.
	// +optional
	Group string `json:"group,omitempty"`

	// Version renames the single selected version.
	//
	// Deprecated: use versions instead.
	// +optional
	Version string `json:"version,omitempty"`

	// Versions renames versions (old name to new name). The result must not
	// contain duplicates; it is sorted in Kubernetes version order.
	// +optional
	Versions map[string]string `json:"versions,omitempty"`

	// Scope is the scope of the type in kcp.
	// +optional
	// +kubebuilder:validation:Enum=Cluster;Namespaced
	Scope ResourceScope `json:"scope,omitempty"`

	// Kind is the kind in kcp. It also sets the list kind, the singular
	// (lowercase kind) and the plural (singular + "s").
	// +optional
	Kind string `json:"kind,omitempty"`

	// Plural is the plural resource name in kcp, applied after kind.
	// +optional
	Plural string `json:"plural,omitempty"`

	// ShortNames replaces the source's short names. Absent keeps them, an
	// empty list removes them.
	// +optional
	ShortNames []string `json:"shortNames"` // no omitempty: [] and nil differ

	// Categories replaces the source's categories. Absent keeps them, an
	// empty list removes them.
	// +optional
	Categories []string `json:"categories"` // no omitempty: [] and nil differ
}

// ResourceMutationSpec holds ordered rewrite rules for the spec and the status
// of objects.
type ResourceMutationSpec struct {
	// Spec rules are applied to a copy of the origin object before it is
	// compared with or written to the destination.
	// +optional
	Spec []ResourceMutation `json:"spec,omitempty"`

	// Status rules are applied to a copy of the local copy before its status
	// is copied to kcp.
	// +optional
	Status []ResourceMutation `json:"status,omitempty"`
}

// ResourceMutation is one rewrite rule. Exactly one member should be set;
// when several are set, the first in the order delete, regex, template, cel
// wins and the PublishedResource reports AmbiguousConfiguration.
//
// +kubebuilder:validation:XValidation:rule="has(self.delete) || has(self.regex) || has(self.template) || has(self.cel)",message="a mutation must configure one of delete, regex, template or cel"
type ResourceMutation struct {
	// +optional
	Delete *ResourceDeleteMutation `json:"delete,omitempty"`
	// +optional
	Regex *ResourceRegexMutation `json:"regex,omitempty"`
	// +optional
	Template *ResourceTemplateMutation `json:"template,omitempty"`
	// +optional
	CEL *ResourceCELMutation `json:"cel,omitempty"`
}

// ResourceDeleteMutation removes the value at a path.
type ResourceDeleteMutation struct {
	// Path in gjson/sjson syntax, for example "spec.users.#.name".
	Path string `json:"path"`
}

// ResourceRegexMutation rewrites the value at a path with a regular
// expression.
type ResourceRegexMutation struct {
	// Path in gjson/sjson syntax.
	Path string `json:"path"`

	// Pattern is a Go regular expression. Empty sets the value to the
	// replacement.
	// +optional
	Pattern string `json:"pattern,omitempty"`

	// Replacement may refer to groups of the pattern as $1 or ${name}.
	// +optional
	Replacement string `json:"replacement,omitempty"`
}

// ResourceTemplateMutation writes the output of a Go template at a path.
type ResourceTemplateMutation struct {
	// Path in gjson/sjson syntax.
	Path string `json:"path"`

	// Template is a Go text/template. It sees .Value (the current value at
	// path), .LocalObject/.Self (the object being mutated) and
	// .RemoteObject/.Other (the other object, may be nil).
	Template string `json:"template"`
}

// ResourceCELMutation writes the result of a CEL expression at a path.
type ResourceCELMutation struct {
	// Path in gjson/sjson syntax.
	Path string `json:"path"`

	// Expression is a CEL expression. It sees value (the current value at
	// path, null if missing), self (the object being mutated) and other (the
	// other object or null).
	Expression string `json:"expression"`
}

// RelatedResourceOrigin is the side that holds the source of truth of a
// related resource.
type RelatedResourceOrigin string

const (
	// RelatedResourceOriginService means the service cluster is the source of truth.
	RelatedResourceOriginService RelatedResourceOrigin = "service"
	// RelatedResourceOriginKcp means kcp is the source of truth.
	RelatedResourceOriginKcp RelatedResourceOrigin = "kcp"
)

// RelatedResourceKind is the deprecated way to name a related type.
type RelatedResourceKind string

const (
	// RelatedResourceKindConfigMap means core v1 configmaps.
	RelatedResourceKindConfigMap RelatedResourceKind = "ConfigMap"
	// RelatedResourceKindSecret means core v1 secrets.
	RelatedResourceKindSecret RelatedResourceKind = "Secret"
)

// RelatedResourceSpec describes auxiliary objects that are synchronized
// together with a primary object.
//
// (group may be empty because the core group is "".)
// +kubebuilder:validation:XValidation:rule="has(self.kind) != (has(self.version) || has(self.resource))",message="must specify either kind (deprecated) or group, version, resource"
// +kubebuilder:validation:XValidation:rule="has(self.resource) == has(self.version)",message="resource and version must be configured together or not at all"
// +kubebuilder:validation:XValidation:rule="!has(self.group) || (has(self.resource) && has(self.version))",message="configuring a group also requires a version and resource"
// +kubebuilder:validation:XValidation:rule="!has(self.identityHash) || (has(self.group) && has(self.version) && has(self.resource))",message="identity hashes can only be used with GVRs"
// +kubebuilder:validation:XValidation:rule="!(self.origin == 'service' && has(self.syncStatus) && self.syncStatus) || has(self.watch)",message="watch must be configured when origin is service and syncStatus is true"
type RelatedResourceSpec struct {
	// Identifier is unique within the PublishedResource. It is part of the
	// related-resources annotation on kcp objects and of state keys, so it
	// should be a valid annotation key segment (alphanumerics, '-', '_', '.',
	// at most 60 characters).
	// +kubebuilder:validation:MaxLength=253
	Identifier string `json:"identifier"`

	// Origin is the side that holds the source of truth: "service" or "kcp".
	// +kubebuilder:validation:Enum=service;kcp
	Origin RelatedResourceOrigin `json:"origin"`

	// Kind is the legacy way to name core v1 ConfigMaps or Secrets.
	//
	// Deprecated: use version and resource (and group) instead.
	// +optional
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind RelatedResourceKind `json:"kind,omitempty"`

	// Group of the type on the origin side; empty means the core group.
	// +optional
	Group string `json:"group,omitempty"`

	// Version of the type on the origin side.
	// +optional
	Version string `json:"version,omitempty"`

	// Resource (plural) of the type on the origin side.
	// +optional
	Resource string `json:"resource,omitempty"`

	// IdentityHash of the APIExport that provides the kcp-side type, when it
	// is not provided by this agent's own APIExport.
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`

	// Projection is the group, version and resource on the destination side.
	// Unset parts are taken from the origin.
	// +optional
	Projection *RelatedResourceProjection `json:"projection,omitempty"`

	// AllowedNamespaces lists the namespaces of the service cluster where
	// this related object may be read or written although they are not
	// the workspace's own. The workspace's own is the local copy's
	// namespace when it contains the workspace's cluster name (as with the
	// default naming); a namespace object.namespace gives on the service side
	// from nothing the consumer controls (plain text, or a template that
	// reads only .Side, .ClusterName and .ClusterPath there) is the
	// owner's choice and counts as listed. Entries are Go templates that
	// see only .ClusterName and .ClusterPath, never the consumer's object
	// (for example "{{ .ClusterName }}-secrets" or "shared-credentials").
	// Anything else is refused, as it may come from data the consumer
	// controls: a namespace the consumer names, and for origin service a
	// copy namespace several workspaces share. (Ours; the reference has
	// no such restriction.)
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`

	// Object describes how origin objects are found and how destination
	// objects are named.
	Object RelatedResourceObject `json:"object"`

	// Mutation configures rewrite rules for the related objects.
	// +optional
	Mutation *ResourceMutationSpec `json:"mutation,omitempty"`

	// Cleanup deletes the destination copies when the primary is deleted.
	// Origin objects are never touched.
	// +optional
	Cleanup bool `json:"cleanup,omitempty"`

	// Watch makes changes of origin objects re-enqueue their primaries.
	// Without it, origin changes are seen when the primary reconciles.
	// +optional
	Watch *RelatedResourceWatch `json:"watch,omitempty"`

	// SyncStatus also copies the status from origin to destination through
	// the destination's status subresource.
	// +optional
	SyncStatus bool `json:"syncStatus,omitempty"`
}

// RelatedResourceProjection is the destination-side GVR of a related resource.
type RelatedResourceProjection struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Resource string `json:"resource,omitempty"`
}

// RelatedResourceWatch selects how changes of origin objects are mapped to
// primaries.
//
// +kubebuilder:validation:XValidation:rule="has(self.byOwner) != has(self.bySelector)",message="exactly one of byOwner or bySelector must be set"
type RelatedResourceWatch struct {
	// ByOwner follows an ownerReference to the primary in the same namespace.
	// +optional
	ByOwner *RelatedResourceWatchByOwner `json:"byOwner,omitempty"`

	// BySelector enqueues every primary whose labels match this selector.
	// +optional
	BySelector *metav1.LabelSelector `json:"bySelector,omitempty"`
}

// RelatedResourceWatchByOwner has no options.
type RelatedResourceWatchByOwner struct{}

// RelatedResourceObject locates the origin objects and names their
// destination copies. (The embedded spec's validation rule, at least one
// mechanism, applies to it too.)
type RelatedResourceObject struct {
	RelatedResourceObjectSpec `json:",inline"`

	// Namespace locates the namespace(s) of the related objects. Default: the
	// namespace of the primary on each side. Required when a primary copy is
	// cluster-scoped.
	// +optional
	Namespace *RelatedResourceObjectSpec `json:"namespace,omitempty"`
}

// RelatedResourceObjectSpec holds the mechanisms that locate objects. When
// several are set, reference wins over selector, and selector over template.
//
// +kubebuilder:validation:XValidation:rule="has(self.reference) || has(self.selector) || has(self.template)",message="one of reference, selector or template must be configured"
type RelatedResourceObjectSpec struct {
	// Selector lists origin objects by labels; keys and values may be
	// templates.
	// +optional
	Selector *RelatedResourceObjectSelector `json:"selector,omitempty"`

	// Reference is a gjson path evaluated in both primary copies.
	// +optional
	Reference *RelatedResourceObjectReference `json:"reference,omitempty"`

	// Template is a Go template evaluated once per side.
	// +optional
	Template *TemplateExpression `json:"template,omitempty"`
}

// RelatedResourceObjectReference is a path into a primary object.
type RelatedResourceObjectReference struct {
	// Path in gjson syntax, for example "spec.secretRef.name".
	Path string `json:"path"`

	// Regex is optionally applied to each value found at path.
	// +optional
	Regex *RegularExpression `json:"regex,omitempty"`
}

// RelatedResourceObjectSelector locates related objects by labels.
type RelatedResourceObjectSelector struct {
	metav1.LabelSelector `json:",inline"`

	// Rewrite computes the destination name of each found object.
	Rewrite RelatedResourceSelectorRewrite `json:"rewrite"`
}

// RelatedResourceSelectorRewrite maps found names to destination names.
//
// +kubebuilder:validation:XValidation:rule="has(self.regex) || has(self.template)",message="one of regex or template must be configured"
type RelatedResourceSelectorRewrite struct {
	// +optional
	Regex *RegularExpression `json:"regex,omitempty"`
	// +optional
	Template *TemplateExpression `json:"template,omitempty"`
}

// RegularExpression is a Go regular expression replacement.
type RegularExpression struct {
	// Pattern is a Go regular expression. Empty returns the replacement.
	// +optional
	Pattern string `json:"pattern,omitempty"`

	// Replacement may refer to groups of the pattern as $1 or ${name}.
	// +optional
	Replacement string `json:"replacement,omitempty"`
}

// TemplateExpression is a Go text/template.
type TemplateExpression struct {
	// +optional
	Template string `json:"template,omitempty"`
}

// PublishedResourceStatus is the observed state of a PublishedResource.
type PublishedResourceStatus struct {
	// ResourceSchemaName is the name of the APIResourceSchema in kcp for the
	// current projection.
	// +optional
	ResourceSchemaName string `json:"resourceSchemaName,omitempty"`

	// ObservedGeneration is the metadata.generation that resourceSchemaName
	// and the SchemaReady condition reflect.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions describe the state of the publication and synchronization.
	// Each controller owns its own condition type.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// PublishedResourceList is a list of PublishedResources.
type PublishedResourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PublishedResource `json:"items"`
}
