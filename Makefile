# api-syncagent: build, test bed, tests and the demo.
#
# Everything is built from the Go module proxy; binaries of the test bed and
# tools are cached in $(CACHE_DIR) (outside the clone) and reused.

SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := build

export GONOSUMDB := github.com/kcp-dev

CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/api-syncagent
BIN_DIR   ?= _build
ARTIFACTS ?= $(CURDIR)/_artifacts
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit and its time label the image (its files carry that time: two
# builds of one commit give one digest).
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
CREATED   ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
CREATED_RFC3339 = $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || echo 1970-01-01T00:00:00Z)
LDFLAGS   := -X github.com/kcp-syncagent/api-syncagent/internal/version.Version=$(VERSION)

E2E_TIMEOUT  ?= 60m
E2E_PARALLEL ?= 2
E2E_RUN      ?= .
FUZZTIME     ?= 5s
# Fuzz targets (package:target), each run for FUZZTIME by `make fuzz`.
FUZZ_TARGETS := ./internal/sync/naming:FuzzDefaultNames ./internal/sync/naming:FuzzNamingPatterns \
	./internal/mutation:FuzzApply ./internal/projection:FuzzProject ./internal/sync/state:FuzzDecode
UNIT_PKGS    := ./cmd/... ./internal/... ./hack/apidocs/... ./test/bench/... ./test/chart/... ./test/invariant/... ./test/e2e/framework/...

BUILD_TOOL := hack/build-tool.sh

.PHONY: build
build: ## Build the agent binary into $(BIN_DIR).
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/api-syncagent ./cmd/api-syncagent

# The test bed: each target prints nothing but builds the binary when missing.
# KCP_VERSION picks the kcp of the test bed (e2e, soak, bench, demo); each
# version has its wrapper module hack/testbed/kcp-<major.minor>.
KCP_VERSIONS := 0.28.1 0.32.2
KCP_VERSION  ?= 0.32.2
ifeq ($(filter $(KCP_VERSION),$(KCP_VERSIONS)),)
$(error KCP_VERSION=$(KCP_VERSION) is not one of the test bed's kcp versions: $(KCP_VERSIONS))
endif
kcp_build = $(BUILD_TOOL) hack/testbed/kcp-$(basename $(1)) github.com/kcp-dev/kcp github.com/kcp-dev/kcp/cmd/$(2) $(2)

.PHONY: testbed
testbed: ## Build kcp KCP_VERSION (and its front-proxy), kube-apiserver, etcd and kubectl from the Go module proxy (cached).
	@$(call kcp_build,$(KCP_VERSION),kcp) >/dev/null
	@$(call kcp_build,$(KCP_VERSION),kcp-front-proxy) >/dev/null
	@$(BUILD_TOOL) hack/testbed/kubernetes k8s.io/kubernetes k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver >/dev/null
	@$(BUILD_TOOL) hack/testbed/kubernetes k8s.io/kubernetes k8s.io/kubernetes/cmd/kubectl kubectl >/dev/null
	@$(BUILD_TOOL) hack/testbed/etcd go.etcd.io/etcd/server/v3 . etcd >/dev/null
	@echo "test bed (kcp $(KCP_VERSION)) ready in $(CACHE_DIR)/testbed"

.PHONY: testbeds
testbeds: ## Build the test bed for every kcp version ($(KCP_VERSIONS)).
	@set -e; for v in $(KCP_VERSIONS); do $(MAKE) --no-print-directory testbed KCP_VERSION=$$v; done

# Paths of the test bed binaries (the build tool only prints once they exist).
TESTBED_ENV = \
	KCP_VERSION=$(KCP_VERSION) \
	KCP_BIN=$$($(call kcp_build,$(KCP_VERSION),kcp)) \
	KCP_FRONT_PROXY_BIN=$$($(call kcp_build,$(KCP_VERSION),kcp-front-proxy)) \
	TEST_ASSET_KUBE_APISERVER=$$($(BUILD_TOOL) hack/testbed/kubernetes k8s.io/kubernetes k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver) \
	TEST_ASSET_KUBECTL=$$($(BUILD_TOOL) hack/testbed/kubernetes k8s.io/kubernetes k8s.io/kubernetes/cmd/kubectl kubectl) \
	TEST_ASSET_ETCD=$$($(BUILD_TOOL) hack/testbed/etcd go.etcd.io/etcd/server/v3 . etcd)

.PHONY: test
test: verify test-unit image-test release-test fuzz test-e2e soak-short test-e2e-other-kcp ## Everything CI runs: verify, unit tests, the image check, the release's steps (offline), fuzzing (briefly), e2e tests and the short soak on kcp KCP_VERSION, the e2e tests on E2E_OTHER_KCP.

.PHONY: test-unit
test-unit: ## Unit tests (with the race detector), the check of the PromQL the chart and docs ship (hack/promql), the image builder's tests (hack/image), the changelog tool's (hack/changelog), the SDK's (sdk).
	go test -race -count=1 $(UNIT_PKGS)
	go -C hack/promql test -count=1 ./...
	go -C hack/image test -count=1 ./...
	go -C hack/changelog test -count=1 ./...
	go -C sdk test -count=1 ./...

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (5s; e.g. FUZZTIME=10m for a long run).
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		hack/fuzz.sh $${t%%:*} $${t#*:} $(FUZZTIME); \
	done

# refschema (hack/refschema, a test-only module with kcp's crdpuller) computes
# the reference agent's schemas of built-in types; the e2e suite compares.
.PHONY: refschema
refschema: ## Build hack/refschema (the reference's schemas of built-in types, with kcp's crdpuller; used by e2e tests).
	CGO_ENABLED=0 go -C hack/refschema build -trimpath -o $(CURDIR)/$(BIN_DIR)/refschema .

.PHONY: test-e2e
test-e2e: testbed build refschema ## e2e tests against real kcp and kube-apiserver (E2E_RUN=regex to select).
	mkdir -p $(ARTIFACTS)
	$(TESTBED_ENV) AGENT_BIN=$(CURDIR)/$(BIN_DIR)/api-syncagent REFSCHEMA_BIN=$(CURDIR)/$(BIN_DIR)/refschema ARTIFACTS=$(ARTIFACTS) \
		go test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -p 1 -parallel $(E2E_PARALLEL) -run '$(E2E_RUN)' -v ./test/e2e/... 2>&1 | tee $(ARTIFACTS)/e2e.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|_test.go|agent log'

# The e2e tests whose subject is something kcp does and that differs between
# kcp versions, run on the other kcp versions of the test bed, each with its
# artifacts in $(ARTIFACTS)/kcp-<version>: starting kcp and the agent,
# endpoint slices and shards, the APIExport and APIResourceSchemas the agent
# writes, the virtual workspace's reads and writes of synced and related
# objects (claims, types, the Events API, imports), releases and finalizers,
# workspaces that go away, and the SDK's clients. What the agent decides on
# its own (queues, naming, conditions, restarts, which finalizer and when,
# the service cluster's namespaces and rules, references, the chart) runs
# once, on KCP_VERSION. E2E_OTHER_KCP_RUN=. runs the whole suite there.
E2E_OTHER_KCP ?= $(filter-out $(KCP_VERSION),$(KCP_VERSIONS))
E2E_OTHER_KCP_RUN ?= ^(TestAgentStartup|TestAgentWaitsForEndpointSlice|TestMultipleShards|TestExport.*|TestSchemaLifecycle|TestSchemaBuiltinType|TestSchemaErrors|TestSyncRoundTrip|TestGettingStarted|TestRelatedResources|TestRelatedReleasedWithPublishedResource|TestRelatedTypes|TestRelatedOutsideTheClaimSelector|TestClaimsMismatchIsShown|TestCreateThenDeleteLeavesNothing|TestGoneWorkspaceIsSwept|TestSyncWorkspaceUnbind|TestSDKClients|TestKcpKubeconfigReload|TestWatchListStaysOff|TestWithdrawnResourceKeepsState|TestBuiltinSchemaSwitchKeepsConsumers|TestBuiltinStatusReachesKcp|TestEventsThroughTheEventsAPI|TestImport)$$
.PHONY: test-e2e-other-kcp
test-e2e-other-kcp: ## The e2e tests of behaviour that differs between kcp versions (E2E_OTHER_KCP_RUN) on each kcp of E2E_OTHER_KCP (every test bed kcp but KCP_VERSION).
	@set -e; for v in $(E2E_OTHER_KCP); do \
		echo "e2e tests on kcp $$v"; \
		$(MAKE) --no-print-directory test-e2e KCP_VERSION=$$v E2E_RUN='$(E2E_OTHER_KCP_RUN)' ARTIFACTS=$(ARTIFACTS)/kcp-$$v; \
	done

# The soak (docs/reliability.md): seeded random operations, administrator
# changes and faults (agent replicas, a kcp shard), then the invariant
# checker. SEED replays a schedule, DURATION sets how long operations run,
# WORKSPACES how many workspaces bind at the start. The soak starts its own
# sharded kcp, so the suite's shared one is not started.
SEED         ?=
DURATION     ?= 2m
WORKSPACES   ?= 8
PARTITIONED  ?=
SOAK_TIMEOUT ?= 120m
SOAK_DIR      = $(ARTIFACTS)/soak$(if $(SEED),-$(SEED))$(if $(PARTITIONED),-partitioned)
.PHONY: soak
soak: testbed build refschema ## Randomized operations and faults against the invariant checker (SEED=…, DURATION=2m, WORKSPACES=8, PARTITIONED=1); logs in _artifacts/soak-<seed>.
	rm -rf $(SOAK_DIR) && mkdir -p $(SOAK_DIR)
	$(TESTBED_ENV) AGENT_BIN=$(CURDIR)/$(BIN_DIR)/api-syncagent REFSCHEMA_BIN=$(CURDIR)/$(BIN_DIR)/refschema ARTIFACTS=$(SOAK_DIR) \
		E2E_NO_SHARED_KCP=1 SOAK_SEED=$(SEED) SOAK_DURATION=$(DURATION) SOAK_WORKSPACES=$(WORKSPACES) SOAK_PARTITIONED=$(PARTITIONED) \
		go test -tags 'e2e soak' -count=1 -timeout $(SOAK_TIMEOUT) -run '^TestSoak$$' -v ./test/e2e/ 2>&1 | tee $(SOAK_DIR)/soak.log | grep -E '^(--- |PASS|FAIL|ok|panic)|_test.go'

# The short soak of `make test`: a fixed list of seeds (a deterministic
# schedule in CI), SOAK_SHORT_DURATION of operations each. Seeds 4 and 8
# deal the faults SIGTERM, SIGSTOP, SIGKILL and service kube-apiserver
# restart, kcp shard restart, SIGTERM first; seed 249, with the first agent
# as two partitions, a kcp shard restart and a shard move between the
# partitions: together every kind of fault.
SOAK_SEEDS             ?= 4 8
SOAK_PARTITIONED_SEEDS ?= 249
SOAK_SHORT_DURATION    ?= 90s
.PHONY: soak-short
soak-short: testbed build refschema ## The soak for each of SOAK_SEEDS (4 8) and, partitioned, SOAK_PARTITIONED_SEEDS (249), SOAK_SHORT_DURATION (90s) each.
	@set -e; for s in $(SOAK_SEEDS); do \
		echo "soak seed $$s, $(SOAK_SHORT_DURATION)"; \
		$(MAKE) --no-print-directory soak SEED=$$s DURATION=$(SOAK_SHORT_DURATION) SOAK_TIMEOUT=20m; \
	done; \
	for s in $(SOAK_PARTITIONED_SEEDS); do \
		echo "soak seed $$s, $(SOAK_SHORT_DURATION), partitioned"; \
		$(MAKE) --no-print-directory soak SEED=$$s DURATION=$(SOAK_SHORT_DURATION) PARTITIONED=1 SOAK_TIMEOUT=20m; \
	done

# The benchmark (docs/performance.md). SCENARIO (default, noisy, wide, partitions), W, N, P, COUNT,
# RELATED, UNRELATED, BASELINE_AGENT, CPU_PROFILE, KCP_CPU_PROFILE, MEMORY_SCAN, SCAN, NOISY_OBJECTS,
# QUIET_OBJECTS, WIDE_OBJECTS, EVENT_LEVEL, SYNC_WORKERS and PATROL_INTERVAL come from the environment or the
# make command line; BENCH_ARGS passes extra flags (`$(BIN_DIR)/bench -h` lists them).
.PHONY: bench
bench: testbed build ## Benchmark the agent on the test bed (W=10 N=2000 P=8; BASELINE_AGENT=/abs/path compares).
	CGO_ENABLED=0 go build -o $(BIN_DIR)/bench ./test/bench
	$(TESTBED_ENV) AGENT_BIN=$(CURDIR)/$(BIN_DIR)/api-syncagent ARTIFACTS=$(ARTIFACTS) \
		$(BIN_DIR)/bench $(BENCH_ARGS)

.PHONY: golden-schemas
golden-schemas: ## Regenerate internal/discovery's golden schemas of built-in types from the test bed's kube-apiserver (kcp's crdpuller).
	$(MAKE) --no-print-directory test-e2e E2E_RUN=TestBuiltinSchemasMatchReference UPDATE_GOLDEN=$(CURDIR)/internal/discovery/testdata/reference

.PHONY: codegen
codegen: ## Regenerate deepcopy code and CRDs (and the Helm chart's copy of the CRDs).
	hack/codegen.sh
	$(MAKE) --no-print-directory chart-crds

.PHONY: docs
docs: ## Regenerate docs/api-reference.md from the PublishedResource CRD (make verify fails when it is stale).
	go run ./hack/apidocs deploy/crd/syncagent.kcp.io_publishedresources.yaml docs/api-reference.md

.PHONY: verify
verify: ## Fail when generated files are stale, code is unformatted or go vet complains.
	hack/verify.sh

.PHONY: lint
lint: ## Run golangci-lint (built from the Go module proxy, config in .golangci.yml).
	$$($(BUILD_TOOL) hack/tools/golangci-lint github.com/golangci/golangci-lint/v2 github.com/golangci/golangci-lint/v2/cmd/golangci-lint golangci-lint tools) run ./...

# The Helm chart (deploy/charts/api-syncagent). Its unit tests (test/chart)
# run with test-unit and fail when the CRD copy or the README are stale.
CHART_DIR        := deploy/charts/api-syncagent
CONTAINER_ENGINE ?= docker
IMAGE            ?= ghcr.io/kcp-syncagent/api-syncagent:$(VERSION)

.PHONY: chart-crds
chart-crds: ## Copy deploy/crd/*.yaml into the chart (its crds.yaml template adds the crds.enabled gate and the keep annotation).
	rm -f $(CHART_DIR)/crd/*.yaml
	cp deploy/crd/*.yaml $(CHART_DIR)/crd/

.PHONY: chart-readme
chart-readme: ## Regenerate the values table of the chart's README from the comments in values.yaml.
	UPDATE_README=true go test -count=1 -run TestREADME ./test/chart/

# The image (hack/image): built from the static binaries with
# go-containerregistry, no container engine. $(IMAGE_DIR)/oci is an OCI
# layout of the multi-architecture index; $(IMAGE_DIR)/api-syncagent-<arch>.tar
# loads with `docker load -i` or `kind load image-archive`; $(IMAGE_DIR)/digest
# names the index built, and after image-push $(IMAGE_DIR)/pushed names the
# index pushed as <repository>@<digest> (what the release signs).
IMAGE_DIR   ?= $(BIN_DIR)/image
IMAGE_ARCHS ?= amd64 arm64
IMAGE_TOOL   = go -C hack/image run .

.PHONY: image
image: ## Build the agent's OCI image (linux/amd64 and linux/arm64) into _build/image without a container engine, tagged $(IMAGE).
	@set -e; for a in $(IMAGE_ARCHS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$a go build -trimpath -ldflags '$(LDFLAGS) -s -w' -o $(IMAGE_DIR)/bin/api-syncagent-linux-$$a ./cmd/api-syncagent; \
	done
	$(IMAGE_TOOL) build -out $(abspath $(IMAGE_DIR)) -image $(IMAGE) -version $(VERSION) -revision $(REVISION) -created $(CREATED) \
		$(foreach a,$(IMAGE_ARCHS),-binary $(a)=$(abspath $(IMAGE_DIR))/bin/api-syncagent-linux-$(a)) | tee $(IMAGE_DIR)/digest

.PHONY: image-push
image-push: image ## Push the image to IMAGE=registry/name:tag (credentials of ~/.docker/config.json: make registry-login, docker login or crane auth login); writes <repository>@<digest> to _build/image/pushed.
	rm -f $(IMAGE_DIR)/pushed
	$(IMAGE_TOOL) push -layout $(abspath $(IMAGE_DIR))/oci -image $(IMAGE) -digest-file $(abspath $(IMAGE_DIR))/pushed

.PHONY: image-test
image-test: ## Build the image twice (one digest, or the build is not reproducible) and check its platforms, user, entrypoint, labels and files.
	$(MAKE) --no-print-directory image IMAGE_DIR=$(BIN_DIR)/image-check-1 >/dev/null
	$(MAKE) --no-print-directory image IMAGE_DIR=$(BIN_DIR)/image-check-2 >/dev/null
	@cmp $(BIN_DIR)/image-check-1/digest $(BIN_DIR)/image-check-2/digest || { echo "two image builds of one commit gave different digests" >&2; exit 1; }
	IMAGE_LAYOUT=$(CURDIR)/$(BIN_DIR)/image-check-1/oci IMAGE_VERSION=$(VERSION) IMAGE_REVISION=$(REVISION) go -C hack/image test -count=1 -run '^TestBuiltImage$$' -v ./... | grep -E '^(--- |ok|FAIL|PASS)|_test.go'
	@echo "image: reproducible, $$(cat $(BIN_DIR)/image-check-1/digest)"

.PHONY: registry-login
registry-login: ## Store credentials for REGISTRY (user REGISTRY_USER, password on standard input) where image-push and chart-push read them.
	$(IMAGE_TOOL) login -registry $(REGISTRY) -username $(REGISTRY_USER)

# The chart as an OCI artifact: version VERSION without its v, appVersion
# VERSION (the image tag the release pushes); a VERSION that is no
# v<semver> (an untagged commit) gives 0.0.0-dev.<version>. chart-push
# writes <repository>@<digest> of the pushed chart, from helm's report, to
# $(CHART_OUT)/pushed (what the release signs). HELM_PUSH_FLAGS passes
# flags to helm push (--plain-http for the in-memory registry of
# make release-test).
CHART_REPOSITORY ?= oci://ghcr.io/kcp-syncagent/charts
CHART_VERSION    ?= $(or $(shell echo '$(VERSION)' | sed -n 's/^v\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*.*\)$$/\1/p'),0.0.0-dev.$(VERSION))
CHART_OUT        ?= $(BIN_DIR)/chart
HELM_PUSH_FLAGS  ?=
HELM = $$($(BUILD_TOOL) hack/tools/helm helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm helm tools)

.PHONY: chart-package
chart-package: ## Package the chart into _build/chart (version VERSION without its v, or 0.0.0-dev.VERSION; appVersion VERSION).
	rm -rf $(CHART_OUT) && mkdir -p $(CHART_OUT)
	$(HELM) package $(CHART_DIR) --version $(CHART_VERSION) --app-version $(VERSION) -d $(CHART_OUT)

.PHONY: chart-push
chart-push: chart-package ## Push the packaged chart to CHART_REPOSITORY (oci://ghcr.io/kcp-syncagent/charts); writes <repository>@<digest> to _build/chart/pushed.
	$(HELM) push $(HELM_PUSH_FLAGS) $(CHART_OUT)/api-syncagent-$(CHART_VERSION).tgz $(CHART_REPOSITORY) 2>&1 | tee $(CHART_OUT)/push.log
	@pushed=$$(sed -n 's/^Pushed: //p' $(CHART_OUT)/push.log); digest=$$(sed -n 's/^Digest: //p' $(CHART_OUT)/push.log); \
	case "$$pushed $$digest" in \
		*/api-syncagent:$(CHART_VERSION)\ sha256:*) echo "$${pushed%:$(CHART_VERSION)}@$$digest" >$(CHART_OUT)/pushed ;; \
		*) echo "helm push reported no reference and digest of the chart (Pushed: $$pushed, Digest: $$digest)" >&2; exit 1 ;; \
	esac

.PHONY: image-docker
image-docker: ## The same image with a container engine (CONTAINER_ENGINE=docker or podman) from the Dockerfile, tagged $(IMAGE).
	@command -v $(CONTAINER_ENGINE) >/dev/null || { echo "make image-docker needs a container engine: install docker or podman (CONTAINER_ENGINE=podman), or use make image" >&2; exit 1; }
	$(CONTAINER_ENGINE) build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		--build-arg CREATED=$(CREATED_RFC3339) -t $(IMAGE) .

# The release's binaries (docs/releasing.md): api-syncagent for each of
# DIST_PLATFORMS, built like `make build`, in a reproducible
# api-syncagent_<version>_<os>_<arch>.tar.gz with LICENSE (GNU tar: TAR=gtar
# on macOS), and SHA256SUMS of the archives.
DIST_DIR       ?= $(BIN_DIR)/dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
TAR            ?= tar
SHA256SUM      ?= $(or $(shell command -v sha256sum 2>/dev/null),shasum -a 256)

.PHONY: dist
dist: ## Binaries for DIST_PLATFORMS (linux and darwin, amd64 and arm64) as tar.gz, with SHA256SUMS, into _build/dist.
	rm -rf $(DIST_DIR) && mkdir -p $(DIST_DIR)
	@set -e; for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=api-syncagent_$(VERSION)_$${os}_$${arch}; dir=$(DIST_DIR)/$$name; \
		echo "$$name.tar.gz"; \
		mkdir -p $$dir; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags '$(LDFLAGS)' -o $$dir/api-syncagent ./cmd/api-syncagent; \
		cp LICENSE $$dir/LICENSE; chmod 0755 $$dir/api-syncagent; chmod 0644 $$dir/LICENSE; \
		$(TAR) --format=gnu --sort=name --mtime=@$(CREATED) --owner=0 --group=0 --numeric-owner -C $$dir -cf - api-syncagent LICENSE | gzip -n -9 >$$dir.tar.gz; \
		rm -rf $$dir; \
	done
	cd $(DIST_DIR) && $(SHA256SUM) *.tar.gz >SHA256SUMS
	@cat $(DIST_DIR)/SHA256SUMS

# The agent's SBOM: CycloneDX JSON of the binary for linux/amd64 (the
# modules linked into it, the Go standard library, detected licenses as
# evidence), by cyclonedx-gomod pinned in hack/tools/cyclonedx-gomod;
# without serial number and timestamp, so one commit gives one SBOM. The
# release attests it on the image and attaches it to the GitHub release.
SBOM_FILE ?= $(BIN_DIR)/sbom/api-syncagent.cdx.json
CYCLONEDX_GOMOD = $$($(BUILD_TOOL) hack/tools/cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod cyclonedx-gomod tools)

.PHONY: sbom
sbom: ## The agent's SBOM (CycloneDX JSON, linux/amd64) into _build/sbom/api-syncagent.cdx.json (SBOM_FILE).
	mkdir -p $(dir $(SBOM_FILE))
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(CYCLONEDX_GOMOD) app -json -std -licenses -noserial -notimestamp \
		-main cmd/api-syncagent -output $(abspath $(SBOM_FILE)) .
	@echo "SBOM: $(SBOM_FILE)"

.PHONY: cosign
cosign: ## Build cosign (pinned in hack/tools/cosign) from the Go module proxy and print its path: the release signs with it, users verify with it.
	@$(BUILD_TOOL) hack/tools/cosign github.com/sigstore/cosign/v2 github.com/sigstore/cosign/v2/cmd/cosign cosign tools

# The release workflow's steps that need no GitHub credentials, run as the
# workflow runs them (hack/image TestReleaseSteps): the image and the chart
# pushed to an in-memory registry, the digests they report, the SBOM,
# cosign's installation and the binaries; and the SBOM of a local build.
.PHONY: release-test
release-test: ## The SBOM of a local build, and the release workflow's steps that need no GitHub credentials against an in-memory registry.
	$(MAKE) --no-print-directory sbom SBOM_FILE=$(BIN_DIR)/release-test/sbom.cdx.json >/dev/null
	SBOM_FILE=$(abspath $(BIN_DIR)/release-test/sbom.cdx.json) RELEASE_STEPS=1 go -C hack/image test -count=1 -timeout 45m \
		-run '^(TestSBOM|TestReleaseSteps)$$' -v ./... | grep -E '^(\s*--- |ok|FAIL|PASS)|_test.go'

.PHONY: demo
demo: testbed build ## Start kcp and a service cluster, wire the agent and run it in the foreground.
	$(TESTBED_ENV) AGENT_BIN=$(CURDIR)/$(BIN_DIR)/api-syncagent go run ./hack/demo

.PHONY: clean
clean: ## Remove build output and artifacts (the cached test bed stays; `make clean-cache` removes it).
	rm -rf $(BIN_DIR) $(ARTIFACTS) _demo

.PHONY: clean-cache
clean-cache: ## Remove the cached test bed and tools.
	rm -rf $(CACHE_DIR)

.PHONY: help
help: ## Show this help.
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
