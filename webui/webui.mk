# Web UI targets; included from the top-level Makefile (paths relative to the repo root).
WEBUI := webui
WEBUI_PY := $(CURDIR)/.venv/bin/python
# The OpenAPI schema dumped from the API package: no server needed, deterministic.
WEBUI_DUMP_SCHEMA = $(WEBUI_PY) -c "import json; from fulcrum.main import create_app; print(json.dumps(create_app().openapi(), indent=2, sort_keys=True))"

# make test installs and builds the dashboard once, before its lanes, and sets WEBUI_READY: then no
# target here reinstalls node_modules or rebuilds webui/dist under another lane's feet.
ifndef WEBUI_READY
WEBUI_SETUP := webui-setup
WEBUI_BUILD := webui-build
endif

.PHONY: webui-setup webui-client webui-client-check webui-lint webui-typecheck webui-build webui-test webui-e2e webui-all

# Not `npm ci`: the registry these machines reach lacks other platforms' optional packages (e.g.
# @rollup/rollup-darwin-x64 answers 404), so the lock can never list them and `npm ci` refuses it.
# `npm install --no-save` installs the lock's pinned versions and leaves the lock untouched.
webui-setup:
	cd $(WEBUI) && npm install --no-save --no-audit --no-fund

webui-client:
	$(WEBUI_DUMP_SCHEMA) > $(WEBUI)/openapi/openapi.json
	cd $(WEBUI) && npx openapi-ts

# CI drift check: the committed schema and client must equal a fresh generation.
webui-client-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(WEBUI_DUMP_SCHEMA) > $$tmp/openapi.json && \
	(cd $(WEBUI) && FULCRUM_OPENAPI=$$tmp/openapi.json FULCRUM_CLIENT_OUT=$$tmp/client npx openapi-ts >/dev/null) && \
	diff -u $(WEBUI)/openapi/openapi.json $$tmp/openapi.json && diff -ru $(WEBUI)/src/client $$tmp/client && \
	echo "webui client is up to date" || { echo "webui client is stale: run 'make webui-client'"; exit 1; }

# eslint (webui/eslint.config.js) and knip: unused files, exports and dependencies (webui/knip.json).
webui-lint: $(WEBUI_SETUP)
	cd $(WEBUI) && npx eslint . && npx knip

webui-typecheck:
	cd $(WEBUI) && npx tsc -b

webui-build: webui-typecheck
	cd $(WEBUI) && npx vite build

webui-test:
	cd $(WEBUI) && npx vitest run

# Needs Debian's chromium (apt-get install -y chromium) and the built UI; starts the real API
# with a throw-away database on port 8124 (FULCRUM_E2E_PORT), and e2e/ha.spec.ts a second one,
# the HA peer, on port 8125 (FULCRUM_E2E_PEER_PORT), which it stops to see the peer go missing.
webui-e2e: $(WEBUI_BUILD)
	cd $(WEBUI) && npx playwright test

webui-all: webui-client-check webui-test webui-e2e
