#!/usr/bin/env bash
# Builds a pinned binary from one of the wrapper modules under hack/ and
# prints its path. Binaries live outside the clone, named <name>-<version>,
# so later runs (and CI on the same machine) reuse them; a missing binary is
# rebuilt from the Go module proxy.
#
# A wrapper whose sources are not all on the module proxy has a prepare.sh
# that puts them in place; it runs before a build (and does nothing once
# they are), and the version comes from its go.mod alone.
#
# usage: hack/build-tool.sh <wrapper dir> <module that sets the version> <package> <name> [subdir]
set -euo pipefail

dir=$1 module=$2 pkg=$3 name=$4 subdir=${5:-testbed}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/api-syncagent/$subdir
export GONOSUMDB=github.com/kcp-dev GOFLAGS=-mod=readonly

if [ -x "$dir/prepare.sh" ]; then
  # Read from go.mod alone: loading the module graph needs the sources
  # prepare.sh puts in place, which a cached binary does not.
  version=$(cd "$dir" && go mod edit -json | awk -v path="\"$module\"," '$1 == "\"Path\":" && $2 == path { getline; gsub(/[",]/, ""); print $2; exit }')
else
  version=$(cd "$dir" && go list -m -f '{{.Version}}' "$module")
fi
if [ -z "$version" ]; then
  echo "no version of $module in $dir/go.mod" >&2
  exit 1
fi
out=$cache/$name-$version
if [ ! -x "$out" ]; then
  if [ -x "$dir/prepare.sh" ]; then
    "$dir/prepare.sh"
  fi
  mkdir -p "$cache"
  echo "building $name $version (first time only) ..." >&2
  start=$(date +%s)
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -o "$out.tmp.$$" "$pkg")
  mv "$out.tmp.$$" "$out"
  echo "built $out in $(( $(date +%s) - start ))s" >&2
fi
echo "$out"
