"""One bootstrap: what ``wire`` builds for a process, and the stop order of ``run``.
Nothing here reaches a server: ``wire`` must not connect."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

import pytest

from kassa_common import bootstrap, db
from kassa_common.bootstrap import wire
from kassa_common.config import Settings
from kassa_common.messaging import topology
from kassa_common.worker import loop

# Ports nothing listens on: wiring must succeed without them.
UNREACHABLE = Settings.from_env(
    {
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none",
        "RABBITMQ_URL": "amqp://nobody:x@127.0.0.1:9/%2F",
        "BUS_PREFIX": "t-abc",
    }
)


@contextmanager
def own_signal_handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def handler(session, msg) -> None:
    pass


def test_wire_builds_the_process_dependencies_without_connecting():
    worker = wire(UNREACHABLE, "settler")
    try:
        assert worker.engine.pool.checkedout() == 0
        assert worker.engine.url.database == "none"
        assert worker.sessions.kw["bind"] is worker.engine
        assert worker.topology == topology.named("t-abc")
    finally:
        worker.close()


def test_a_process_is_named_kassa_name_in_postgres_and_rabbitmq(monkeypatch):
    made = {}

    def make_engine(url, *, pool_size, application_name):
        made.update(application_name=application_name, pool_size=pool_size)
        return db.make_engine(url, pool_size=pool_size, application_name=application_name)

    monkeypatch.setattr(bootstrap, "make_engine", make_engine)
    worker = wire(UNREACHABLE, "expirer", pool_size=3)
    assert made == {"application_name": "kassa-expirer", "pool_size": 3}
    assert worker.publisher().name == "kassa-expirer"
    assert worker.publisher("local_evm").name == "kassa-expirer-local_evm"
    consumer = worker.consumer(worker.topology.settler, handler, prefetch=7)
    assert (consumer.name, consumer.queue.name, consumer.prefetch) == ("kassa-expirer", "t-abc.settler.transfers", 7)
    worker.close()


def test_publishers_use_the_private_exchange_under_bus_prefix():
    publisher = wire(UNREACHABLE, "relay").publisher()
    assert publisher.exchange == "t-abc.kassa.events" and publisher.declare is not None


def test_sigterm_stops_taking_work_then_drains_then_closes():
    worker = wire(UNREACHABLE, "relay")
    order: list[str] = []
    stop = threading.Event()
    worker.close = lambda: order.append("close")

    def run() -> None:
        signal.raise_signal(signal.SIGTERM)
        assert stop.wait(5)
        order.append("run returned")

    def on_stop() -> None:
        order.append("stop taking work")
        stop.set()

    with own_signal_handlers():
        worker.run(run, on_stop, drain=lambda: order.append("drain"))
    assert order == ["stop taking work", "run returned", "drain", "close"]


def test_connections_close_even_when_the_work_fails():
    worker = wire(UNREACHABLE, "relay")
    closed = []
    worker.close = lambda: closed.append(True)

    def run() -> None:
        raise RuntimeError("boom")

    with own_signal_handlers(), pytest.raises(RuntimeError):
        worker.run(run, lambda: None)
    assert closed == [True]


def test_poll_ticks_until_sigint_and_a_failed_tick_does_not_end_it():
    worker = wire(UNREACHABLE, "expirer")
    worker.close = lambda: None
    ticks = []

    def tick() -> bool:
        ticks.append(len(ticks))
        if len(ticks) == 2:
            raise RuntimeError("one bad tick")
        if len(ticks) == 4:
            signal.raise_signal(signal.SIGINT)
        return True

    with own_signal_handlers():
        worker.poll(tick, interval=0.01)
    assert len(ticks) == 4


def test_loop_waits_the_interval_only_when_idle():
    stop = threading.Event()
    calls = []

    def tick() -> bool:
        calls.append(1)
        if len(calls) == 3:
            stop.set()
        return True

    loop(tick, stop, interval=60)  # busy ticks never wait, so this returns at once
    assert len(calls) == 3
