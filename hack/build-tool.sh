#!/usr/bin/env bash
# Builds a pinned binary from one of the wrapper modules under hack/ and
# prints its path. Binaries live outside the clone, named <name>-<version>,
# so later runs (and CI on the same machine) reuse them; a missing binary is
# rebuilt from the Go module proxy.
#
# A wrapper whose sources are not all on the module proxy has a prepare.sh
# that puts them in place; it runs first (and does nothing once they are).
#
# usage: hack/build-tool.sh <wrapper dir> <module that sets the version> <package> <name> [subdir]
set -euo pipefail

dir=$1 module=$2 pkg=$3 name=$4 subdir=${5:-testbed}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/api-syncagent/$subdir
export GONOSUMDB=github.com/kcp-dev GOFLAGS=-mod=readonly

if [ -x "$dir/prepare.sh" ]; then
  "$dir/prepare.sh"
fi

version=$(cd "$dir" && go list -m -f '{{.Version}}' "$module")
out=$cache/$name-$version
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building $name $version (first time only) ..." >&2
  start=$(date +%s)
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -o "$out.tmp.$$" "$pkg")
  mv "$out.tmp.$$" "$out"
  echo "built $out in $(( $(date +%s) - start ))s" >&2
fi
echo "$out"
