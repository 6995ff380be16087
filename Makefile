# Kassa: `make run` starts the whole stack for development; `make test` runs every test.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := -e . -e dev -e clients/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt pyproject.toml dev/pyproject.toml clients/*/pyproject.toml | sha1sum | cut -c1-12)
PYTEST_WORKERS ?= 2

.PHONY: run lint test test-unit test-integration test-e2e test-browser bench chaos chaos-ha mutate fuzz deps clean tools-test tools-bench tools-chaos

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt
	@$(BIN)/pip uninstall -q -y kassa-common kassa-api kassa-chain-watcher kassa-webhook-sender kassa-notifier \
		kassa-expirer kassa-relay kassa-settler kassa-sweeper 2>/dev/null || true  # before one pyproject
	$(BIN)/pip install -q --disable-pip-version-check --no-deps $(PACKAGES)
	@rm -f $(VENV)/.installed-* && touch $@

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

deps: $(STAMP) node_modules/.package-lock.json

run: deps
	$(BIN)/python -m kassa_dev.run

# System tools (Chromium, docker-compose, litecoind, wrk): installed with apt-get when missing and
# running as root, otherwise the target stops and says how to install them.
tools-test:
	@scripts/ensure-tools test chromium docker-compose litecoind

tools-bench:
	@scripts/ensure-tools bench wrk

tools-chaos:
	@scripts/ensure-tools chaos docker-compose

# Lint (ruff.toml, mypy.ini): ruff's rules and format over the tree, mypy over libs/ and
# services/ (strict on payments, refunds, messaging and chains), then the Python client's
# own strict mypy (clients/python/pyproject.toml). `make test` runs it first.
lint: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	cd clients/python && ../../$(BIN)/mypy

test: deps tools-test lint
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup

test-unit: deps
	$(BIN)/pytest tests/unit
test-integration: deps
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup tests/integration
test-e2e: deps
	$(BIN)/pytest tests/e2e
test-browser: deps tools-test
	$(BIN)/pytest tests/browser

# Schemathesis against the API over HTTP (tests/fuzz; docs/architecture.md#tests): every
# check and phase, a test-mode and a live-mode key, FUZZ_MAX_TIME seconds each (default 120).
fuzz: deps
	KASSA_FUZZ=1 $(BIN)/pytest -p no:xdist tests/fuzz -s -q

bench: deps tools-bench
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# Nothing lost (DESIGN §7): the stack under SIGKILLs and outages on its own PostgreSQL and
# RabbitMQ, then every count checked (~10 minutes; CHAOS_ARGS="--short" for ~2).
# CHAOS_ARGS="--ha" (or `make chaos-ha`; make itself would take `make chaos --ha` as an option
# of its own): a three-node RabbitMQ cluster and a PostgreSQL primary with a streaming
# standby, the node leading the queues killed and the primary failed over mid-run (~5 min).
chaos: deps tools-chaos
	$(BIN)/python -m kassa_dev.chaos $(CHAOS_ARGS)

chaos-ha: deps tools-chaos
	$(BIN)/python -m kassa_dev.chaos --ha $(CHAOS_ARGS)

# Mutation testing of the settlement, transition, scanner and EVM-reading modules with
# their focused tests (docs/mutation-testing.md; ~20 minutes, not part of `make test`).
# MUTATE_ARGS="--module quorum" for one module, "--list" to see the mutants.
mutate: deps
	$(BIN)/python -m kassa_dev.mutate $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) node_modules
