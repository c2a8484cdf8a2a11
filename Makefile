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

.PHONY: help venv build-controlplane cluster-up cluster-down run lint unit coverage e2e e2e-upstream-1.36 test demo clean

help:
	@echo "make demo          local control plane + koordgang + example jobs, then a report"
	@echo "make test          install what the tests need, then lint, unit and e2e tests"
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
	@echo "==> mypy --strict koordgang"
	@$(VENV)/bin/mypy
	@echo "==> import-linter (layers import only downward)"
	@$(VENV)/bin/lint-imports

unit: $(STAMP)
	@echo "==> unit tests (the product, and the tools' own)"
	@$(PY) -m pytest koordgang tests controlplane bench soak -q $(PYTEST_ARGS)

# Coverage of the unit tests alone (no cluster), per module.
coverage: $(STAMP)
	@$(PY) -m pytest koordgang tests -q --cov=koordgang --cov-report=term $(PYTEST_ARGS)

e2e: $(STAMP) build-controlplane
	@echo "==> building the real clients the e2e tests run (training-operator, MPI operator, KubeRay, Kueue, Karpenter; about 8 minutes the first time)"
	@$(PY) -m harness.clients.build
	@echo "==> e2e tests on the local control plane (started and stopped by the suite)"
	@$(PY) -m pytest e2e -q $(PYTEST_ARGS)

# Clusters in the field run 1.36 and 1.37 side by side for a year, and the upstream gang API
# differs between them (v1alpha2 and v1beta1): its tests run again on a 1.36 plane.
e2e-upstream-1.36: $(STAMP)
	@echo "==> the upstream gang API on Kubernetes 1.36 (KUBE=1.36)"
	@KUBE=1.36 $(PY) -m controlplane build
	@KUBE=1.36 $(PY) -m pytest e2e -q -m upstream $(PYTEST_ARGS)

test: lint unit e2e e2e-upstream-1.36

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
