# Fulcrum: the one entry point. `make test` and `make demo` do all set-up themselves.
SHELL := /bin/bash
PYTHON := .venv/bin/python
PYTEST := $(PYTHON) -m pytest -p no:cacheprovider

.PHONY: help setup test test-host test-kernel test-webui demo

include webui/webui.mk

help:
	@echo "make demo         run the API on http://127.0.0.1:8000 with a local state directory"
	@echo "make test         install what is missing, then run every test (host + kernel VM)"
	@echo "make test-host    unit, renderer, apply-engine and API tests on this host"
	@echo "make test-kernel  kernel tests: boots Debian's kernel with virtme-ng, real IPVS inside"
	@echo "make test-webui   dashboard: client drift check, Vitest, Playwright in Chromium against the real API"

setup:
	@scripts/setup-host

test: setup
	$(MAKE) test-host
	$(MAKE) test-webui
	$(MAKE) test-kernel

test-host:
	$(PYTEST) -q tests/unit tests/api

test-kernel:
	tests/kernel/run-in-vm -q

test-webui: webui-setup webui-client-check webui-test webui-e2e

demo: setup
	scripts/demo-api
