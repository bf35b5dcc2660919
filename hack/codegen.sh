#!/usr/bin/env bash
# Regenerates the SDK's deepcopy code and the PublishedResource CRD with the
# pinned controller-gen (hack/tools/controller-gen).
set -euo pipefail
cd "$(dirname "$0")/.."

controller_gen=$(hack/build-tool.sh hack/tools/controller-gen sigs.k8s.io/controller-tools sigs.k8s.io/controller-tools/cmd/controller-gen controller-gen tools)

(cd sdk && "$controller_gen" \
  object \
  paths=./apis/...)

(cd sdk && "$controller_gen" \
  crd:crdVersions=v1 \
  paths=./apis/... \
  output:crd:dir=../deploy/crd)
