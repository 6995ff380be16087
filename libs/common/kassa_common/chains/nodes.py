"""Several nodes for one network: failover with health tracking, and the chain check.

A network may list several RPC nodes (``<NETWORK>_RPC_URLS``, in order of preference).
``NodePool`` answers ``call`` and ``batch`` like one ``JsonRpc``, so the chain readers
(``evm``, ``bitcoin``, ``balances``) need not know, and ``raw`` for web3 (``provider``):

- Every request goes to one node, the *reader*: the first node of the list that is in
  service. Reading stays on it; what other nodes say is only asked for cross-checks
  (``quorum``).
- A node that does not answer, rate limits us (HTTP 429, a "rate limit" error) or answers
  something that is not JSON-RPC is set aside for a while: its own backoff, 1 s doubling up
  to 60 s, drawn from the upper half (jitter), and at least the ``Retry-After`` it asked
  for. The same request goes to the next node at once: a failover.
- Before a node serves (its first request, after it was set aside, and whenever the reader
  changes) its chain is checked: ``eth_chainId`` (EVM) or ``getblockchaininfo``'s ``chain``
  (Bitcoin) must be the network's. A node on another chain is refused with an ERROR log
  saying what it answered, and asked again only after ``REFUSED_SECONDS``.
- With no node in service the request raises ``NoNode`` (an ``RpcUnavailable`` whose
  ``retry_after`` is when the first node comes back): callers back off as for one node.

Logs and errors show a node as ``node 2 (https://host:port)``: never its path, query or
user info (``rpc.redact``), where hosted providers put the key. Each node's state is in
the metrics below (``kassa_rpc_node_up``, ``_refused``, ``_failures_total``, ``kassa_rpc_failovers_total``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Gauge

from kassa_common.chains.networks import Network
from kassa_common.chains.rpc import BadAnswer, JsonRpc, RpcError, RpcUnavailable, redact

# Each node's state, whoever reads through the pool (the chain-watcher, the sweeper).
NODE = ["network", "node", "url"]

NODE_UP = Gauge(
    "kassa_rpc_node_up",
    "1 while the node is in service, 0 while it is set aside (failing, rate limiting us, or on the wrong chain)",
    NODE,
)
NODE_REFUSED = Gauge(
    "kassa_rpc_node_refused",
    "1 while the node is refused because it answers another chain id (or Bitcoin chain) than the network's",
    NODE,
)
NODE_FAILURES = Counter(
    "kassa_rpc_node_failures_total",
    "Requests a node failed (no answer, rate limit, not JSON-RPC), each setting it aside for a while",
    NODE,
)
FAILOVERS = Counter("kassa_rpc_failovers_total", "Times the node a network is read from changed", ["network"])

log = logging.getLogger("kassa.chain_watcher")
SET_ASIDE_SECONDS = 1.0  # the first wait of a failing node; doubles with each failure in a row
SET_ASIDE_CAP = 60.0
REFUSED_SECONDS = 300.0  # a node on the wrong chain is asked again after this
FAILURES = (RpcUnavailable, BadAnswer)  # what a node is set aside for (an error answer is the request's)


class NoNode(RpcUnavailable):
    """No node of the network is in service now (each failing, rate limiting or refused)."""


def chain_mismatch(network: Network, rpc: JsonRpc) -> str | None:
    """Why the node behind ``rpc`` is not on ``network``'s chain, or None when it is."""
    try:
        if network.kind == "evm":
            if network.chain_id is None:
                return None
            got = int(rpc.call("eth_chainId"), 16)
            return None if got == network.chain_id else f"it answers chain id {got}, not {network.chain_id}"
        if network.bitcoin_chain is None:
            return None
        chain = (rpc.call("getblockchaininfo") or {}).get("chain")
        return (
            None
            if chain == network.bitcoin_chain
            else f"it is on Bitcoin chain {chain!r}, not {network.bitcoin_chain!r}"
        )
    except FAILURES:
        raise
    except (RpcError, TypeError, ValueError, AttributeError) as exc:
        return f"it cannot tell its chain ({exc})"


@dataclass
class Node:
    index: int  # from 1, its place in the list
    rpc: JsonRpc
    failures: int = 0  # in a row
    until: float = 0.0  # set aside until then (monotonic clock)
    checked: bool = False  # its chain was checked since it last came (back) into service
    refused: str | None = None  # why it is on another chain
    problem: str | None = None  # the failure already logged in the current streak

    @property
    def name(self) -> str:
        return f"node {self.index} ({self.rpc.where})"

    def labels(self, network: str) -> dict[str, str]:
        return {"network": network, "node": str(self.index), "url": self.rpc.where}


class NodePool:
    def __init__(
        self,
        network: Network,
        *,
        version: str = "2.0",
        timeout: float = 15.0,
        urls: Sequence[str] | None = None,
        check: Callable[[Network, JsonRpc], str | None] = chain_mismatch,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[float, float], float] = random.uniform,
    ) -> None:
        urls = list(urls if urls is not None else network.nodes)
        if not urls:
            raise ValueError(f"{network.name} has no RPC node: set {network.name}_RPC_URLS or {network.name}_RPC_URL")
        self.network, self.name = network, network.name
        self.nodes = [Node(i + 1, JsonRpc(u, timeout=timeout, version=version)) for i, u in enumerate(urls)]
        self.urls = tuple(urls)
        self._check, self._clock, self._jitter = check, clock, jitter
        self.reader: Node | None = None
        for node in self.nodes:
            NODE_UP.labels(**node.labels(self.name)).set(1)
            NODE_REFUSED.labels(**node.labels(self.name)).set(0)

    def __repr__(self) -> str:
        return f"NodePool({self.name}: {', '.join(n.rpc.where for n in self.nodes)})"

    @property
    def where(self) -> str:
        """The reader, as logs may show it."""
        return self.reader.name if self.reader else f"{self.name} nodes"

    # -- JsonRpc's interface, on the reader -------------------------------------------------
    def call(self, method: str, *params: Any) -> Any:
        return self._on_reader(lambda rpc: rpc.call(method, *params))

    def batch(self, calls: Sequence[tuple[str, Sequence[Any]]], *, chunk: int = 100) -> list[Any]:
        result: list[Any] = self._on_reader(lambda rpc: rpc.batch(calls, chunk=chunk))
        return result

    def raw(self, payload: Any) -> Any:
        return self._on_reader(lambda rpc: rpc.raw(payload))

    def close(self) -> None:
        for node in self.nodes:
            node.rpc.close()

    # -- other nodes, for cross-checks ------------------------------------------------------
    def peers(self) -> list[Node]:
        """The nodes in service other than the reader, their chain checked."""
        return [n for n in self.nodes if n is not self.reader and self._ready(n)]

    def ask(self, node: Node, fn: Callable[[JsonRpc], Any]) -> Any:
        """``fn(node's client)``; a node failing it is set aside and the failure re-raised."""
        try:
            result = fn(node.rpc)
        except FAILURES as exc:
            self._set_aside(node, exc)
            raise
        self._healthy(node)
        return result

    # -- choosing and tracking --------------------------------------------------------------
    def _on_reader(self, fn: Callable[[JsonRpc], Any]) -> Any:
        tried: set[int] = set()
        while True:
            node = self._choose(tried)
            try:
                result = fn(node.rpc)
            except FAILURES as exc:
                self._set_aside(node, exc)
                tried.add(node.index)
                continue
            self._healthy(node)
            return result

    def _choose(self, tried: set[int]) -> Node:
        for node in self.nodes:
            if node.index in tried:
                continue
            if node is not self.reader:
                node.checked = False  # the reader changes: check the chain of the new one
            if not self._ready(node):
                tried.add(node.index)
                continue
            if node is not self.reader:
                if self.reader is not None:
                    log.warning("%s: reading from %s now instead of %s", self.name, node.name, self.reader.name)
                    FAILOVERS.labels(network=self.name).inc()
                self.reader = node
            return node
        raise self._none_left()

    def _ready(self, node: Node) -> bool:
        """In service: not set aside, and on the network's chain (checked now if it was not)."""
        if node.until > self._clock():
            return False
        if node.checked:
            return True
        try:
            why = self._check(self.network, node.rpc)
        except FAILURES as exc:
            self._set_aside(node, exc)
            return False
        if why is not None:
            self._refuse(node, why)
            return False
        if node.refused is not None:
            log.warning("%s: %s is on the network's chain again", self.name, node.name)
            node.refused = None
            NODE_REFUSED.labels(**node.labels(self.name)).set(0)
        node.checked = True
        NODE_UP.labels(**node.labels(self.name)).set(1)
        return True

    def _healthy(self, node: Node) -> None:
        if node.problem is not None:
            log.info("%s: %s answers again", self.name, node.name)
        node.failures, node.problem = 0, None

    def _set_aside(self, node: Node, exc: Exception) -> None:
        ceiling = min(SET_ASIDE_CAP, SET_ASIDE_SECONDS * 2 ** min(node.failures, 16))
        wait = max(self._jitter(ceiling / 2, ceiling), getattr(exc, "retry_after", None) or 0.0)
        node.failures += 1
        node.until, node.checked = self._clock() + wait, False
        NODE_UP.labels(**node.labels(self.name)).set(0)
        NODE_FAILURES.labels(**node.labels(self.name)).inc()
        kind = type(exc).__name__
        if node.problem != kind:
            log.warning("%s: %s set aside for %.1f s: %s", self.name, node.name, wait, exc)
        else:
            log.debug("%s: %s failed again, set aside for %.1f s: %s", self.name, node.name, wait, exc)
        node.problem = kind

    def _refuse(self, node: Node, why: str) -> None:
        if node.refused != why:
            log.error("%s: %s refused: %s (check %s_RPC_URLS)", self.name, node.name, why, self.name)
        node.refused, node.until, node.checked = why, self._clock() + REFUSED_SECONDS, False
        NODE_UP.labels(**node.labels(self.name)).set(0)
        NODE_REFUSED.labels(**node.labels(self.name)).set(1)

    def _none_left(self) -> NoNode:
        now = self._clock()
        back = min(max(0.0, n.until - now) for n in self.nodes)
        states = "; ".join(
            f"{n.name} " + (f"refused: {n.refused}" if n.refused else f"{n.problem or 'set aside'}") for n in self.nodes
        )
        return NoNode(f"{self.name}: no RPC node in service ({states})", retry_after=max(back, 0.1))


def redacted(urls: Sequence[str]) -> str:
    return ", ".join(redact(u) for u in urls)
