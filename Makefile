# gpulab.kai_hami -- `make test` is the one test command (CI runs it through .ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
include versions.env

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
CACHE := $(CURDIR)/.cache
COLLECTIONS := $(CACHE)/collections
K8S_CORE := $(COLLECTIONS)/ansible_collections/kubernetes/core
SELF_LINK := $(COLLECTIONS)/ansible_collections/gpulab/kai_hami
TEST_ROOT := $(CACHE)/ansible-test/ansible_collections
TEST_TREE := $(TEST_ROOT)/gpulab/kai_hami
# ansible-test installs its own pinned sanity tools; they get a venv of their own.
SANITY_VENV := $(CACHE)/sanity-venv
# ansible-test keeps its venvs and caches under $$HOME/.ansible/test: give it one of ours.
SANITY_HOME := $(CACHE)/ansible-test-home

export PATH := $(BIN):$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_NOCOLOR := 1

.PHONY: help test venv collections sanity lint changelog-lint units requirements clean clean-cache

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

test: sanity lint changelog-lint units ## Everything: sanity, lint, changelog lint, then pytest (last line is pytest's)

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
	# --requirements (not --venv: that bootstraps pip from a host this network cannot reach)
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

units: collections ## pytest unit tests
	pytest tests/unit

requirements: ## Re-pin requirements/test.txt (with hashes) from requirements/test.in
	$(BIN)/pip install --quiet pip-tools
	$(BIN)/pip-compile --generate-hashes --allow-unsafe --strip-extras --no-header -q \
	  -o requirements/test.txt requirements/test.in
	$(BIN)/pip-compile --generate-hashes --allow-unsafe --strip-extras --no-header -q \
	  -o requirements/sanity.txt requirements/sanity.in

clean: ## Remove test outputs
	rm -rf $(CACHE)/ansible-test tests/output .pytest_cache

clean-cache: clean ## Remove every cache (venv, wheels, collections, built binaries)
	rm -rf $(VENV) $(CACHE)
