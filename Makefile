# dra-harness: everything a fresh machine needs comes from here (PyPI + the Go module proxy).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
K8S ?=
GATES ?=
K8S_FLAG := $(if $(K8S),-k $(K8S),)
GATES_FLAG := $(if $(GATES),-g $(GATES),)
PYTEST_ARGS ?=

.PHONY: docs-images all venv controlplane nodeparts drivers mutants test-mutants kind-engine kind-images upgradeparts parts lint unit e2e test test-minors test-chart test-nvidia test-kind-qualify test-fresh run cluster cluster-down bench-cluster-start bench-publish bench-scale bench-real-torture bench-real-nodes clean

all: test

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

venv: $(BIN)/.installed

# Build (or reuse from ~/.cache/dra-harness) the control plane of one minor: make controlplane K8S=1.34
controlplane: venv
	$(BIN)/dra-harness controlplane build $(K8S_FLAG)

# Real nodes (suites/node): runc, CNI plugins, busybox-static, iptables from apt (versions.toml
# [nodes] apt_packages), then the kubelet of the minor, containerd and the images.
NODE_APT := $(shell $(PYTHON) -c 'import tomllib; print(" ".join(tomllib.load(open("versions.toml", "rb"))["nodes"]["apt_packages"]))')
# The node suites also run one node of the oldest minor (kubelet skew): its kubelet only.
OLDEST_MINOR := $(shell $(PYTHON) -c 'import tomllib; print(min(tomllib.load(open("versions.toml", "rb"))["minors"], key=lambda m: [int(p) for p in m.split(".")]))')
nodeparts: venv
	@dpkg -s $(NODE_APT) >/dev/null 2>&1 || ($(APT_SUDO) apt-get update && $(APT_SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y $(NODE_APT))
	$(BIN)/dra-harness controlplane build $(K8S_FLAG) --nodes
	$(BIN)/dra-harness controlplane build -k $(OLDEST_MINOR) --nodes-only

# Real DRA drivers' kubelet plugins (versions.toml [drivers]) from the module proxy: every
# pinned version, or one: make drivers DRIVER=example@v0.4.0
drivers: venv
	$(BIN)/dra-harness parts build drivers $(DRIVER:%=--driver=%)

# The planted-bug drivers (mutants/<driver>-<version>/*.patch on the released module, versions.toml
# [test] mutants) that qualify must FAIL: tests/e2e/test_qualify_mutants.py.
mutants: venv
	$(BIN)/dra-harness parts build mutants

# The mutants alone: their builds' failure lines, then qualify of each on a real node (~7 min).
test-mutants: mutants
	$(BIN)/pytest tests/harness/controlplane/test_mutantparts.py tests/e2e/test_qualify_mutants.py -n 0 $(PYTEST_ARGS)

# The kind path's engine where Docker is absent: Debian's dockerd (versions.toml [kind] engine_apt).
# kind itself goes into .venv/bin (where the provider finds it) at versions.toml's release.
kind-engine: nodeparts
	$(BIN)/dra-harness parts build kind

# The local kind node image of a minor (make kind-images K8S=1.36): built from the modfile and
# versions.toml's pins, cached by inputs (dra-harness kind images).
kind-images: kind-engine controlplane
	$(BIN)/dra-harness kind images $(K8S_FLAG)

# suites/upgrade rehearses 1.36 -> 1.37 and back on clusters of its own: both control planes
# and, for the kubelet swap (test_kubelet_upgrade), both kubelets; the kubelet skew table
# (test_kubelet_skew) runs kubelets 1.36, 1.35 and 1.34 (nodeparts: the oldest) in a 1.37 cluster.
UPGRADE_MINORS := 1.36 1.37
SKEW_KUBELETS := 1.35 1.36 1.37
upgradeparts: nodeparts
	$(foreach m,$(UPGRADE_MINORS),$(BIN)/dra-harness controlplane build -k $(m) &&) true
	$(foreach m,$(SKEW_KUBELETS),$(BIN)/dra-harness controlplane build -k $(m) --nodes-only &&) true

# The docs' pictures (docs/images/): the reports rendered from crafted results in headless Chromium
# (Debian's chromium, as `make test` installs it); tests/test_docs_images.py fails when a template
# changed since.
docs-images: venv
	rm -f docs/images/inputs.json
	DRA_HARNESS_WRITE_IMAGES=1 $(BIN)/pytest tests/e2e/test_docs_images.py -n 0 -p no:randomly $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	@# the workflows, and action.yml through the workflow that uses it (versions.toml [tools.actionlint])
	"$$($(BIN)/dra-harness tool path actionlint)"

unit: venv
	$(BIN)/pytest tests $(PYTEST_ARGS)

e2e: controlplane
	$(BIN)/pytest suites $(K8S:%=--k8s-version=%) $(GATES:%=--gates=%) $(PYTEST_ARGS)

# Every part `make test` needs (versions.toml [test]), Go builds one after another beside apt and
# debootstrap, with a table of what each took; a part without a measured budget is refused.
parts: venv
	$(BIN)/dra-harness parts build test

# The README's test command: lint, every part, then the harness's own tests and the suites on
# the local cluster, in xdist workers (fixtures/parallel/scheduling.py keeps whole-cluster tests apart).
# Each phase prints its time (.ci/phase).
TEST_WORKERS ?= 4
# The real-plugin comparisons (fixtures/real/realplugins.py) must run: a skip of one fails the run.
# A host that cannot run them leaves them out only when told, with the reason printed at the
# start: make test EXCLUDE_REAL_PLUGINS='no root on this runner' (docs/building.md).
EXCLUDE_REAL_PLUGINS ?=
REAL_PLUGINS_FLAG := $(if $(EXCLUDE_REAL_PLUGINS),--exclude-real-plugins='make test EXCLUDE_REAL_PLUGINS=$(EXCLUDE_REAL_PLUGINS)',--require-real-plugins)
test: venv
	@.ci/phase lint $(MAKE) --no-print-directory lint
	@.ci/phase parts $(MAKE) --no-print-directory parts
	@# own_target tests need a part only their own target builds (make test-chart, test-kind-qualify)
	@.ci/phase pytest $(BIN)/pytest tests suites -n $(TEST_WORKERS) -m 'not own_target' $(REAL_PLUGINS_FLAG) \
		$(K8S:%=--k8s-version=%) $(GATES:%=--gates=%) $(PYTEST_ARGS)

# The checks of every minor `make test` leaves to this target (a control plane of each: ~5 cold
# minutes a minor; 1.38's ~18 with its Go toolchain): the deploy manifests on each minor's API
# server, the kind configs' gates, the 1.38 binaries' toolchain, which iptables-wrappers the 1.38
# kubelet is built with (the real module or the stand-in: the proxy is asked), `cluster up -k 1.38
# --real-nodes 2`, and suites/upgrade's every_minor tests (1.37 -> 1.38 with real nodes, scan
# --target 1.38, the kubelet skew table under 1.38), which also need upgradeparts' kubelets; then
# the node suites and the example and NVIDIA drivers on 1.38 real nodes (its kubelet: the stand-in);
# last the kind path on 1.38: its node image (kube-proxy with the stand-in, in nftables mode; ~13
# min with the 1.38 kubelet built, 7 of them coredns) and test_kind_cluster on it (~5 min).
test-minors: upgradeparts kind-engine
	$(BIN)/dra-harness controlplane build -k all
	$(BIN)/dra-harness controlplane build -k 1.38 --nodes-only
	$(BIN)/pytest --every-minor suites/deploy tests/harness/clusters/test_kind_config.py tests/harness/controlplane/test_go_toolchain.py \
		tests/harness/controlplane/test_standins.py tests/e2e/test_cluster_real_nodes.py $(PYTEST_ARGS)
	$(BIN)/pytest --every-minor -m every_minor suites/upgrade $(PYTEST_ARGS)
	$(BIN)/pytest --k8s-version 1.38 suites/node suites/device_health tests/e2e/test_qualify_real_driver.py \
		tests/e2e/test_nvidia_real_driver.py $(PYTEST_ARGS)
	$(BIN)/dra-harness kind images -k 1.38
	$(BIN)/pytest --k8s-version 1.38 tests/harness/clusters/test_kind_cluster.py -n 0 $(PYTEST_ARGS)

# The Helm chart's tests with helm built from the module proxy (versions.toml [tools.helm]): its cold
# build (~13 min) is kept out of `make test`, which leaves these tests out. tests/harness/chart/test_chart.py
# (no cluster), tests/e2e/test_chart_install.py (a local cluster, kwok fleet) and
# tests/e2e/test_chart_kind.py (`helm install` on a kind cluster of the harness's engine: the
# plugins in pods on the workers, a claim pod and a bridged pod see their GPUs, uninstall leaves
# nothing; it needs kind-engine and kind-images' parts, which `make test` builds, and skips
# naming the target without them).
test-chart: controlplane
	$(BIN)/dra-harness tool path helm
	$(BIN)/pytest tests/harness/chart/test_chart.py tests/e2e/test_chart_install.py tests/e2e/test_chart_kind.py \
		$(PYTEST_ARGS)

# NVIDIA's real DRA driver alone (gpu-kubelet-plugin v0.4.1 and v0.5.0, the NVML stand-in
# nvmlstub/, nvidia-cdi-hook; `make test` builds and tests them too, versions.toml [test] drivers):
# the stand-in's exports, the driver root, and per release on 3 real nodes (8 H100s, 8 A100s with
# static MIG on two, 2 H100s with static MIG on one) slices, claims' containers, its personality
# (nvidia-v0.4, nvidia-v0.5) against the real slices, qualify; DynamicMIG: the stand-in creating
# and destroying instances, and on 1 real node (2 A100s, the plugin's DynamicMIG gate) the
# partitionable slices and a MIG claim's create and destroy.
NVIDIA_DRIVERS := nvidia@v0.4.1 nvidia@v0.5.0
test-nvidia: nodeparts
	$(BIN)/dra-harness parts build drivers $(NVIDIA_DRIVERS:%=--driver=%)
	$(BIN)/pytest tests/nvmlstub/test_nvml_exports.py tests/harness/clusters/test_nvidia_root.py tests/harness/clusters/test_nvidia_mig_root.py \
		tests/nvmlstub/test_nvml_dynamic_mig.py tests/e2e/test_nvidia_real_driver.py \
		tests/e2e/test_nvidia_dynamic_mig.py -n 0 $(PYTEST_ARGS)

# `dra-harness qualify` as its in-cluster Job (deploy/qualify) on a kind cluster of our own with the
# stand-in driver (tests/e2e/test_qualify_kind_job.py). Beyond what `make test` builds (the kind node
# image is one of its parts), the harness image (`kind images --harness`: 364 MiB; 54 s with empty
# caches, 44 s of it debootstrap; 7 s with the root filesystem built) and the run (~4 min on 2 cores:
# the cluster ~1.5, the Job ~2) do not fit its 45-minute budget, so they run here.
test-kind-qualify: kind-engine controlplane
	$(BIN)/dra-harness kind images --harness $(K8S_FLAG)
	$(BIN)/pytest tests/e2e/test_qualify_kind_job.py -n 0 $(PYTEST_ARGS)

# `make test` as on a new machine: a clean clone with empty caches (HOME, XDG_CACHE_HOME, GOCACHE,
# GOMODCACHE in a temporary directory), then every part it built and how long each took against
# versions.toml [budget]. Run it before resolving an issue that changes what is built.
test-fresh:
	bash .ci/fresh

# The main job: the suites on the default cell, reports in reports/out/<run-id>/.
run: controlplane
	$(BIN)/dra-harness run $(K8S_FLAG) $(GATES_FLAG)

cluster: controlplane
	$(BIN)/dra-harness cluster up $(K8S_FLAG) $(GATES_FLAG)

cluster-down: venv
	$(BIN)/dra-harness cluster down

# Teardown torture: 20 interrupts at random moments of a start with real nodes.
bench-real-torture: nodeparts
	$(BIN)/python bench/real_node_torture.py --runs 20

# Real nodes: start to Ready (median of 5), pod with a claim to Running (p50/p90 of 50), memory.
bench-real-nodes: nodeparts
	$(BIN)/python bench/real_nodes.py $(K8S_FLAG)

bench-cluster-start: controlplane
	$(BIN)/python bench/cluster_start.py $(K8S_FLAG)

bench-publish: controlplane
	$(BIN)/python bench/publish.py $(K8S:%=--k8s-version=%)

# DRA's cost to the scheduler and the API server: make bench-scale K8S=1.36,1.37
bench-scale: controlplane
	$(BIN)/dra-harness bench $(K8S_FLAG)

clean:
	rm -rf reports/out .pytest_cache .mypy_cache .ruff_cache

APT_SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
.PHONY: matrix

# The matrix: cells (minor x personality x gate profile) in parallel, then the readiness report.
# make matrix CELLS=1.37/nvidia-v0.4/dra-all JOBS=2   (default cells: versions.toml [matrix] default_cells)
CELLS ?=
JOBS ?= 2
matrix: venv
	$(BIN)/dra-harness matrix $(foreach c,$(CELLS),--cells $(c)) --jobs $(JOBS)
