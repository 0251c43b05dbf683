# gpulab.kai_hami -- `make test` is the one test command (CI runs it through .ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
include versions.env

PYTHON ?= python3
# KAI's scale suite's NODE_COUNT (make kai-scale): nodes of 8 GPUs, 500 as in KAI's own runs
NODE_COUNT ?= 500
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
CACHE := $(CURDIR)/.cache
COLLECTIONS := $(CACHE)/collections
K8S_CORE := $(COLLECTIONS)/ansible_collections/kubernetes/core
SELF_LINK := $(COLLECTIONS)/ansible_collections/gpulab/kai_hami
# The programs the collection runs without a registry, built from Go modules (the local_build role's
# build.sh) into a directory keyed by the versions of versions.env, the collection's one table of
# versions (in a checkout, .cache/sim-bin/<versions>/bin), for make and the roles alike.
BUILD_SH := roles/local_build/files/build.sh
export SIM_BIN_DIR := $(shell $(BUILD_SH) --print-bin-dir)
TEST_ROOT := $(CACHE)/ansible-test/ansible_collections
TEST_TREE := $(TEST_ROOT)/gpulab/kai_hami
# ansible-test installs its own pinned sanity tools; they get a venv of their own.
SANITY_VENV := $(CACHE)/sanity-venv
# ansible-test keeps its venvs and caches under $$HOME/.ansible/test: give it one of ours.
SANITY_HOME := $(CACHE)/ansible-test-home

export PATH := $(BIN):$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_NOCOLOR := 1

ACTIONLINT := $(CACHE)/actionlint/$(ACTIONLINT_VERSION)/bin/actionlint

.PHONY: node-packages kind-packages kind-node-image actionlint help test real-node-tests kwok-tests kai-e2e-build helm checks lab lab-clean lab-tests molecule-sim venv collections sim-bin sanity lint changelog-lint units integration pytest kai-e2e kai-e2e-gate kai-scale bench bench-lab bench-fleet requirements clean clean-cache

help: ## List the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-22s %s\n", $$1, $$2}'

test: ## Everything: the sim's build, then two lanes side by side: the tests that run the sim's real node (then KAI's e2e gate), and the checks with the tests whose nodes kwok plays
	$(MAKE) --no-print-directory -j2 --output-sync=target sim-bin collections
	@echo "make test: real-node-tests and kwok-tests run side by side (a pytest run's output is printed when it ends)"
	$(MAKE) --no-print-directory -j2 --output-sync=target real-node-tests kwok-tests

# A host runs one real node (kubelet, containerd; kind's node is one too) at a time: the tests that
# make one (marked real_node) run one after another in this lane, and KAI's e2e gate (on a real
# node) after them. kind's node image is assembled first (cached), for the kind tests of the lane.
real-node-tests: collections sim-bin ## kind's node image, the integration and lab tests marked real_node, then kai-e2e-gate
	@echo "[$$(date +%T)] real-node-tests: kind's node image"
	env -u MAKEFLAGS -u MFLAGS $(MAKE) --no-print-directory kind-node-image
	@echo "[$$(date +%T)] real-node-tests: the integration tests marked real_node"
	pytest tests/integration -m real_node
	@echo "[$$(date +%T)] real-node-tests: the lab tests marked real_node"
	pytest tests/lab -m real_node
	@echo "[$$(date +%T)] real-node-tests: kai-e2e-gate"
	env -u MAKEFLAGS -u MFLAGS $(MAKE) --no-print-directory kai-e2e-gate
	@echo "[$$(date +%T)] real-node-tests: done"

# Beside the real node's lane: first what that lane needs soon (helm), then, at a lower CPU
# priority (KWOK_TESTS_NICE) so that the real node's lane, the longer one, is not slowed by it: KAI's
# e2e test binaries (that lane's last step), what needs no cluster, and the tests whose clusters
# have only kwok's nodes.
KWOK_TESTS_NICE ?= 10
kwok-tests: collections sim-bin ## helm, then at a lower CPU priority KAI's e2e test binaries, the checks, and the integration and lab tests not marked real_node
	@echo "[$$(date +%T)] kwok-tests: helm"
	env -u MAKEFLAGS -u MFLAGS $(MAKE) --no-print-directory helm
	@echo "[$$(date +%T)] kwok-tests: KAI's e2e test binaries and the checks (nice $(KWOK_TESTS_NICE))"
	env -u MAKEFLAGS -u MFLAGS nice -n $(KWOK_TESTS_NICE) $(MAKE) --no-print-directory kai-e2e-build checks
	@echo "[$$(date +%T)] kwok-tests: the integration tests not marked real_node (nice $(KWOK_TESTS_NICE))"
	nice -n $(KWOK_TESTS_NICE) pytest tests/integration -m 'not real_node'
	@echo "[$$(date +%T)] kwok-tests: the lab tests not marked real_node (nice $(KWOK_TESTS_NICE))"
	nice -n $(KWOK_TESTS_NICE) pytest tests/lab -m 'not real_node'
	@echo "[$$(date +%T)] kwok-tests: done"

# What needs no cluster and no binary of the sim, one after the other.
checks: ## Sanity, lint, changelog lint, actionlint and the unit tests, one after the other
	env -u MAKEFLAGS -u MFLAGS $(MAKE) --no-print-directory sanity lint changelog-lint actionlint units

lab: collections ## Bring Lab 11 up and prove its claims: ansible-playbook playbooks/lab11.yml (auto platform; LAB_ARGS='-e ...')
	ansible-playbook playbooks/lab11.yml $(LAB_ARGS)

lab-clean: collections ## Remove what `make lab` created: ansible-playbook playbooks/cleanup.yml
	ansible-playbook playbooks/cleanup.yml $(LAB_ARGS)

molecule-sim: collections sim-bin ## molecule test -s sim alone (make test runs it through pytest)
	molecule test -s sim

venv: $(VENV)/.installed ## Python venv with the pinned, hash-checked tools
$(VENV)/.installed: requirements/test.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements/test.txt
	touch $@

collections: $(K8S_CORE)/MANIFEST.json $(SELF_LINK) ## kubernetes.core (from the ansible wheel) + this collection on a collections path
$(K8S_CORE)/MANIFEST.json: versions.env | $(VENV)/.installed
	$(BIN)/python tools/install_kubernetes_core.py $(ANSIBLE_BUNDLE_VERSION) $(ANSIBLE_BUNDLE_SHA256) \
	  $(KUBERNETES_CORE_VERSION) $(CACHE)/wheels $(COLLECTIONS)
$(SELF_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../../.. $@

$(SANITY_VENV)/.installed: requirements/sanity.txt
	$(PYTHON) -m venv $(SANITY_VENV)
	$(SANITY_VENV)/bin/pip install --quiet --require-hashes -r requirements/sanity.txt
	touch $@

sanity: collections $(SANITY_VENV)/.installed ## ansible-test sanity from an ansible_collections/gpulab/kai_hami copy, no ignore entries
	@if grep -v '^\s*$$' tests/sanity/ignore-*.txt; then echo "sanity ignore files must stay empty" >&2; exit 1; fi
	rm -rf $(TEST_TREE) && mkdir -p $(TEST_TREE)
	git ls-files -z --cached --others --exclude-standard \
	  | tar --null --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C $(TEST_TREE)
	ln -sfn $(COLLECTIONS)/ansible_collections/kubernetes $(TEST_ROOT)/kubernetes
	# Its own git index, or ansible-test asks this checkout's git, which ignores .cache/.
	cd $(TEST_TREE) && git init -q && git add -A
	# --requirements (not --venv: that bootstraps pip from bootstrap.pypa.io, which a machine with only a PyPI mirror cannot reach)
	# ansible-test asks for get_pip_<its pip version>.py; the version is read from ansible-test itself.
	pip=$$(grep -o "pip='[0-9.]*'" $(SANITY_VENV)/lib/python3.*/site-packages/ansible_test/_internal/python_requirements.py \
	  | grep -o "[0-9.]*[0-9]" | tr . _); \
	  mkdir -p $(SANITY_HOME)/.ansible/test/cache && \
	  cp tools/get_pip_offline.py $(SANITY_HOME)/.ansible/test/cache/get_pip_$$pip.py
	cd $(TEST_TREE) && HOME=$(SANITY_HOME) PATH=$(SANITY_VENV)/bin:$$PATH \
	  ansible-test sanity --requirements --python 3.11 --color no

lint: collections ## ansible-lint, production profile, offline
	ansible-lint --offline --profile production

changelog-lint: venv ## antsibull-changelog lint of the fragments
	antsibull-changelog lint

actionlint: $(ACTIONLINT) ## actionlint on .github/workflows (shellcheck on run: steps when shellcheck is installed)
	$(ACTIONLINT) $$(command -v shellcheck >/dev/null || echo -shellcheck=)
# Built once per version: the binary's path is keyed by ACTIONLINT_VERSION.
$(ACTIONLINT):
	mkdir -p $(dir $@)
	GOBIN=$(dir $@) GOTOOLCHAIN=local go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

# The real node's Debian packages: runc's build needs libseccomp's headers and pkg-config; the
# node's busybox image is Debian's busybox-static; its network needs iptables and iproute2.
NODE_PACKAGES := libseccomp-dev pkg-config busybox-static iptables iproute2
node-packages: ## Install the Debian packages the sim's real node needs (as root, with apt-get; only the missing ones)
	@missing=$$(for p in $(NODE_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done | xargs); \
	if [ -z "$$missing" ]; then echo "node-packages: installed ($(NODE_PACKAGES))"; \
	elif [ "$$(id -u)" != 0 ]; then echo "node-packages: the sim's real node needs the Debian packages $$missing, which only root can install: run 'sudo apt-get install $$missing' (or make as root)" >&2; exit 1; \
	else echo "node-packages: installing $$missing with apt-get (as root)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

# kind where no Docker engine answers: podman (with netavark and aardvark-dns, its network) runs the
# node with runc; debootstrap and jq assemble the node image where no registry answers. After
# node-packages: apt-get runs one at a time (make -j would start both).
KIND_PACKAGES := podman netavark aardvark-dns conmon runc debootstrap jq nftables
kind-packages: node-packages ## Install the Debian packages kind needs without a Docker engine or a registry (as root, with apt-get; only the missing ones)
	@missing=$$(for p in $(KIND_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done | xargs); \
	if [ -z "$$missing" ]; then echo "kind-packages: installed ($(KIND_PACKAGES))"; \
	elif [ "$$(id -u)" != 0 ]; then echo "kind-packages: kind with podman and a locally built node image needs the Debian packages $$missing, which only root can install: run 'sudo apt-get install $$missing' (or make as root)" >&2; exit 1; \
	else echo "kind-packages: installing $$missing with apt-get (as root)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

sim-bin: node-packages kind-packages ## Build the sim platform's binaries from Go modules (warm: seconds)
	$(BUILD_SH)

kind-node-image: collections sim-bin ## Assemble kind's node image from the table's versions, without a registry (cached; cold: about a minute)
	@out=$$(ansible localhost -m ansible.builtin.include_role -a 'name=gpulab.kai_hami.local_build tasks_from=kind_node_image.yml' 2>&1) \
	  || { echo "$$out" >&2; exit 1; }
	@roles/local_build/files/kind_node_image.sh --print

pytest: collections sim-bin ## Unit and integration tests (a shared sim cluster), then the lab end to end (Molecule's sim scenarios)
	pytest tests/unit tests/integration
	pytest tests/lab

units: collections ## Unit tests only (no cluster)
	pytest tests/unit

integration: collections sim-bin ## Integration tests against a shared sim cluster only
	pytest tests/integration

lab-tests: collections sim-bin ## The lab end to end only: Molecule's sim scenarios and playbooks/lab11.yml
	pytest tests/lab

bench: collections sim-bin ## Benchmark: one module task vs a kubernetes.core.k8s loop (prints figures and ratios)
	python tools/bench_modules.py

kai-e2e: collections sim-bin ## KAI's own e2e suites on a sim cluster (tests/kai_e2e/kai-<version>.yml); report in kai-e2e-report/ (KAI_E2E_ARGS='--suite allocate/quota')
	python tools/kai_e2e.py $(KAI_E2E_ARGS)

kai-scale: collections sim-bin $(VENV)/.bench-installed ## KAI's own scale suite, unchanged, on a sim cluster of NODE_COUNT nodes (default 500, as KAI's) with kwok-operator and the gpu-operator stand-in; report and SVG in kai-scale-report/ beside KAI's example report (KAI_SCALE_ARGS='--focus Sanity')
	python tools/kai_scale.py --nodes $(NODE_COUNT) $(KAI_SCALE_ARGS)

kai-e2e-build: collections sim-bin ## Build the test binaries of the e2e suites with gate: counts (kai-e2e-gate builds them too)
	python tools/kai_e2e.py --gate --build-only

helm: collections ## The pinned helm, installed by the helm_binary role into its cache (the roles that install charts use it)
	ansible-playbook tests/integration/playbooks/helm_binary.yml

kai-e2e-gate: collections sim-bin ## The e2e suites with gate: counts (make test runs them); fails on any failure or other passed/skipped counts
	python tools/kai_e2e.py --gate --report-dir $(CACHE)/kai-e2e-gate

bench-lab: collections sim-bin ## Benchmark: the lab per step as users run it (the sim's real node): first run, re-run, --tags verify, cleanup, each run's slowest tasks (BENCH_ARGS='--node-runtime kwok', '--platform kind', '--boundary library_stand_in')
	python tools/bench_lab.py $(BENCH_ARGS)

bench-fleet: collections sim-bin $(VENV)/.bench-installed ## Benchmark: KAI vs kube-scheduler filling 64 nodes x 8 GPUs per stage, queues 2:1, fractions through real reservations, an SVG (BENCH_FLEET_ARGS='--nodes 128 --sweep', or '--bulk-fractions': 16 halves a node at once, four rules checked)
	python tools/bench_fleet.py $(BENCH_FLEET_ARGS)
$(VENV)/.bench-installed: requirements/bench.txt | $(VENV)/.installed
	$(BIN)/pip install --quiet --require-hashes -r requirements/bench.txt
	touch $@

requirements: ## Re-pin requirements/*.txt (with hashes) from their .in files
	$(BIN)/pip install --quiet pip-tools
	$(BIN)/pip-compile --generate-hashes --allow-unsafe --strip-extras --no-header -q \
	  -o requirements/test.txt requirements/test.in
	$(BIN)/pip-compile --generate-hashes --allow-unsafe --strip-extras --no-header -q \
	  -o requirements/sanity.txt requirements/sanity.in
	cd requirements && $(BIN)/pip-compile --generate-hashes --allow-unsafe --strip-extras --no-header -q \
	  -o bench.txt bench.in

clean: ## Remove test outputs
	rm -rf $(CACHE)/ansible-test tests/output .pytest_cache

clean-cache: clean ## Remove every cache in the checkout (venv, wheels, collections, built binaries)
	rm -rf $(VENV) $(CACHE)
