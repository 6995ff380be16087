"""Publishing with publisher confirms, batched: send a batch, then wait once for the
broker to confirm all of it (one confirm per message caps out near 1k msgs/s here).

pika's BlockingChannel waits for each confirm in turn, so the batch path uses the
underlying asynchronous channel (``BlockingChannel._impl``) for the sends and the
blocking connection's event loop to collect the Basic.Ack/Nack frames. That loop returns
early only for events of its own, which the asynchronous channel's confirms are not: the
last confirm schedules one (``call_later(0, …)``), or every publish would wait out the
whole time slice (50 ms) however fast the broker answered.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel
from pika.channel import Channel
from pika.frame import Method
from pika.spec import Basic, BasicProperties, Confirm

log = logging.getLogger("kassa.bus")


class PublishFailed(Exception):
    pass


@dataclass(frozen=True)
class Message:
    message_id: str
    routing_key: str
    body: dict[str, Any]
    headers: dict[str, Any] | None = None


def _nothing() -> None:
    pass


def async_channel(channel: BlockingChannel) -> Channel:
    """The asynchronous channel under a blocking one (pika's ``_impl``, which its stubs omit)."""
    impl: Channel = channel._impl  # type: ignore[attr-defined]
    return impl


def node_urls(url: str) -> list[str]:
    """The nodes ``RABBITMQ_URL`` lists: one ``amqp://`` (or ``amqps://``) URL, or several
    separated by commas (a cluster's nodes, each with its credentials and virtual host)."""
    urls = [u.strip() for u in url.split(",")]
    if not urls or not all(urls) or any(not u.startswith(("amqp://", "amqps://")) for u in urls):
        raise ValueError("must be amqp://user:password@host:port/vhost, or several such URLs separated by commas")
    return urls


def connection_parameters(url: str, name: str) -> list[pika.URLParameters]:
    """Connection parameters for each node of ``url``, in order: pika's ``BlockingConnection``
    takes the list and connects to the first node that answers."""
    out = []
    for node in node_urls(url):
        params = pika.URLParameters(node)
        params.heartbeat = 30
        params.blocked_connection_timeout = 30
        params.connection_attempts = 1
        params.client_properties = {"connection_name": name}
        out.append(params)
    return out


class Nodes:
    """The broker's nodes, for a client that reconnects: the node a connection was made to
    goes last in the order the next connection tries them, so a client whose node died goes
    to another one first (a host that no longer answers costs a connect timeout to try)
    and a cluster's clients spread over its nodes as they fail over."""

    def __init__(self, url: str, name: str) -> None:
        self._params = connection_parameters(url, name)
        self._index = 0

    @property
    def params(self) -> list[pika.URLParameters]:
        return self._params[self._index :] + self._params[: self._index]

    def connect(self) -> pika.BlockingConnection:
        order = self.params
        conn = pika.BlockingConnection(order)
        used = getattr(getattr(conn, "_impl", None), "params", None)  # the node pika settled on
        for params in order:
            if params is used:
                self._index = (self._params.index(params) + 1) % len(self._params)
        return conn


class Publisher:
    """A connection and a confirm-mode channel; reconnects on the next call after a failure."""

    def __init__(
        self,
        url: str,
        exchange: str,
        *,
        name: str = "kassa-publisher",
        timeout: float = 10.0,
        declare: Callable[[BlockingChannel], None] | None = None,
    ) -> None:
        self.url, self.exchange, self.name, self.timeout = url, exchange, name, timeout
        self.declare = declare  # declares the topology on each new connection
        self.nodes = Nodes(url, name)
        self._conn: pika.BlockingConnection | None = None
        self._channel: BlockingChannel | None = None
        self._next_tag = 1
        self._pending: set[int] = set()
        self._nacked: set[int] = set()

    def _connect(self) -> tuple[pika.BlockingConnection, BlockingChannel]:
        if self._conn is not None and self._conn.is_open and self._channel is not None and self._channel.is_open:
            return self._conn, self._channel
        self.close()
        conn = self._conn = self.nodes.connect()
        channel = self._channel = conn.channel()
        if self.declare is not None:
            self.declare(channel)
        self._next_tag = 1
        ready: list[bool] = []

        def confirming(_frame: Method[Confirm.SelectOk]) -> None:
            ready.append(True)
            conn.call_later(0, _nothing)  # ends the wait below at once

        async_channel(channel).confirm_delivery(self._on_confirm, callback=confirming)
        deadline = time.monotonic() + self.timeout
        while not ready:
            if time.monotonic() > deadline:
                raise PublishFailed("broker did not enable confirms")
            conn.process_data_events(time_limit=0.05)  # type: ignore[arg-type]  # a float: pika's stubs say int
        return conn, channel

    @property
    def channel(self) -> BlockingChannel:
        return self._connect()[1]

    def _on_confirm(self, frame: Method[Basic.Ack | Basic.Nack]) -> None:
        method = frame.method
        tags = {t for t in self._pending if t <= method.delivery_tag} if method.multiple else {method.delivery_tag}
        self._pending -= tags
        if isinstance(method, Basic.Nack):
            self._nacked |= tags
        if not self._pending and self._conn is not None:
            self._conn.call_later(0, _nothing)  # ends the wait in ``process_data_events`` now

    def publish_batch(self, messages: Iterable[Message]) -> None:
        """Publish every message persistently; return once the broker confirmed them all."""
        try:
            conn, channel = self._connect()
            impl = async_channel(channel)
            self._pending.clear()
            self._nacked.clear()
            for m in messages:
                props = pika.BasicProperties(
                    content_type="application/json",
                    delivery_mode=2,
                    message_id=m.message_id,
                    type=m.routing_key,
                    timestamp=int(time.time()),
                    headers=m.headers or None,
                )
                impl.basic_publish(
                    self.exchange, m.routing_key, json.dumps(m.body, separators=(",", ":")).encode(), props
                )
                self._pending.add(self._next_tag)
                self._next_tag += 1
            deadline = time.monotonic() + self.timeout
            while self._pending:
                if time.monotonic() > deadline:
                    raise PublishFailed(f"{len(self._pending)} messages not confirmed in {self.timeout}s")
                conn.process_data_events(time_limit=0.05)  # type: ignore[arg-type]  # a float: pika's stubs say int
            if self._nacked:
                raise PublishFailed(f"broker refused {len(self._nacked)} messages")
        except PublishFailed:
            self.close()
            raise
        except Exception as exc:  # connection errors of every kind: the caller retries later
            self.close()
            raise PublishFailed(f"publish failed: {exc!r}") from exc

    def close(self) -> None:
        conn, self._conn, self._channel = self._conn, None, None
        if conn is not None:
            try:
                if conn.is_open:
                    conn.close()
            except Exception:  # noqa: BLE001, S110 - closing a broken connection
                pass


def republished(props: BasicProperties, headers: dict[str, Any], timestamp: int | None) -> BasicProperties:
    """The properties of a message published again (a retry, a dead letter moved back): the
    same id, type and content type, persistent, with ``headers`` and ``timestamp``."""
    return pika.BasicProperties(
        content_type=props.content_type,
        delivery_mode=2,
        message_id=props.message_id,
        type=props.type,
        headers=headers,
        timestamp=timestamp,
    )
