# Kassa: `make run` starts the whole stack for development; `make test` runs every test.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := -e . -e dev -e clients/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt pyproject.toml dev/pyproject.toml clients/*/pyproject.toml | sha1sum | cut -c1-12)
PYTEST_WORKERS ?= 2

.PHONY: run test test-unit test-integration test-e2e test-browser bench chaos deps clean tools-test tools-bench tools-chaos

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

# System tools (Chromium, docker-compose, wrk): installed with apt-get when missing and
# running as root, otherwise the target stops and says how to install them.
tools-test:
	@scripts/ensure-tools test chromium docker-compose

tools-bench:
	@scripts/ensure-tools bench wrk

tools-chaos:
	@scripts/ensure-tools chaos docker-compose

test: deps tools-test
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup

test-unit: deps
	$(BIN)/pytest tests/unit
test-integration: deps
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup tests/integration
test-e2e: deps
	$(BIN)/pytest tests/e2e
test-browser: deps tools-test
	$(BIN)/pytest tests/browser

bench: deps tools-bench
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# Nothing lost (DESIGN §7): the stack under SIGKILLs and outages on its own PostgreSQL and
# RabbitMQ, then every count checked (~10 minutes; CHAOS_ARGS="--short" for ~2).
chaos: deps tools-chaos
	$(BIN)/python -m kassa_dev.chaos $(CHAOS_ARGS)

clean:
	rm -rf $(VENV) node_modules
