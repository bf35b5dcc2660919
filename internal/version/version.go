// Package version holds the agent's version, injected at build time with
// -ldflags "-X github.com/kcp-syncagent/api-syncagent/internal/version.Version=<v>".
package version

// Version of the agent binary.
var Version = "dev"
