"""Messages that fail by themselves: retried with their routing key intact, dead-lettered
after their attempts, visible to the operator (`kassa bus status`, `/readyz`, the metric)
and moved back with `kassa bus redrive QUEUE`, after which they are handled once."""

from __future__ import annotations

import json
import os
import subprocess
import threading

import pytest

from kassa_common.messaging.consumer import Consumer
from kassa_common.messaging.publisher import Publisher
from kassa_common.messaging.topology import MAX_ATTEMPTS
from tests.support.bus import private_topology, publish_numbered, queue_depth
from tests.support.wait import until

RETRY_DELAY_MS = 100


class Flaky:
    """A handler that fails its first ``failures`` calls per message, then records the message."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls, self.handled = failures, {}, []

    def __call__(self, session, msg):
        n = self.calls[msg.message_id] = self.calls.get(msg.message_id, 0) + 1
        if n <= self.failures:
            raise RuntimeError(f"fails by itself ({n})")
        self.handled.append((msg.message_id, msg.routing_key))


@pytest.fixture
def bus(base_env):
    with private_topology(base_env["RABBITMQ_URL"], retry_delay_ms=RETRY_DELAY_MS) as (prefix, topo):
        yield prefix, topo


@pytest.fixture
def consume(bus, base_env, sessions):
    started = []

    def start(handler) -> Consumer:
        consumer = Consumer(base_env["RABBITMQ_URL"], bus[1], bus[1].settler, handler, sessions, name="kassa-test")
        thread = threading.Thread(target=consumer.run, daemon=True)
        thread.start()
        started.append((consumer, thread))
        return consumer

    yield start
    for consumer, thread in started:
        consumer.stop()
        thread.join(30)


def kassa(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [os.path.join(os.path.dirname(os.sys.executable), "kassa"), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_message_that_failed_once_is_retried_with_its_routing_key(bus, base_env, consume):
    _prefix, topo = bus
    handler = Flaky(failures=1)
    consume(handler)
    ids = publish_numbered(base_env["RABBITMQ_URL"], topo, 3)
    until(lambda: len(handler.handled) == 3, timeout=20, message="the retried messages to be handled")
    assert sorted(handler.handled) == sorted((i, "chain.transfer.confirmed") for i in ids)
    assert queue_depth(base_env["RABBITMQ_URL"], topo.settler.dlq) == 0


def test_a_message_failing_every_attempt_is_dead_lettered_shown_and_redriven_once(bus, base_env, consume, tmp_path):
    prefix, topo = bus
    rabbit = base_env["RABBITMQ_URL"]
    failing = Flaky(failures=MAX_ATTEMPTS)  # every attempt of its budget fails
    consumer = consume(failing)
    ids = publish_numbered(base_env["RABBITMQ_URL"], topo, 4)
    until(lambda: queue_depth(rabbit, topo.settler.dlq) == 4, timeout=30, message="4 messages in the DLQ")
    assert failing.handled == []

    # the operator sees it: kassa bus status, the metric, /readyz (below, through the web)
    env = {**base_env, "BUS_PREFIX": prefix}
    status = kassa(env, "--json", "bus", "status")
    assert status.returncode == 0, status.stderr
    depths = {q["name"]: q for q in json.loads(status.stdout)["queues"]}
    assert depths[topo.settler.dlq]["messages"] == 4 and depths[topo.settler.dlq]["role"] == "dlq"
    assert depths[topo.settler.name]["consumers"] == 1
    text = kassa(env, "bus", "status")
    assert topo.settler.dlq in text.stdout and "4" in text.stdout

    # once the cause is fixed (here: the next attempt succeeds), redrive moves them back
    consumer.stop()
    recovered = Flaky(failures=0)
    consume(recovered)
    moved = kassa(env, "bus", "redrive", "settler.transfers.dlq")
    assert moved.returncode == 0, moved.stderr
    assert "4" in moved.stdout
    until(lambda: len(recovered.handled) == 4, timeout=20, message="the redriven messages to be handled")
    assert sorted(m for m, _ in recovered.handled) == sorted(ids)
    assert {k for _, k in recovered.handled} == {"chain.transfer.confirmed"}
    assert queue_depth(rabbit, topo.settler.dlq) == 0
    again = kassa(env, "--json", "bus", "redrive", "settler.transfers.dlq")
    assert json.loads(again.stdout) == {"queue": topo.settler.dlq, "moved": 0, "to": topo.settler.name}


def test_redrive_of_an_unknown_queue_names_the_dead_letter_queues(bus, base_env):
    prefix, _topo = bus
    r = kassa({**base_env, "BUS_PREFIX": prefix}, "bus", "redrive", "no.such.queue")
    assert r.returncode == 1
    assert "settler.transfers.dlq" in r.stderr and "webhook-sender.events.dlq" in r.stderr


def test_readyz_and_metrics_report_dead_letters_by_queue(bus, base_env, settings, engine):
    from kassa_api.app import create_app

    prefix, topo = bus
    token = "dead-letters-" + "t" * 20  # the details are the operator's (METRICS_TOKEN)
    client = create_app(settings.with_(bus_prefix=prefix, web={"metrics_token": token}), engine=engine).test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    healthy = client.get("/readyz")
    assert healthy.status_code == 200
    assert healthy.get_json()["status"] == "ok"
    assert healthy.get_json()["dead_letters"] == {q.dlq: 0 for q in topo.queues}

    publisher = Publisher(base_env["RABBITMQ_URL"], topo.exchange)
    publisher.channel.basic_publish("", topo.webhook_intake.dlq, b"{}")  # one dead letter
    publisher.close()
    client.application.extensions.pop("kassa_bus_status", None)  # no cached answer
    degraded = client.get("/readyz")
    assert degraded.status_code == 200  # still serving: the API does not need the DLQ empty
    body = degraded.get_json()
    assert body["status"] == "degraded"
    assert body["dead_letters"] == {**{q.dlq: 0 for q in topo.queues}, topo.webhook_intake.dlq: 1}

    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert metrics.mimetype == "text/plain"
    line = f'kassa_bus_queue_messages{{queue="{topo.webhook_intake.dlq}",role="dlq"}} 1.0'
    assert line in metrics.get_data(as_text=True)
