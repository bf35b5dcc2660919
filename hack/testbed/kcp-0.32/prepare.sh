#!/usr/bin/env bash
# Puts kcp v0.32.2's five staging modules (apimachinery, client-go,
# code-generator, sdk, virtual-workspace-framework) into ./staging, where this
# wrapper module's replace block expects them. hack/build-tool.sh runs it
# before every build; it does nothing once ./staging holds its source.
#
# The source, in this order:
#   KCP_STAGING_DIR      a kcp v0.32.2 git checkout's staging/src/github.com/kcp-dev
#                        (where the public internet is reachable:
#                        git clone --depth 1 -b v0.32.2 https://github.com/kcp-dev/kcp);
#                        the checkout must be at the tag v0.32.2
#   KCP_STAGING_ARCHIVE  the archive of those folders (default: the shared
#                        test bed's, ../shared/testbed next to the clone),
#                        checked against its sha256 below.
set -euo pipefail
cd "$(dirname "$0")"

tag=v0.32.2
archive_sha256=cbc56ae7628714004fc4b920d0859735d6101666ca4644273bf44a43cb9217f3
modules=(apimachinery client-go code-generator sdk virtual-workspace-framework)
repo=$(cd ../../.. && pwd)
archive=${KCP_STAGING_ARCHIVE:-$repo/../shared/testbed/kcp-v0.32.2-staging.tar.xz}

# One preparation at a time: a second build waits instead of reading a tree
# that the first one is replacing.
exec 9>.prepare.lock
flock 9

if [ -n "${KCP_STAGING_DIR:-}" ]; then
  dir=$(cd "$KCP_STAGING_DIR" && pwd)
  commit=$(git -C "$dir" rev-parse HEAD 2>/dev/null) || {
    echo "KCP_STAGING_DIR=$dir is not in a git checkout; cannot tell that it is kcp $tag" >&2
    exit 1
  }
  if [ "$(git -C "$dir" rev-parse "$tag^{commit}" 2>/dev/null)" != "$commit" ]; then
    echo "KCP_STAGING_DIR=$dir: the checkout is at $commit, not at kcp's tag $tag" >&2
    exit 1
  fi
  if ! git -C "$dir" diff --quiet HEAD -- .; then
    echo "KCP_STAGING_DIR=$dir has local changes; kcp $tag's staging modules must be as tagged" >&2
    exit 1
  fi
  source_id="git:$commit"
else
  source_id="archive:$archive_sha256"
fi
if [ -f staging/.source ] && [ "$(cat staging/.source)" = "$source_id" ]; then
  exit 0
fi

tmp=$(mktemp -d staging.tmp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${KCP_STAGING_DIR:-}" ]; then
  for m in "${modules[@]}"; do
    cp -R "$dir/$m" "$tmp/$m"
  done
else
  if [ ! -f "$archive" ]; then
    echo "kcp $tag's staging modules: no archive at $archive;" >&2
    echo "set KCP_STAGING_ARCHIVE to it or KCP_STAGING_DIR to a kcp $tag checkout's staging/src/github.com/kcp-dev" >&2
    exit 1
  fi
  if ! echo "$archive_sha256  $archive" | sha256sum --check --status; then
    echo "kcp $tag's staging modules: $archive does not have sha256 $archive_sha256" >&2
    exit 1
  fi
  tar -xJf "$archive" -C "$tmp"
fi
for m in "${modules[@]}"; do
  if [ ! -f "$tmp/$m/go.mod" ]; then
    echo "kcp $tag's staging modules: $m/go.mod missing in $source_id" >&2
    exit 1
  fi
done
echo "$source_id" >"$tmp/.source"
rm -rf staging
mv "$tmp" staging
trap - EXIT
