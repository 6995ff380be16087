"""The running stack, shared by every e2e test of this worker (one xdist group)."""

from __future__ import annotations

import pytest

from kassa_common.db import make_engine, make_session_factory
from tests.conftest import fresh_database
from tests.support.bus import private_topology
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.smtp import smtp_server
from tests.support.stack import Stack
from tests.support.tcpproxy import TcpProxy


def pytest_collection_modifyitems(items):
    for item in items:  # a module in a group of its own (the chaos run) keeps it
        if item.path.parent.name in ("e2e", "browser") and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group("stack"))


@pytest.fixture(scope="session")
def stack_database_url():
    """The stack gets a database of its own: its relay, expirer and webhook dispatcher must not
    race the in-process integration tests that share this worker's database."""
    with fresh_database("stack_") as url:
        yield url


@pytest.fixture(scope="session")
def sessions(stack_database_url):
    """Overrides the root fixture for e2e and browser tests: the stack's database."""
    engine = make_engine(stack_database_url, pool_size=3)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.fixture(scope="session")
def broker_proxy():
    proxy = TcpProxy("127.0.0.1", 5672)
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.fixture(scope="session")
def stack(base_env, stack_database_url, broker_proxy, tmp_path_factory):
    with private_topology(base_env["RABBITMQ_URL"]) as (prefix, _topo), smtp_server() as (inbox, smtp_port):
        env = {
            **base_env,
            "DATABASE_URL": stack_database_url,
            "RABBITMQ_URL": f"amqp://guest:guest@127.0.0.1:{broker_proxy.port}/%2F",
            "BUS_PREFIX": prefix,
            "TEST_MODE_COMPLETE_SECONDS": "1",
            "WEBHOOK_RETRY_SCHEDULE": "1,1,1,1",
            "LOG_LEVEL": "INFO",
            "SMTP_URL": f"smtp://127.0.0.1:{smtp_port}",  # the pages promise only what is sent
        }
        s = Stack(env, tmp_path_factory.mktemp("stack-logs")).start_all()
        s.inbox = inbox  # what the stack's notifier sent
        yield s
        s.stop_all()
