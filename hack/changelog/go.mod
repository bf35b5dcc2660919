// Checks CHANGELOG.md and prints a release's notes from it (make verify,
// the release workflow). Standard library only.
module github.com/kcp-syncagent/api-syncagent/hack/changelog

go 1.24.0
