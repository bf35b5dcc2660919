#!/usr/bin/env bash
# Regenerates the SDK's deepcopy code and the PublishedResource CRD with the
# pinned controller-gen (hack/tools/controller-gen).
set -euo pipefail
cd "$(dirname "$0")/.."

controller_gen=$(hack/build-tool.sh hack/tools/controller-gen sigs.k8s.io/controller-tools sigs.k8s.io/controller-tools/cmd/controller-gen controller-gen tools)

# The generated code starts with hack/boilerplate.go.txt (the license
# header), as the code generators' below.
(cd sdk && "$controller_gen" \
  object:headerFile=../hack/boilerplate.go.txt \
  paths=./apis/...)

(cd sdk && "$controller_gen" \
  crd:crdVersions=v1 \
  paths=./apis/... \
  output:crd:dir=../deploy/crd)

# The SDK's clientset, listers, informers and apply configurations, with
# the pinned Kubernetes code generators (hack/tools/code-generator).
gen() { hack/build-tool.sh hack/tools/code-generator k8s.io/code-generator "k8s.io/code-generator/cmd/$1" "$1" tools; }
sdk=github.com/kcp-syncagent/api-syncagent/sdk
apis=$sdk/apis/syncagent/v1alpha1
header=$(pwd)/hack/boilerplate.go.txt
applyconfiguration_gen=$(gen applyconfiguration-gen)
client_gen=$(gen client-gen)
lister_gen=$(gen lister-gen)
informer_gen=$(gen informer-gen)
(
  cd sdk
  rm -rf applyconfiguration clientset listers informers
  "$applyconfiguration_gen" --go-header-file "$header" \
    --output-dir applyconfiguration --output-pkg "$sdk/applyconfiguration" "$apis"
  "$client_gen" --go-header-file "$header" \
    --output-dir clientset --output-pkg "$sdk/clientset" --clientset-name versioned \
    --apply-configuration-package "$sdk/applyconfiguration" \
    --input-base "$(pwd)/apis" --input syncagent/v1alpha1
  "$lister_gen" --go-header-file "$header" \
    --output-dir listers --output-pkg "$sdk/listers" "$apis"
  "$informer_gen" --go-header-file "$header" \
    --output-dir informers --output-pkg "$sdk/informers" \
    --versioned-clientset-package "$sdk/clientset/versioned" --listers-package "$sdk/listers" "$apis"
)
