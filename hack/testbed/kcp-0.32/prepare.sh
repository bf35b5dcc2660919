#!/usr/bin/env bash
# Puts kcp v0.32.2's five staging modules (apimachinery, client-go,
# code-generator, sdk, virtual-workspace-framework) into ./staging, where this
# wrapper module's replace block expects them. hack/build-tool.sh runs it
# before every build; it does nothing once ./staging matches its source.
#
# The source, in this order:
#   KCP_STAGING_DIR      a kcp v0.32.2 checkout's staging/src/github.com/kcp-dev
#                        (where the public internet is reachable:
#                        git clone --depth 1 -b v0.32.2 https://github.com/kcp-dev/kcp)
#   KCP_STAGING_ARCHIVE  the archive of those folders (default: the shared
#                        test bed's, ../shared/testbed next to the clone),
#                        checked against its sha256 below.
set -euo pipefail
cd "$(dirname "$0")"

archive_sha256=cbc56ae7628714004fc4b920d0859735d6101666ca4644273bf44a43cb9217f3
modules=(apimachinery client-go code-generator sdk virtual-workspace-framework)
repo=$(cd ../../.. && pwd)
archive=${KCP_STAGING_ARCHIVE:-$repo/../shared/testbed/kcp-v0.32.2-staging.tar.xz}

if [ -n "${KCP_STAGING_DIR:-}" ]; then
  source_id="dir:$(cd "$KCP_STAGING_DIR" && pwd)"
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
    cp -R "$KCP_STAGING_DIR/$m" "$tmp/$m"
  done
else
  if [ ! -f "$archive" ]; then
    echo "kcp v0.32.2's staging modules: no archive at $archive;" >&2
    echo "set KCP_STAGING_ARCHIVE to it or KCP_STAGING_DIR to a kcp v0.32.2 checkout's staging/src/github.com/kcp-dev" >&2
    exit 1
  fi
  if ! echo "$archive_sha256  $archive" | sha256sum --check --status; then
    echo "kcp v0.32.2's staging modules: $archive does not have sha256 $archive_sha256" >&2
    exit 1
  fi
  tar -xJf "$archive" -C "$tmp"
fi
for m in "${modules[@]}"; do
  if [ ! -f "$tmp/$m/go.mod" ]; then
    echo "kcp v0.32.2's staging modules: $m/go.mod missing in $source_id" >&2
    exit 1
  fi
done
echo "$source_id" >"$tmp/.source"
rm -rf staging
mv "$tmp" staging
trap - EXIT
