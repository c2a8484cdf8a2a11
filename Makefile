# koordgang: the two set-up commands are `make demo` and `make test`.
# Everything built or downloaded lives outside git: .venv/ and .cluster/ here, Go and pip
# caches and the control-plane binaries under ~/.cache.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
KUBECONFIG ?= $(CURDIR)/.cluster/kubeconfig
# The Kubernetes release of the local control plane: 1.37, or 1.36 (`make cluster-up KUBE=1.36`);
# each has its own pins (controlplane/gomod/v<release>/) and cached binaries.
KUBE ?= 1.37
export KUBE
PYTEST_ARGS ?=
# The product, its tests, and the tools: the local control plane, the bench, the soak, the demo.
PYTHON_TREES := koordgang tests harness e2e controlplane bench soak demo.py

.PHONY: help venv build-controlplane cluster-up cluster-down run lint unit check coverage \
	e2e e2e-plane e2e-clients e2e-upstream-1.36 test demo clean

help:
	@echo "make demo          local control plane + koordgang + example jobs, then a report"
	@echo "make check         first tier, no cluster: ruff, mypy, import-linter, unit tests"
	@echo "make test          install what the tests need, then every tier: check, e2e on 1.37,"
	@echo "                   e2e of the real clients, the upstream gang API on 1.36"
	@echo "make cluster-up    start the local control plane (kubeconfig: .cluster/kubeconfig)"
	@echo "                   Kubernetes 1.37; KUBE=1.36 for 1.36 (any target takes KUBE)"
	@echo "make cluster-down  stop it"
	@echo "make run           run koordgang against \$$KUBECONFIG (default .cluster/kubeconfig)"

$(STAMP): pyproject.toml
	@echo "==> creating $(VENV) and installing koordgang with its test tools"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

build-controlplane: $(STAMP)
	@$(PY) -m controlplane build

cluster-up: $(STAMP)
	@$(PY) -m controlplane up

cluster-down: $(STAMP)
	@$(PY) -m controlplane down

run: $(STAMP)
	@$(VENV)/bin/koordgang run --kubeconfig "$(KUBECONFIG)"

lint: $(STAMP)
	@echo "==> ruff"
	@$(VENV)/bin/ruff check $(PYTHON_TREES)
	@$(VENV)/bin/ruff format --check --quiet $(PYTHON_TREES)
	@echo "==> mypy strict (the product, its tests and the tools: [tool.mypy] files)"
	@$(VENV)/bin/mypy
	@echo "==> import-linter (layers import only downward)"
	@$(VENV)/bin/lint-imports

unit: $(STAMP)
	@echo "==> unit tests (the product, and the tools' own)"
	@$(PY) -m pytest koordgang tests controlplane bench soak -q $(PYTEST_ARGS)

# A tier of `make test`: a header, the targets it runs, and a verdict of its own. A failing tier
# stops the run, so the last verdict printed is the first failure.
define tier
	@printf '\n=== tier %s: %s\n' '$(1)' '$(2)'
	@start=$$(date +%s); \
	if $(MAKE) --no-print-directory $(3); then \
		echo "=== tier $(1): PASSED in $$(( $$(date +%s) - start )) s"; \
	else \
		echo "=== tier $(1): FAILED after $$(( $$(date +%s) - start )) s (later tiers not run)"; \
		exit 1; \
	fi
endef

# The first tier: everything that needs no cluster; meant to stay under 3 minutes with warm caches.
CHECK := ruff; mypy strict; import-linter; unit tests
check: $(STAMP)
	$(call tier,check,$(CHECK),lint unit)

# Coverage of the unit tests alone (no cluster), per module.
coverage: $(STAMP)
	@$(PY) -m pytest koordgang tests -q --cov=koordgang --cov-report=term $(PYTEST_ARGS)

# The e2e tests on a 1.37 control plane (started and stopped by the suite): first those of
# koordgang alone, then those of the real clients (marked `clients`) that run in front of it.
e2e: e2e-plane e2e-clients

e2e-plane: $(STAMP) build-controlplane
	@echo "==> e2e tests on the local control plane, without the real clients"
	@$(PY) -m pytest e2e -q -m "not clients" $(PYTEST_ARGS)

e2e-clients: $(STAMP) build-controlplane
	@echo "==> building the real clients the e2e tests run (training-operator, MPI operator, KubeRay, Kueue, Karpenter, kube-scheduler; about 11 minutes the first time)"
	@$(PY) -m harness.clients.build
	@echo "==> e2e tests of the real clients in front of koordgang"
	@$(PY) -m pytest e2e -q -m clients $(PYTEST_ARGS)

# Clusters in the field run 1.36 and 1.37 side by side for a year, and the upstream gang API
# differs between them (v1alpha2 and v1beta1): its tests run again on a 1.36 plane.
e2e-upstream-1.36: $(STAMP)
	@echo "==> the upstream gang API on Kubernetes 1.36 (KUBE=1.36)"
	@KUBE=1.36 $(PY) -m controlplane build
	@KUBE=1.36 $(PY) -m pytest e2e -q -m upstream $(PYTEST_ARGS)

test: $(STAMP)
	$(call tier,1/4 check,$(CHECK),lint unit)
	$(call tier,2/4 e2e,the e2e tests on Kubernetes 1.37,e2e-plane)
	$(call tier,3/4 clients,the e2e tests of the real clients on Kubernetes 1.37,e2e-clients)
	$(call tier,4/4 upstream-1.36,the upstream gang API on Kubernetes 1.36,e2e-upstream-1.36)
	@printf '\n=== make test: PASSED (every tier)\n'

demo: $(STAMP)
	@$(PY) -m demo

# Benchmarks on a control plane of their own (.cluster/bench): the bind ceiling, then the
# scenarios of bench/scenarios.py; results in bench-results/. E.g. BENCH_ARGS="--scale 0.1".
# PEERS=all (or kube-scheduler,coscheduling,koord-scheduler) runs the same scenarios on the
# peers too, built from their Go modules on first use (bench/peers/gomod).
BENCH_ARGS ?=
PEERS ?= none
.PHONY: bench
bench: $(STAMP) build-controlplane
	@$(PY) -c "import matplotlib" 2>/dev/null && test -x $(VENV)/bin/py-spy || \
		$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,bench]'
	@$(PY) -m bench --peers $(PEERS) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .cluster .mypy_cache .ruff_cache .pytest_cache

# Churn of every kind of job for MINUTES with the faults of a production control plane in turn,
# on a control plane of its own (.cluster/soak); record and plot in soak-results/.
MINUTES ?= 20
.PHONY: soak
soak: $(STAMP) build-controlplane
	@$(PY) -c "import matplotlib" 2>/dev/null || \
		$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,bench]'
	@$(PY) -m soak --minutes $(MINUTES) $(SOAK_ARGS)
