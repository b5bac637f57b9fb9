# Two commands on a fresh machine: `make run` and `make test`. Nothing else needs installing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
INSTALLED := node_modules/.installed

.PHONY: help install run test lint format codegen codegen-check typecheck bench contract clean-data

help: ## This list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(INSTALLED): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(INSTALLED) ## Install the exact dependencies of package-lock.json (only when they changed)

run: install ## Serve /v1 (embedded PostgreSQL unless DATABASE_URL is set; demo organisation on first start)
	npm start

test: install ## The whole suite on a real PostgreSQL (embedded unless DATABASE_URL is set)
	@mkdir -p .data && rm -f .data/test-results.json
	@npx vitest run --reporter=default --reporter=json --outputFile.json=.data/test-results.json; status=$$?; \
	  if [ -f .data/test-results.json ]; then node scripts/test-summary.mjs .data/test-results.json; fi; exit $$status

lint: install codegen-check typecheck ## Format and lint the TypeScript (Biome), lint openapi.yaml, check generated code is fresh, type-check
	npx biome check --error-on-warnings
	npx redocly lint openapi.yaml --format=stylish

format: install ## Format the TypeScript and apply Biome's safe fixes (import order included)
	npx biome check --write

codegen: install ## Regenerate codegen/ from openapi.yaml
	npm run --silent codegen

codegen-check: install ## Fail when codegen/ is stale against openapi.yaml
	npm run --silent codegen:check

typecheck: install
	npx tsc --noEmit

contract: install ## The contract suite: Prism mocks, the real server, and the server behind prism proxy --errors
	npx vitest run tests/contract.

bench: install ## Benchmarks with their targets (see tests/bench/)
	npx tsx tests/bench/run.ts

clean-data: ## Delete the embedded database and demo keys (.data/)
	rm -rf .data
