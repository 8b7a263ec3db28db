# Switchboard's build. `make run` and `make test` are all a new machine needs (see README.md).

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Every go command of the build and of the tests compiles as the shipped manager is built:
# static, without the build machine's paths (GO_BUILD_MANAGER, testenv.Build). The Go build
# cache keys each compiled package by these settings, so with one setting everywhere it holds
# one copy of each: go vet, go test, the managers the tests build and kube-apiserver share
# Kubernetes's libraries. With cgo on for some and -trimpath for others, an empty cache compiled
# them twice.
export CGO_ENABLED = 0
export GOFLAGS += -trimpath

# Where built tools go. Nothing here is committed.
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
CONTROLLER_TOOLS_VERSION ?= v0.23.0

# The control-plane binaries, built from Go modules (setup-envtest cannot download here): the
# default minor by hack/tools/kube into bin/k8s, another supported minor (K8S_VERSION=1.34,
# 1.35, 1.36) by hack/tools/kube-<minor> into bin/k8s-<minor>. An already-set KUBEBUILDER_ASSETS
# wins.
K8S_DEFAULT_VERSION := 1.37
K8S_VERSION ?= $(K8S_DEFAULT_VERSION)
K8S_SUFFIX = $(if $(filter-out $(K8S_DEFAULT_VERSION),$(K8S_VERSION)),-$(K8S_VERSION))
K8S_MODULE = hack/tools/kube$(K8S_SUFFIX)
ifeq ($(wildcard $(K8S_MODULE)/go.mod),)
$(error K8S_VERSION=$(K8S_VERSION): no $(K8S_MODULE)/go.mod; the supported minors are $(K8S_DEFAULT_VERSION) $(patsubst hack/tools/kube-%,%,$(wildcard hack/tools/kube-*)))
endif
K8S_BIN ?= $(LOCALBIN)/k8s$(K8S_SUFFIX)
# The binaries report the version of the k8s.io/kubernetes module they are built from, as a
# release build of Kubernetes stamps it (without it, /version says v0.0.0-master, and Helm and
# version checks cannot read it).
K8S_GIT_VERSION = $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' $(K8S_MODULE)/go.mod | head -1)
K8S_LDFLAGS = -X k8s.io/component-base/version.gitVersion=$(K8S_GIT_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_GIT_VERSION:v%=%))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_GIT_VERSION:v%=%))) \
	-X k8s.io/component-base/version.gitTreeState=clean
KUBEBUILDER_ASSETS ?= $(K8S_BIN)
export KUBEBUILDER_ASSETS

# What the manager says it is (`manager --version`, its first log line, switchboard_build_info),
# from git: GOFLAGS may hold -buildvcs=false, and a Docker build has no .git. VERSION is `git
# describe` of the newest v* tag, or a Go-style pseudo-version v0.0.0-<commit time>-<commit>
# without one; either ends in -dirty when tracked files have uncommitted changes. BUILD_DATE is
# the commit's time, not the clock's, so that two builds of one commit are the same bytes (and
# the same image digest). Each may be given: `make image VERSION=v1.2.3`.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	{ t=$$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S 2>/dev/null) && \
	  c=$$(git describe --always --dirty --abbrev=12 2>/dev/null) && echo "v0.0.0-$$t-$$c"; } || echo v0.0.0-unknown)
endif
ifeq ($(origin REVISION),undefined)
REVISION := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
endif
ifeq ($(origin BUILD_DATE),undefined)
BUILD_DATE := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
endif
VERSION_PKG = github.com/example/switchboard/internal/version
VERSION_LDFLAGS = -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).revision=$(REVISION) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)

# The manager binary, built the same way here, in `make image` and in the Dockerfile.
GO_BUILD_MANAGER = CGO_ENABLED=0 go build -trimpath -ldflags="-s -w $(VERSION_LDFLAGS)" -o
MANAGER ?= $(LOCALBIN)/manager

# Flags passed to the manager by `make run`, for example ARGS='--controllers=myapp'.
ARGS ?=

# The local cluster of `make run` (cmd/localcluster): kwok plays the kubelet of fake Nodes,
# with the Stages of the kwok module it is built from, and emulates their Pods' resource usage
# (KWOK_METRICS); metrics-server scrapes it and serves metrics.k8s.io.
KWOK ?= $(LOCALBIN)/kwok
KWOK_STAGES ?= $(LOCALBIN)/kwok-stages.yaml
KWOK_METRICS ?= $(LOCALBIN)/kwok-metrics.yaml
METRICS_SERVER ?= $(LOCALBIN)/metrics-server
LOCALCLUSTER ?= $(LOCALBIN)/localcluster
LOCALCLUSTER_DIR ?= $(LOCALBIN)/cluster
LOCALCLUSTER_BINS = $(K8S_BIN)/etcd $(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler $(KWOK) $(KWOK_STAGES) $(KWOK_METRICS) $(METRICS_SERVER)

# golangci-lint, at the version hack/tools/lint pins; .golangci.yml is its configuration.
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint

.PHONY: all
all: build

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods from the API types (apis/vpa is read as unstructured and needs none).
	$(CONTROLLER_GEN) object paths=./apis/v1alpha1/...

# One kustomize component per controller in config/components/NAME: its ClusterRole comes from
# the markers of controllers/NAME alone, and its crd/ holds copies of the CRDs it serves
# (kustomize refuses files outside a kustomization's directory). config/rbac/role.yaml is the
# union, for running the whole manager outside kustomize. The Helm chart carries copies of each
# component's crd/ and rbac/ in files/components (Helm reads no file outside the chart); test/helm
# keeps the chart's objects equal to the kustomize builds'. config/crd/vpa holds the Vertical Pod
# Autoscaler's two CRDs, generated from apis/vpa (its histograms' totalWeight is a float, hence
# allowDangerousTypes), for clusters without the VPA's own; the chart carries them in files/crd/vpa.
COMPONENTS = $(notdir $(wildcard config/components/*))
CHART = charts/switchboard

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC (per controller and the union) from markers into config/.
	$(CONTROLLER_GEN) crd paths=./apis/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./apis/vpa/... output:crd:artifacts:config=config/crd/vpa
	$(CONTROLLER_GEN) rbac:roleName=switchboard-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	for c in $(COMPONENTS); do \
		$(CONTROLLER_GEN) rbac:roleName=switchboard-$$c paths=./controllers/$$c/... output:rbac:artifacts:config=config/components/$$c/rbac; \
	done
	for f in config/components/*/crd/*.yaml; do cp config/crd/bases/$$(basename $$f) $$f; done
	rm -rf $(CHART)/files/components
	for c in $(COMPONENTS); do \
		mkdir -p $(CHART)/files/components/$$c && cp -R config/components/$$c/rbac $(CHART)/files/components/$$c/; \
		if [ -d config/components/$$c/crd ]; then cp -R config/components/$$c/crd $(CHART)/files/components/$$c/; fi; \
	done
	rm -rf $(CHART)/files/crd && mkdir -p $(CHART)/files/crd/vpa && cp config/crd/vpa/*_*.yaml $(CHART)/files/crd/vpa/
	mkdir -p $(CHART)/files/alerts $(CHART)/files/grafana
	cp config/alerts/alerts.yaml $(CHART)/files/alerts/
	cp config/grafana/switchboard.json $(CHART)/files/grafana/

.PHONY: docs
docs: ## Generate the reference pages of docs/reference (flags, annotations, API) and the generated blocks of other pages (RBAC tables, Reloader forms) from the code.
	go run ./hack/docgen -out docs/reference

# The picture of the Grafana dashboard in docs/operations/dashboards.md, drawn from real data
# without Grafana: hack/dashboard records two replicas at work on a local cluster (the families
# the dashboard reads, scraped every 10 s) into DASHBOARD_CAPTURE, and test/monitoring/picture
# stores the scrapes in a Prometheus TSDB and plots Prometheus's answers to each panel's queries.
# A test of test/monitoring fails when the picture is not the one the capture and the dashboard
# give: after changing the dashboard, `make dashboard-picture` (and `make dashboard-capture`
# first when it reads a metric the capture lacks).
DASHBOARD_CAPTURE ?= test/monitoring/testdata/scrapes.txt.gz

.PHONY: dashboard-capture
dashboard-capture: build $(LOCALCLUSTER_BINS) ## Record two replicas at work on a local cluster for the dashboard's picture (about 15 minutes).
	@mkdir -p $(LOCALBIN)/dashboard
	go run ./hack/dashboard -manager=$(MANAGER) -out=$(LOCALBIN)/dashboard/scrapes.txt -families=$$(cd test/monitoring && go run ./picture -families)
	gzip -9 -n -c $(LOCALBIN)/dashboard/scrapes.txt > $(DASHBOARD_CAPTURE)

.PHONY: dashboard-picture
dashboard-picture: ## Draw docs/operations/dashboard.png from the dashboard and the capture of `make dashboard-capture`.
	cd test/monitoring && go run ./picture -capture=$(abspath $(DASHBOARD_CAPTURE)) -out=../../docs/operations/dashboard.png

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

# Go modules of their own whose tests `make test` runs too: test/vpacompare compares the
# verticalscaler's recommender with the Vertical Pod Autoscaler's model code; hack/release builds
# the image with go-containerregistry (its two `make image` builds in clones run in `make
# test-e2e`); test/helm renders the chart with the Helm SDK and compares it with the kustomize
# builds; test/reliability holds the chaos and soak harnesses (toxiproxy, gonum/plot), whose fast
# tests are all `make test` runs (the chaos run and the soak need a local cluster and skip
# themselves); test/monitoring checks the dashboard and the alerts with Prometheus's own PromQL
# parser and engine, and draws the dashboard's picture. The manager's go.mod should carry none
# of these. go fetches their modules from the module proxy on the first run. Where they share a
# dependency with the manager (and hack/tools/kube with both), their go.mod files require the
# same version, so that the Go build cache compiles it once: `make test` on an empty cache
# compiles client-go and the rest of Kubernetes's libraries once for kube-apiserver, and reuses
# them everywhere but in test/vpacompare and test/monitoring, whose dependencies need newer ones.
TEST_MODULES ?= test/vpacompare hack/release test/helm test/reliability test/monitoring test/reloadersuite test/vpasuite

# The envtest suites mostly wait on the API server and on their managers (the configmapwatcher's
# used about half a core of 2), so the subtests that may run in parallel (one per workload
# kind) run four at a time rather than GOMAXPROCS at a time. More packages at a time (-p) does not
# pay: with -p 4 on 2 cores the controllers package took three times as long.
TEST_PARALLELISM ?= -parallel 4

.PHONY: test
test: ## Run every test: unit, envtest suites, generated-files check, the test modules.
	@# controller-gen and the control plane side by side (their modules share nothing, and one
	@# downloads while the other compiles); go vet after them, so that it reuses the Kubernetes
	@# libraries kube-apiserver compiled rather than compiling them a second time beside it.
	$(MAKE) --no-print-directory -j2 --output-sync=target $(CONTROLLER_GEN) envtest-assets
	$(MAKE) --no-print-directory vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	@# The envtest suites mostly wait on their API servers; the test modules mostly compile.
	$(MAKE) --no-print-directory -j2 --output-sync=line test-packages test-modules

# The manager module's packages, for `make test`.
.PHONY: test-packages
test-packages:
	CONTROLLER_GEN=$(CONTROLLER_GEN) go test ./... -count=1 -timeout 30m $(TEST_PARALLELISM)

# The test modules, for `make test`.
.PHONY: test-modules
test-modules:
	for m in $(TEST_MODULES); do (cd $$m && go vet ./... && go test ./... -count=1 -timeout 20m) || exit 1; done

# depguard cannot say "a controller never imports another controller", so .golangci.yml has
# two rules per controller package (every directory under controllers/ but internal/) and each
# denies the others: `lint` first checks that no controller was added without its rules.
CONTROLLER_PKGS = $(filter-out internal,$(notdir $(patsubst %/,%,$(wildcard controllers/*/))))

# Go modules of their own that `make lint` checks too, with the same configuration.
LINT_MODULES ?= hack/release test/helm test/reliability test/monitoring test/reloadersuite test/vpasuite

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml): vet, staticcheck, revive, ..., and who may import whom.
	@for c in $(CONTROLLER_PKGS); do \
		grep -Eq "^ +controller-$$c:" .golangci.yml && grep -Eq "^ +controller-$$c-tests:" .golangci.yml || \
		{ echo ".golangci.yml: controllers/$$c has no depguard rules controller-$$c and controller-$$c-tests"; exit 1; }; \
	done
	@n=$(words $(CONTROLLER_PKGS)); for c in $(CONTROLLER_PKGS); do \
		[ "$$(grep -Ec "pkg: github.com/example/switchboard/controllers/$$c\$$" .golangci.yml)" -eq $$((2 * (n - 1))) ] || \
		{ echo ".golangci.yml: the depguard rules of every other controller must deny controllers/$$c"; exit 1; }; \
	done
	@# Without --allow-parallel-runners a lint of another checkout on the same machine (a worktree, a
	@# CI clone) makes this one fail at once with "parallel golangci-lint is running".
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...
	for m in $(LINT_MODULES); do (cd $$m && $(GOLANGCI_LINT) run --allow-parallel-runners --config=$(CURDIR)/.golangci.yml ./...) || exit 1; done

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and apply the fixes it can make itself.
	$(GOLANGCI_LINT) run --fix ./...

# E2E_RUN selects end-to-end tests by name, as go test -run does: E2E_RUN=Failover runs the two
# failover tests alone.
E2E_RUN ?= .

# The binaries of the local cluster, for the tests that start one.
LOCALCLUSTER_ENV = KWOK=$(KWOK) KWOK_STAGES=$(KWOK_STAGES) KWOK_METRICS=$(KWOK_METRICS) METRICS_SERVER=$(METRICS_SERVER)

# What ships is what is tested: the end-to-end tests run the manager binary taken out of the
# image's layer for this machine's platform (IMAGE_LOAD_PLATFORM), with the image's CA bundle
# for its https webhook, and apply dist/install.yaml, which pins that image by digest.
E2E_MANAGER ?= $(LOCALBIN)/e2e/manager
E2E_CA_BUNDLE ?= $(LOCALBIN)/e2e/ca-certificates.crt
# The installer the e2e tests apply: the one for the minor under test.
E2E_INSTALLER = $(if $(filter 1.34 1.35,$(K8S_VERSION)),install-before-1.36.yaml,install.yaml)

# Packages whose tests include some that run only here (SWITCHBOARD_E2E=1), because they need
# kube-controller-manager, which `make test` does not build: the user roles' aggregation and the
# install and deploy targets. hack/release's two `make image` builds in clones run here too.
E2E_ENVTEST_PKGS ?= ./config/overlays/ ./hack/build/

# The Kubernetes minors the project supports, each built from its own module: the default and
# every hack/tools/kube-<minor>.
K8S_VERSIONS = $(patsubst hack/tools/kube-%,%,$(wildcard hack/tools/kube-*)) $(K8S_DEFAULT_VERSION)

# Where test-e2e-matrix keeps each minor's record (MINOR.json, MINOR.result); records of minors
# left out of K8S_VERSIONS stay, so that a run of some minors updates their rows only.
MATRIX_OUT ?= $(LOCALBIN)/matrix

.PHONY: test-e2e-matrix
test-e2e-matrix: ## Run `make test-e2e` on each supported Kubernetes minor (K8S_VERSIONS), each on a control plane of its own, name those it failed on, and write the table of minors in docs/operations/install.md.
	@mkdir -p $(MATRIX_OUT); failed=; for v in $(K8S_VERSIONS); do \
		echo "== test-e2e on Kubernetes $$v"; \
		rm -f $(MATRIX_OUT)/$$v.json $(MATRIX_OUT)/$$v.result; \
		if env -u KUBEBUILDER_ASSETS SWITCHBOARD_E2E_MATRIX_OUT=$(MATRIX_OUT) $(MAKE) --no-print-directory test-e2e K8S_VERSION=$$v; then \
			echo passed > $(MATRIX_OUT)/$$v.result; \
		else echo failed > $(MATRIX_OUT)/$$v.result; failed="$$failed $$v"; fi; \
	done; \
	go run ./hack/docgen -matrix=$(MATRIX_OUT) && echo "Wrote the table of minors in docs/operations/install.md from $(MATRIX_OUT)"; \
	if [ -n "$$failed" ]; then echo "test-e2e failed on Kubernetes$$failed"; exit 1; fi

.PHONY: test-e2e
test-e2e: build-installer $(LOCALCLUSTER_BINS) ## Run the end-to-end tests (E2E_RUN=regexp: some of them): the image's manager as a process, deployed from config/ and dist/install.yaml, on a local cluster; then the short chaos run.
	@mkdir -p $(dir $(E2E_MANAGER))
	$(RELEASE) extract --layout=$(IMAGE_LAYOUT) --platform=$(IMAGE_LOAD_PLATFORM) --file=manager --out=$(E2E_MANAGER)
	$(RELEASE) extract --layout=$(IMAGE_LAYOUT) --platform=$(IMAGE_LOAD_PLATFORM) --file=etc/ssl/certs/ca-certificates.crt --out=$(E2E_CA_BUNDLE)
	@# Each test starts a cluster of its own and mostly waits on it (run one at a time, they
	@# left a core idle), so two lanes run side by side; each lane's output is printed whole
	@# when it ends. A third lane (chaos on its own) saved another minute but kept both cores
	@# so busy that a failover took 5.8 s against its 6 s bound (docs/development.md).
	$(MAKE) --no-print-directory -j2 --output-sync=target test-e2e-manager test-e2e-others
	$(if $(filter .,$(E2E_RUN)),$(MAKE) --no-print-directory test-e2e-alone)

# E2E_PARALLEL is how many of test/e2e's tests run at once, each on its own cluster
# (docs/development.md has the times).
E2E_PARALLEL ?= 3

# E2E_ALONE names the tests whose bounds are a few seconds of failover: run beside the others,
# a killed replica's watches outlived the takeover, so they run after the lanes, on a quiet
# machine. E2E_RUN=regexp runs whatever it selects in the first lane instead.
E2E_ALONE = Failover$$

# test-e2e's first lane: the manager's end-to-end tests (test/e2e).
.PHONY: test-e2e-manager
test-e2e-manager:
	SWITCHBOARD_E2E=1 $(LOCALCLUSTER_ENV) \
		SWITCHBOARD_E2E_MANAGER=$(E2E_MANAGER) SWITCHBOARD_E2E_CA_BUNDLE=$(E2E_CA_BUNDLE) SWITCHBOARD_E2E_INSTALLER=$(DIST)/$(E2E_INSTALLER) \
		SWITCHBOARD_E2E_IMAGE_DIGEST=$$($(RELEASE) digest --layout=$(IMAGE_LAYOUT)) SWITCHBOARD_E2E_VERSION=$(VERSION) \
		go test ./test/e2e/ -run '$(E2E_RUN)' $(if $(filter .,$(E2E_RUN)),-skip '$(E2E_ALONE)') -count=1 -v -parallel $(E2E_PARALLEL) -timeout 20m

# test-e2e's last step: E2E_ALONE, one test at a time, nothing beside them.
.PHONY: test-e2e-alone
test-e2e-alone: override E2E_RUN = $(E2E_ALONE)
test-e2e-alone: override E2E_PARALLEL = 1
test-e2e-alone: test-e2e-manager

# test-e2e's second lane: the packages whose e2e tests need more than envtest, the chart on a
# local cluster, and the short chaos run.
.PHONY: test-e2e-others
test-e2e-others:
	SWITCHBOARD_E2E=1 go test $(E2E_ENVTEST_PKGS) -run '$(E2E_RUN)' -count=1 -timeout 20m
	cd hack/release && SWITCHBOARD_E2E=1 go test . -run '$(E2E_RUN)' -count=1 -timeout 20m
	cd test/helm && SWITCHBOARD_E2E=1 $(LOCALCLUSTER_ENV) SWITCHBOARD_E2E_MANAGER=$(abspath $(E2E_MANAGER)) \
		go test . -run '$(if $(filter .,$(E2E_RUN)),^TestE2E,$(E2E_RUN))' -count=1 -v -timeout 20m
	cd test/reliability && SWITCHBOARD_CHAOS=short $(LOCALCLUSTER_ENV) go test ./chaos/ -run '$(E2E_RUN)' -count=1 -v -timeout 20m

##@ Compatibility

# Reloader's own end-to-end suite (test/e2e of a stakater/Reloader checkout) against the
# configmapwatcher, on the local cluster of `make run` (test/reloadersuite: a helm stand-in
# installs charts/switchboard with the suite's Reloader values, and runs the manager beside the
# cluster with the chart's arguments and ServiceAccount). RELOADER_SUBJECT=reloader runs Reloader
# itself, built from the checkout, the same way: the baseline. Not in CI: the suites build only
# from a fetched checkout (docs/migrating/from-reloader.md says how, and the result table).
RELOADER_DIR ?=
RELOADER_SUBJECT ?= switchboard
RELOADER_SUITES ?= core,annotations,flags,advanced,argo,csi
# Where the module proxy does not serve the github.com/openshift/api version Reloader's go.mod
# pins: a directory holding that version, which the suites are built against (Reloader's go.mod
# is left as it is).
OPENSHIFT_API_DIR ?=
# results.json of an earlier run (the baseline's) to compare with; Ginkgo's focus and label filter.
RELOADER_BASELINE ?=
# Further CustomResourceDefinitions to install on the cluster before the suites.
RELOADER_CRDS ?=
# The Secrets Store CSI driver's CRDs (vendored, testdata/crds/secrets-store-csi-driver/README.md),
# with stand-ins for the driver and Vault, for the csi suite and the SecretProviderClass specs of
# the others (empty: none).
RELOADER_SECRETS_STORE_CSI ?= testdata/crds/secrets-store-csi-driver
# Argo Rollouts' Rollout CRD and a stand-in for its controller (a ReplicaSet per Rollout, its
# status from it), so that the argo suite and the ArgoRollout entries of the others run (false:
# the cluster serves no Rollouts).
RELOADER_ARGO_ROLLOUTS ?= true
RELOADER_FOCUS ?=
RELOADER_LABEL_FILTER ?=
RELOADER_OUT ?= $(LOCALBIN)/reloadersuite
# Flags appended to Switchboard's manager's, for looking into a run: RELOADER_MANAGER_ARGS='--zap-log-level=debug'.
RELOADER_MANAGER_ARGS ?=

.PHONY: test-reloader
test-reloader: build $(LOCALCLUSTER_BINS) ## Run Reloader's own e2e suite (RELOADER_DIR=checkout) against the configmapwatcher, or RELOADER_SUBJECT=reloader against Reloader; per-spec results in RELOADER_OUT.
	@[ -n "$(RELOADER_DIR)" ] || { echo "RELOADER_DIR=<a checkout of github.com/stakater/Reloader> is required"; exit 2; }
	cd test/reloadersuite && go build -o $(LOCALBIN)/reloadersuite-runner .
	$(LOCALBIN)/reloadersuite-runner run --reloader-dir=$(RELOADER_DIR) --subject=$(RELOADER_SUBJECT) --suites=$(RELOADER_SUITES) \
		--openshift-api-dir=$(OPENSHIFT_API_DIR) --baseline=$(RELOADER_BASELINE) --focus='$(RELOADER_FOCUS)' --label-filter='$(RELOADER_LABEL_FILTER)' --crds=$(RELOADER_CRDS) --argo-rollouts=$(RELOADER_ARGO_ROLLOUTS) --secrets-store-csi=$(RELOADER_SECRETS_STORE_CSI) \
		$(foreach a,$(RELOADER_MANAGER_ARGS),--manager-args=$(a)) \
		--out=$(RELOADER_OUT) --manager=$(MANAGER) --k8s-bin-dir=$(K8S_BIN) --kwok=$(KWOK) --kwok-stages=$(KWOK_STAGES) \
		--kwok-metrics=$(KWOK_METRICS) --metrics-server=$(METRICS_SERVER)

# The Vertical Pod Autoscaler's own end-to-end suite (the v1 specs of test/e2e in the
# vertical-pod-autoscaler directory of a kubernetes/autoscaler checkout, vertical-pod-autoscaler-1.7.0
# or later) against the verticalscaler and verticalpodautoscaler controllers, on the local
# cluster of `make run` (test/vpasuite: the manager runs beside the cluster, started afresh for
# each suite with the VPA components that suite deploys). Not in CI: the suite builds only from a
# fetched checkout (docs/migrating/from-vpa.md says how, and the result table).
VPA_DIR ?=
VPA_SUITES ?= recommender,updater,admission-controller,actuation
VPA_FOCUS ?=
VPA_NODES ?= 4
# go.mod replaces for versions the checkout's test/go.mod pins and the module proxy does not
# serve (space-separated old=new); applied to a copy, never to the checkout.
VPA_REPLACES ?= go.opentelemetry.io/contrib/instrumentation/github.com/emicklei/go-restful/otelrestful@v0.68.0=go.opentelemetry.io/contrib/instrumentation/github.com/emicklei/go-restful/otelrestful@v0.67.0
# results.json of an earlier run to compare with.
VPA_BASELINE ?=
VPA_OUT ?= $(LOCALBIN)/vpasuite
# Flags appended to the manager's, for looking into a run: VPA_MANAGER_ARGS='--zap-log-level=debug'.
VPA_MANAGER_ARGS ?=

.PHONY: test-vpa
test-vpa: build $(LOCALCLUSTER_BINS) ## Run the VPA's own e2e suite (VPA_DIR=checkout/vertical-pod-autoscaler) against the verticalscaler; per-spec results in VPA_OUT.
	@[ -n "$(VPA_DIR)" ] || { echo "VPA_DIR=<the vertical-pod-autoscaler directory of a checkout of github.com/kubernetes/autoscaler> is required"; exit 2; }
	cd test/vpasuite && go build -o $(LOCALBIN)/vpasuite-runner .
	$(LOCALBIN)/vpasuite-runner run --vpa-dir=$(VPA_DIR) --suites=$(VPA_SUITES) --focus='$(VPA_FOCUS)' --nodes=$(VPA_NODES) --baseline=$(VPA_BASELINE) \
		$(foreach r,$(VPA_REPLACES),--replace=$(r)) $(foreach a,$(VPA_MANAGER_ARGS),--manager-args=$(a)) \
		--out=$(VPA_OUT) --manager=$(MANAGER) --k8s-bin-dir=$(K8S_BIN) --kwok=$(KWOK) --kwok-stages=$(KWOK_STAGES) \
		--kwok-metrics=$(KWOK_METRICS) --metrics-server=$(METRICS_SERVER)

##@ Reliability

# CHAOS_DIR keeps the chaos run's report and the managers' logs.
CHAOS_DIR ?= $(LOCALBIN)/chaos

.PHONY: test-chaos
test-chaos: $(LOCALCLUSTER_BINS) ## Run the full chaos run (about 15 minutes): three replicas under faults, kills, partitions and churn, with invariants checked; report and logs in CHAOS_DIR.
	@mkdir -p $(CHAOS_DIR)
	cd test/reliability && SWITCHBOARD_CHAOS=full SWITCHBOARD_CHAOS_DIR=$(abspath $(CHAOS_DIR)) $(LOCALCLUSTER_ENV) go test ./chaos/ -run TestChaos -count=1 -v -timeout 60m

# DURATION is how long `make soak` runs; SOAK_OUT where it writes its report, picture and
# samples.
DURATION ?= 1h
SOAK_OUT ?= $(LOCALBIN)/soak

.PHONY: soak
soak: $(LOCALCLUSTER_BINS) ## Run one replica for DURATION (default 1h) under steady churn, sampling memory, goroutines, watches, queues and requests; report and picture in SOAK_OUT.
	cd test/reliability && SWITCHBOARD_SOAK=1 SWITCHBOARD_SOAK_DURATION=$(DURATION) SWITCHBOARD_SOAK_OUT=$(abspath $(SOAK_OUT)) $(LOCALCLUSTER_ENV) \
		go test ./soak/ -run TestSoak -count=1 -v -timeout 0

##@ Benchmarks

# Every benchmark is a Go benchmark; `bench` repeats each BENCH_COUNT times and
# hack/benchreport reports the medians against the issues' targets in bench/report.md and
# bench/report.json. Heavy scenarios read their sizes from SWITCHBOARD_BENCH_* variables.
# The scale benchmarks (SCALE_PKGS) take hours at full size: `bench-scale` runs them, once;
# `bench` leaves them out and `bench-smoke` runs them small like every other.
BENCH_COUNT ?= 3
SCALE_PKGS ?= ./test/scale/
BENCH_PKGS ?= $$(go list ./... | grep -v /test/scale$$)
# Go modules of their own with benchmarks: hack/release's BenchmarkImage (the image's size against
# the binary's, and a warm `make image`, in a clone of HEAD).
BENCH_MODULES ?= hack/release

.PHONY: bench
bench: envtest-assets ## Run every benchmark at full size and write bench/report.md and bench/report.json.
	@mkdir -p bench/tmp
	{ go test -run '^$$' -bench . -count=$(BENCH_COUNT) -timeout 120m $(BENCH_PKGS); \
	  for m in $(BENCH_MODULES); do (cd $$m && go test -run '^$$' -bench . -count=$(BENCH_COUNT) -timeout 30m ./...); done; } \
		2>&1 | tee bench/tmp/raw.txt | grep -v '^\s' || true
	go run ./hack/benchreport -out bench < bench/tmp/raw.txt

# The configmapwatcher's benchmarks alone, at full size, into bench/configmapwatcher/report.md:
# memory and latency at 2,000 and 10,000 ConfigMaps and Secrets, --auto-reload-all over 500
# workloads, and --max-rollouts-per-minute (about 45 minutes with BENCH_COUNT=3 on 2 cores).
.PHONY: bench-configmapwatcher
bench-configmapwatcher: envtest-assets ## Run the configmapwatcher's benchmarks at full size and write bench/configmapwatcher/report.md.
	@mkdir -p bench/tmp
	go test ./controllers/configmapwatcher/ -run '^$$' -bench 'MemoryAndLatency|AutoReloadAll|RateLimit' -benchtime=1x -count=$(BENCH_COUNT) -timeout 180m 2>&1 | tee bench/tmp/configmapwatcher-raw.txt | grep -v '^\s' || true
	go run ./hack/benchreport -out bench/configmapwatcher < bench/tmp/configmapwatcher-raw.txt

# `go test -bench` runs one package's benchmarks at a time, and most smoke runs wait on an API
# server or a rate limiter rather than compute, so bench-smoke runs two such `go test`s side by
# side: BENCH_SMOKE_FIRST, and every other package (then BENCH_MODULES). The figures of a smoke
# run only show that each benchmark still runs; `bench` measures.
BENCH_SMOKE_FIRST ?= $(SCALE_PKGS) ./controllers/ ./controllers/internal/...
BENCH_SMOKE_ENV = SWITCHBOARD_BENCH_SMOKE=1 SWITCHBOARD_BENCH_MYAPPS=20 SWITCHBOARD_BENCH_WRITES=20 SWITCHBOARD_BENCH_STEADY=3 \
	SWITCHBOARD_BENCH_AFTER=1 SWITCHBOARD_BENCH_MALFORMED=40 SWITCHBOARD_BENCH_WORKLOADS=5 SWITCHBOARD_BENCH_PODS=100
BENCH_SMOKE_GO_TEST = $(BENCH_SMOKE_ENV) go test -run '^$$' -bench . -benchtime=1x -count=1 -timeout 30m

.PHONY: bench-smoke
bench-smoke: envtest-assets ## Run every benchmark once at a small size, so that they cannot rot (CI runs this).
	@mkdir -p bench/tmp
	@first="$$(go list $(BENCH_SMOKE_FIRST))"; rest="$$(go list ./... | grep -vxF "$$first")"; \
	$(BENCH_SMOKE_GO_TEST) $$first > bench/tmp/smoke-first.txt 2>&1 & first_pid=$$!; \
	( $(BENCH_SMOKE_GO_TEST) $$rest && \
	  for m in $(BENCH_MODULES); do (cd $$m && $(BENCH_SMOKE_GO_TEST) ./...) || exit 1; done ) > bench/tmp/smoke-rest.txt 2>&1 && rest_rc=0 || rest_rc=$$?; \
	wait $$first_pid && first_rc=0 || first_rc=$$?; \
	[ $$first_rc -eq 0 ] || { tail -50 bench/tmp/smoke-first.txt; echo "bench-smoke: $(BENCH_SMOKE_FIRST) failed"; }; \
	[ $$rest_rc -eq 0 ] || { tail -50 bench/tmp/smoke-rest.txt; echo "bench-smoke: the other packages failed"; }; \
	[ $$first_rc -eq 0 ] && [ $$rest_rc -eq 0 ]
	cat bench/tmp/smoke-first.txt bench/tmp/smoke-rest.txt > bench/tmp/smoke-raw.txt
	go run ./hack/benchreport -out bench/tmp/smoke < bench/tmp/smoke-raw.txt

# SCALE_ENV sets the sizes, for example SCALE_ENV='SWITCHBOARD_BENCH_SCALE_MYAPPS=1000,30000';
# SCALE_RUN picks benchmarks by name, as -bench does. The load average before and after each
# scenario is in its figures (load1-start, load1-end): run it on a quiet machine.
SCALE_ENV ?=
SCALE_RUN ?= .

.PHONY: bench-scale
bench-scale: envtest-assets ## Run the scale benchmarks once at full size (1,000 to 30,000 objects per controller, each on a fresh control plane; about 3.5 hours) and write bench/scale/report.md.
	@mkdir -p bench/scale bench/tmp
	@uptime
	$(SCALE_ENV) go test -run '^$$' -bench '$(SCALE_RUN)' -benchtime=1x -count=1 -timeout 600m -v $(SCALE_PKGS) 2>&1 | tee bench/tmp/scale-raw.txt | grep -E '^(Benchmark|---|ok|FAIL|PASS)|scale_test.go' || true
	@uptime
	go run ./hack/benchreport -out bench/scale < bench/tmp/scale-raw.txt

##@ Build and run

.PHONY: build
build: ## Build the manager binary into bin/manager.
	$(GO_BUILD_MANAGER) $(MANAGER) .

.PHONY: version
version: ## Print the version, commit and build date that builds stamp.
	@echo "version: $(VERSION)"; echo "commit: $(REVISION)"; echo "buildDate: $(BUILD_DATE)"

##@ Release

# The image: GO_BUILD_MANAGER builds the manager for each of IMAGE_PLATFORMS, and hack/release
# (go-containerregistry, a Go module of its own) packs the binaries into an OCI image index,
# without Docker and without a base image: /manager, /etc/passwd, /etc/group, and Mozilla's CA
# roots at /etc/ssl/certs/ca-certificates.crt from the Go module
# golang.org/x/crypto/x509roots/fallback (the version hack/release/go.mod requires); user 65532.
# Its timestamps are the commit's, so that one commit gives one index digest. dist/ holds the OCI
# layout, and a tarball for `docker load`, `kind load image-archive` and `ctr images import`
# (named IMG; docker load takes the IMAGE_LOAD_PLATFORM image from it, this machine's).
IMG ?= ghcr.io/example/switchboard:$(VERSION)
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_LOAD_PLATFORM ?= linux/$(shell go env GOARCH)
IMAGE_SOURCE ?= https://github.com/example/switchboard
DIST ?= $(CURDIR)/dist
IMAGE_LAYOUT ?= $(DIST)/image
IMAGE_TAR ?= $(DIST)/image.tar
RELEASE ?= $(LOCALBIN)/release

.PHONY: image
image: release-tool ## Build the manager's OCI image for IMAGE_PLATFORMS into dist/image (OCI layout) and dist/image.tar, without Docker.
	@$(RELEASE) check --image=$(IMG)
	@mkdir -p $(DIST)/bin
	for p in $(IMAGE_PLATFORMS); do \
		GOOS=$${p%%/*} GOARCH=$${p#*/} $(GO_BUILD_MANAGER) $(DIST)/bin/$$p/manager . || exit 1; \
	done
	$(RELEASE) image --layout=$(IMAGE_LAYOUT) --tar=$(IMAGE_TAR) --name=$(IMG) --load-platform=$(IMAGE_LOAD_PLATFORM) \
		--version=$(VERSION) --revision=$(REVISION) --created=$(BUILD_DATE) --source=$(IMAGE_SOURCE) \
		$(foreach p,$(IMAGE_PLATFORMS),--binary=$(p)=$(DIST)/bin/$(p)/manager)

.PHONY: image-push
image-push: image ## Build the image and push it to IMG (registry/name:tag) with the credentials docker uses.
	$(RELEASE) push --layout=$(IMAGE_LAYOUT) --image=$(IMG)

# config/default with the image pinned by digest, CRDs first: one file to `kubectl apply
# --server-side -f`. IMG must have a tag or a digest; with a tag, the digest is the image's just
# built (push it with `make image-push` and the same IMG).
.PHONY: build-installer
build-installer: image ## Write dist/install.yaml (config/default, Kubernetes 1.36 and later) and dist/install-before-1.36.yaml (config/overlays/before-1.36), IMG pinned by digest, CRDs first.
	kubectl kustomize config/default | $(RELEASE) installer --layout=$(IMAGE_LAYOUT) --image=$(IMG) > $(DIST)/install.yaml.tmp
	mv $(DIST)/install.yaml.tmp $(DIST)/install.yaml
	kubectl kustomize config/overlays/before-1.36 | $(RELEASE) installer --layout=$(IMAGE_LAYOUT) --image=$(IMG) --name=install-before-1.36.yaml > $(DIST)/install-before-1.36.yaml.tmp
	mv $(DIST)/install-before-1.36.yaml.tmp $(DIST)/install-before-1.36.yaml
	@echo "Wrote $(DIST)/install.yaml and $(DIST)/install-before-1.36.yaml"

# The chart as `helm package` makes it (the files .helmignore leaves in, under switchboard/), so
# that a release can attach it without Helm on the machine; test/helm loads it with Helm's loader.
CHART_VERSION = $(shell sed -n 's/^version: *//p' charts/switchboard/Chart.yaml)
CHART_PACKAGE ?= $(DIST)/switchboard-$(CHART_VERSION).tgz

.PHONY: chart-package
chart-package: ## Package charts/switchboard into dist/switchboard-<chart version>.tgz, as helm package does.
	@mkdir -p $(dir $(CHART_PACKAGE))
	tar --create --sort=name --mtime='$(BUILD_DATE)' --owner=0 --group=0 --numeric-owner \
		--exclude-from=charts/switchboard/.helmignore -C charts switchboard | gzip -n > $(CHART_PACKAGE).tmp
	mv $(CHART_PACKAGE).tmp $(CHART_PACKAGE)
	@echo "Wrote $(CHART_PACKAGE)"

# A release, up to the push (docs/releasing.md): `make release VERSION=v0.2.0`, with IMG naming
# the registry it will be pushed to. Preflight refuses a dirty or tagged checkout and any place
# that names another version; then every test, the image and installer, the chart's package,
# and an annotated tag, all local. It prints what pushes them.
.PHONY: release
release: release-tool ## Cut release VERSION=vX.Y.Z up to the push: checks, every test, image, dist/install.yaml, chart package, local tag.
	@[ "$(origin VERSION)" = "command line" ] || { echo "make release: give the version, VERSION=vX.Y.Z"; exit 2; }
	$(RELEASE) preflight --dir=. --version=$(VERSION) --bundle-version=$(BUNDLE_VERSION)
	$(MAKE) test
	$(MAKE) lint
	$(MAKE) test-e2e
	$(MAKE) build-installer chart-package
	git tag --annotate $(VERSION) --message="Switchboard $(VERSION)"
	@echo "Tagged $(VERSION). Publish it with:"
	@echo "  make image-push IMG=$(IMG)"
	@echo "  git push origin $(VERSION)"
	@echo "  and attach $(DIST)/install.yaml, $(DIST)/install-before-1.36.yaml and $(CHART_PACKAGE) to the release of $(VERSION)."

.PHONY: release-tool
release-tool: ## Build hack/release (the image, push and installer tool) into bin/release.
	cd hack/release && go build -o $(RELEASE) .

# `make run` runs the manager on the local cluster it starts (cmd/localcluster), whatever
# KUBECONFIG says: a KUBECONFIG exported in the shell names the cluster kubectl talks to, maybe
# a production one, not one the user chose for a development run, and the manager would run
# every controller there. RUN_KUBECONFIG=path, on make's command line, runs it on that
# kubeconfig's cluster (its current context) instead, after saying which.
RUN_KUBECONFIG ?=
.PHONY: run
ifeq ($(origin RUN_KUBECONFIG),environment)
run:
	@echo "RUN_KUBECONFIG is set in the environment: name the cluster on make's command line for each run, make run RUN_KUBECONFIG=path" >&2; exit 2
else ifeq ($(RUN_KUBECONFIG),)
run: build localcluster $(LOCALCLUSTER_BINS) ## Run the manager on a local cluster it starts (whatever KUBECONFIG says), or on the cluster of RUN_KUBECONFIG=path.
	$(LOCALCLUSTER) --dir=$(LOCALCLUSTER_DIR) --k8s-bin-dir=$(K8S_BIN) --kwok=$(KWOK) --kwok-stages=$(KWOK_STAGES) \
		--kwok-metrics=$(KWOK_METRICS) --metrics-server=$(METRICS_SERVER) --manager=$(MANAGER) -- $(ARGS)
else
run: build ## Run the manager on a local cluster it starts (whatever KUBECONFIG says), or on the cluster of RUN_KUBECONFIG=path.
	@$(KUBECTL) --kubeconfig=$(RUN_KUBECONFIG) config view --minify -o jsonpath='Running the manager against the cluster of RUN_KUBECONFIG=$(RUN_KUBECONFIG): context {.current-context}, server {.clusters[0].cluster.server}{"\n"}'
	@echo "Install the CRDs there first: kubectl --kubeconfig=$(RUN_KUBECONFIG) apply --server-side -k config/crd"
	$(MANAGER) --kubeconfig=$(RUN_KUBECONFIG) --metrics-bind-address=0 $(ARGS)
endif

# The OLM bundle's version; bundle/ is committed and a test keeps it current.
BUNDLE_VERSION ?= 0.1.0

.PHONY: bundle
bundle: ## Write the OLM bundle into bundle/ from `kubectl kustomize` of config/default and config/samples.
	@mkdir -p $(LOCALBIN)
	kubectl kustomize config/default > $(LOCALBIN)/bundle-manifests.yaml
	kubectl kustomize config/samples > $(LOCALBIN)/bundle-examples.yaml
	go run ./hack/bundle -version=$(BUNDLE_VERSION) -manifests=$(LOCALBIN)/bundle-manifests.yaml -examples=$(LOCALBIN)/bundle-examples.yaml -out=bundle

.PHONY: localcluster
localcluster: ## Build the local-cluster launcher of `make run` into bin/localcluster.
	go build -o $(LOCALCLUSTER) ./cmd/localcluster

##@ Deployment

# Kubebuilder's targets, for the cluster of the current kubeconfig (KUBECONFIG). IMG (Release,
# above) is the manager's image: `make deploy` puts it in place of the one config/manager names
# (MANIFEST_IMG), and `make docker-build docker-push` build and push it with Docker
# (CONTAINER_TOOL: docker or podman) from the Dockerfile, which builds the manager as `make build`
# does, stamped with the same version; `make image image-push` do the same without Docker.
# hack/build's tests run each target (Docker's with a stand-in for it, the others on a real API
# server).
MANIFEST_IMG = ghcr.io/example/switchboard:v0.1.0
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl
# What `make deploy` and `make undeploy` apply: config/default, or an overlay.
DEPLOY_KUSTOMIZATION ?= config/default
# ignore-not-found=true makes uninstall and undeploy quiet about objects already gone.
ignore-not-found ?= false

.PHONY: docker-build
docker-build: ## Build the manager's image IMG with Docker (CONTAINER_TOOL) from the Dockerfile.
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --build-arg BUILD_DATE=$(BUILD_DATE) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the image IMG with Docker (CONTAINER_TOOL).
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: install
install: ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Delete the CRDs, and with them every MyApp, VerticalScaler and checkpoint (ignore-not-found=true: no error for missing ones).
	$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -k config/crd

# --server-side: the CRDs are too large for a client-side apply's annotation.
.PHONY: deploy
deploy: ## Deploy DEPLOY_KUSTOMIZATION (config/default) with the manager's image IMG to the cluster of the current kubeconfig.
	$(KUBECTL) kustomize $(DEPLOY_KUSTOMIZATION) | sed 's|image: $(MANIFEST_IMG)$$|image: $(IMG)|' | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: ## Delete what `make deploy` created, CRDs included (ignore-not-found=true: no error for missing ones).
	$(KUBECTL) kustomize $(DEPLOY_KUSTOMIZATION) | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

##@ Tools

# Only what envtest runs: the few tests that need kube-controller-manager run in `make test-e2e`,
# which builds it with the rest of the local cluster.
.PHONY: envtest-assets
envtest-assets: ## Build etcd and kube-apiserver for envtest unless KUBEBUILDER_ASSETS has them.
	@if [ -x "$(KUBEBUILDER_ASSETS)/kube-apiserver" ] && [ -x "$(KUBEBUILDER_ASSETS)/etcd" ]; then \
		echo "envtest binaries: $(KUBEBUILDER_ASSETS)"; \
	else \
		$(MAKE) --no-print-directory $(K8S_BIN)/kube-apiserver $(K8S_BIN)/etcd; \
	fi

# A cold build takes about 15 minutes on 2 cores; the Go build cache makes later ones quick.
$(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler: $(K8S_MODULE)/go.mod
	@mkdir -p $(K8S_BIN)
	@echo "Building $(notdir $@) from Go modules ($(K8S_MODULE)); the first build takes a while"
	cd $(K8S_MODULE) && go build -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

$(K8S_BIN)/etcd: $(K8S_MODULE)/go.mod
	@mkdir -p $(K8S_BIN)
	cd $(K8S_MODULE) && go build -o $@ go.etcd.io/etcd/server/v3

.PHONY: kwok
kwok: $(KWOK) $(KWOK_STAGES) $(KWOK_METRICS) ## Build kwok and write its Stages and metrics configuration (hack/tools/kwok).

# About 7 minutes cold on 2 cores.
$(KWOK): hack/tools/kwok/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools/kwok && go build -o $@ sigs.k8s.io/kwok/cmd/kwok

$(KWOK_STAGES): hack/tools/kwok/go.mod hack/tools/kwok/stages/main.go
	@mkdir -p $(LOCALBIN)
	cd hack/tools/kwok && go run ./stages > $@.tmp && mv $@.tmp $@

# A cold build takes minutes (README, Tests); the Go build cache makes later ones quick. Built as
# a dependency of hack/tools/lint, so `golangci-lint version` is told the version by hand (it would
# report the tools module's "(devel)").
$(GOLANGCI_LINT): hack/tools/lint/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools/lint && go build -o $@ \
		-ldflags "$$(go list -m -f '-X main.version={{.Version}} -X main.date={{.Time.Format "2006-01-02"}} -X main.commit=hack/tools/lint' github.com/golangci/golangci-lint/v2)" \
		github.com/golangci/golangci-lint/v2/cmd/golangci-lint

# The generator checks its CEL expressions with kwok's own CEL environment before writing.
$(KWOK_METRICS): hack/tools/kwok/go.mod hack/tools/kwok/metrics/main.go
	@mkdir -p $(LOCALBIN)
	cd hack/tools/kwok && go run ./metrics > $@.tmp && mv $@.tmp $@

.PHONY: metrics-server
metrics-server: $(METRICS_SERVER) ## Build metrics-server (hack/tools/metrics-server).

# Slow the first time, like kwok; the Go build cache makes later builds quick.
$(METRICS_SERVER): hack/tools/metrics-server/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools/metrics-server && go build -o $@ sigs.k8s.io/metrics-server/cmd/metrics-server

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
