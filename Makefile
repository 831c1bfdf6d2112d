# Fulcrum: the one entry point. `make test` and `make demo` do all set-up themselves.
SHELL := /bin/bash
PYTHON := .venv/bin/python
PYTEST := $(PYTHON) -m pytest -p no:cacheprovider

.PHONY: help setup lint lint-python lint-imports lint-shell test test-host test-fuzz fuzz test-kernel test-webui test-webui-lab demo

include webui/webui.mk
include image/image.mk
include buildroot/buildroot.mk
include tests/bench/bench.mk

help:
	@echo "make demo         boots the IPVS VM with an HA pair, 3 backends and live traffic; the dashboards"
	@echo "                  on http://127.0.0.1:8080 and :8081 (prints a generated admin password)"
	@echo "make test         install what is missing, then make lint and every test, in two lanes side by side"
	@echo "make lint         ruff (lint, format), mypy, eslint, knip, shellcheck (the first step of make test)"
	@echo "make test-host    unit, renderer, apply-engine and API tests on this host"
	@echo "make lint-imports the layer contract of api/src/fulcrum (import-linter, api/pyproject.toml; part of make lint)"
	@echo "make test-fuzz    schemathesis over every API operation, short budget (part of make test)"
	@echo "make fuzz         the same with the full budget: 100 examples per operation (not in make test)"
	@echo "make test-kernel  kernel tests: boots Debian's kernel with virtme-ng, real IPVS inside"
	@echo "make test-webui   dashboard: client drift check, Vitest, Playwright in Chromium against the real API"
	@echo "make test-webui-lab  Playwright against make demo's HA pair in the VM: a new service and its live traffic"
	@echo "make bench        benchmarks in the kernel VM (not part of make test): report in bench-results/<time>/"
	@echo "make test-image   build the appliance VM image from Debian packages and boot-test it in qemu"
	@echo "make test-image-pair  only the image test of an HA pair: two appliance VMs, a failover, a rejoin, the pair upgraded"
	@echo "make vm-image     build image/out/fulcrum.qcow2; make vm boots it (dashboard on https://127.0.0.1:8443)"
	@echo "make bundle       a signed RAUC bundle of the image's root file system (image/rauc/README.md)"
	@echo "make image        the Buildroot release build (needs upstream network access)"
	@echo "make buildroot-check BUILDROOT_SRC=DIR   check the Buildroot tree against a Buildroot source"
	@echo "make kernel-fragment-check   the Buildroot kernel fragment through a Linux source's kconfig (in make test)"
	@echo "make parts-check  the Debian image and the Buildroot build carry the same parts (image/parts.tsv; in make test)"

setup:
	@scripts/setup-host

# Set-up and the dashboard's build once, then two lanes side by side (scripts/test-lanes: why, and
# where each lane's output goes). First in line for the CPU, the VMs one after the other, whose
# timings are the product's own (VRRP, failover, the drill's hand-over, an appliance's boot check):
# the kernel suite, the VM lab's dashboard specs, the appliance images. Niced into the cores they
# leave idle: the host suites, then the image's build (done long before the kernel suite is;
# vm-image's lock covers a kernel run that ends sooner). The VM lab ran in the host lane once, beside
# the image test's VM: starved, its drill's hand-over missed its 15 s. WEBUI_READY keeps every lane
# from reinstalling node_modules or rebuilding webui/dist while another lane reads them (the image
# copies dist, Playwright serves it).
test: setup
	$(MAKE) webui-setup
	$(MAKE) webui-build
	WEBUI_READY=1 scripts/test-lanes \
		"vm: test-kernel test-webui-lab test-image" \
		"host+10: lint test-host test-fuzz kernel-fragment-check parts-check test-webui vm-image"

# Static checks, fast (no server, no VM). Configuration: api/pyproject.toml ([tool.ruff], [tool.mypy]),
# webui/eslint.config.js, webui/knip.json; the shell scripts are picked by scripts/lint-shell.
lint: lint-python lint-imports webui-lint lint-shell

lint-python:
	.venv/bin/ruff check api
	.venv/bin/ruff format --check api
	cd api && ../.venv/bin/mypy

lint-shell:
	scripts/lint-shell

# Two workers (pytest-xdist): every host test keeps to its own tmp dir, SQLite file and free ports.
test-host:
	$(PYTEST) -q -n 2 tests/unit tests/api

# import-linter reads its contracts from the pyproject.toml of the directory it runs in.
lint-imports:
	cd api && ../.venv/bin/lint-imports --no-cache

test-fuzz:
	$(PYTEST) -q -s tests/fuzz

fuzz:
	$(PYTHON) tests/fuzz/run_fuzz.py --max-examples 100 --report-dir fuzz-report

test-kernel:
	tests/kernel/run-in-vm -q

test-webui: $(WEBUI_SETUP) webui-client-check webui-test webui-e2e

test-webui-lab: $(WEBUI_SETUP) $(WEBUI_BUILD)
	webui/e2e-lab/run

demo: setup
	$(MAKE) webui-setup webui-build
	scripts/demo
