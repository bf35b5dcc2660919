// Package v1alpha1 contains the PublishedResource API (group syncagent.kcp.io,
// version v1alpha1). It is wire-compatible with the PublishedResource API of
// kcp-dev/api-syncagent: every JSON field, default and validation message of
// that API is kept; conditions and observedGeneration in the status are
// additions.
//
// This package may import only apimachinery-level packages so that consumers
// can use the types without pulling in the agent's dependencies.
//
// +kubebuilder:object:generate=true
// +groupName=syncagent.kcp.io
package v1alpha1
