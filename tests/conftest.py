"""Shared fixtures: a fresh, migrated PostgreSQL database per test run (per xdist worker),
the API app on it, and merchants with keys. Tests use random data, never truncate."""

from __future__ import annotations

import os
import secrets
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
import sqlalchemy as sa

from kassa_common.accounts import keys, merchants
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory, sqlalchemy_url, unit_of_work, with_database
from kassa_common.migrate import upgrade

ADMIN_URL = os.environ.get("TEST_DATABASE_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
ALL_SCOPES = list(keys.SCOPES)
# The kassa command reads .env from its working directory (make run writes one in the
# checkout): the tests give it their settings in the environment alone, whatever a
# developer's make run left there. Tests of the .env file itself unset this.
os.environ["KASSA_ENV_FILE"] = ""


@contextmanager
def fresh_database(tag: str, revision: str = "head"):
    """A new database migrated to ``revision`` (default: head), dropped afterwards."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"kassa_test_{tag}{worker}_{secrets.token_hex(4)}"
    url = with_database(ADMIN_URL, name)
    upgrade(url, revision)
    try:
        yield url
    finally:
        admin = sa.create_engine(sqlalchemy_url(ADMIN_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def database_url():
    with fresh_database("") as url:
        yield url


@pytest.fixture(scope="session")
def base_env(database_url):
    return {
        "DATABASE_URL": database_url,
        "RABBITMQ_URL": os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F"),
        "RATE_LIMIT_PER_MINUTE": "100000",
        "PUBLIC_CREATE_PER_MINUTE": "100000",
        "LOGIN_FAILURES_PER_ADDRESS": "100000",
        "SIGNUPS_PER_HOUR": "100000",
        "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        "LOCAL_EVM_RPC_URL": "http://127.0.0.1:8545",
        "DB_POOL_SIZE": "4",  # several suites may share one PostgreSQL (100 connections)
        # The tests run a development stack, like `make run`: published test keys in live mode
        # (the local chain's walk-through) and fixed rates for live coin payments.
        "KASSA_ENV": "development",
        "FIXED_RATES_ALLOW_LIVE": "true",
    }


@pytest.fixture(scope="session")
def settings(base_env) -> Settings:
    return Settings.from_env(base_env)


@pytest.fixture(scope="session")
def engine(settings):
    eng = make_engine(settings.database_url, pool_size=5)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def sessions(engine):
    return make_session_factory(engine)


@pytest.fixture(scope="session")
def app(settings, engine):
    from kassa_api.app import create_app

    return create_app(settings, engine=engine)


@pytest.fixture
def client(app):
    return app.test_client()


@dataclass
class MerchantKeys:
    id: uuid.UUID
    email: str
    keys: dict[str, str] = field(default_factory=dict)  # mode -> key with every scope

    @property
    def test_key(self) -> str:
        return self.keys["test"]

    @property
    def live_key(self) -> str:
        return self.keys["live"]

    def headers(self, mode: str = "test", **extra: str) -> dict[str, str]:
        return {"X-Api-Key": self.keys[mode], **extra}


@pytest.fixture
def make_merchant(sessions):
    def make(
        *, activated: bool = True, business_name: str | None = "Acme Ltd", scopes=None, banned: bool = False
    ) -> MerchantKeys:
        email = f"m-{secrets.token_hex(6)}@example.com"
        with unit_of_work(sessions) as s:
            m = merchants.create_merchant(s, email, None, business_name, activated)
            m.banned = banned
            mk = MerchantKeys(m.id, email)
            for mode in ("test", "live"):
                mk.keys[mode] = keys.create_key(s, m.id, mode, scopes or ALL_SCOPES).key
        return mk

    return make


@pytest.fixture
def merchant(make_merchant) -> MerchantKeys:
    return make_merchant()


def make_key(sessions, merchant_id, mode: str, scopes: list[str]) -> str:
    with unit_of_work(sessions) as s:
        return keys.create_key(s, merchant_id, mode, scopes).key


def pytest_collection_modifyitems(items):
    for item in items:
        # the layer is the folder under tests/ (integration tests are grouped by area below it)
        layer = next((p for p in item.path.parts[::-1] if p in ("unit", "integration", "e2e", "browser")), None)
        if layer:
            item.add_marker(getattr(pytest.mark, layer))


@pytest.fixture(scope="session")
def browser():
    """Real Chromium, one per test process: Playwright's sync API allows one instance per
    process, so the browser tests and the end-to-end tests that open a page share it."""
    from playwright.sync_api import sync_playwright

    from tests.support.chromium import CHROMIUM_ARGS, chromium_path

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield b
        b.close()
