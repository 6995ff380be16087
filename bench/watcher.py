"""Watcher catch-up: the real scanner, EVM block reader and store (PostgreSQL) and a real
publisher (RabbitMQ) catching up on blocks of 10 USDC transfers each to watched addresses,
with 100k watched addresses against the same with 1k. The node is a canned JSON-RPC
double serving prebuilt blocks and logs, so what is measured is Kassa's cost, not the node's.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.db import unit_of_work
from kassa_common.messaging.publisher import Publisher
from kassa_common.models import ChainBlock, ChainCursor, ChainReport
from bench.common import Bench, Result
from kassa_chain_watcher.evm import EvmChain, normalize
from kassa_chain_watcher.network_watcher import keep_blocks
from kassa_chain_watcher.scanner import Scanner
from kassa_chain_watcher.store import Store
from kassa_chain_watcher.watchlist import Watchlist
from tests.support.bus import private_topology

PER_BLOCK = 10


def _hash(*parts: Any) -> str:
    return "0x" + hashlib.sha256(repr(parts).encode()).hexdigest()


class CannedNode:
    """``eth_blockNumber``, ``eth_getBlockByNumber`` and ``eth_getLogs`` over prebuilt blocks."""

    def __init__(self, blocks: int, token: str, payees: list[str]) -> None:
        self.blocks, self.logs = {}, {}
        for n in range(blocks + 1):
            txs, logs = [], []
            for i in range(PER_BLOCK):
                tx = _hash("tx", n, i)
                txs.append({"hash": tx, "to": token, "value": "0x0"})
                logs.append(
                    {
                        "blockNumber": hex(n),
                        "blockHash": _hash("block", n),
                        "transactionHash": tx,
                        "logIndex": hex(i),
                        "address": token,
                        "removed": False,
                        "data": "0x" + format(10_000_000, "064x"),  # one 32-byte word, as nodes send it
                        "topics": [
                            TRANSFER_TOPIC,
                            "0x" + "00" * 12 + "11" * 20,
                            "0x" + "00" * 12 + payees[(n * PER_BLOCK + i) % len(payees)][2:],
                        ],
                    }
                )
            self.blocks[n] = {
                "number": hex(n),
                "hash": _hash("block", n),
                "parentHash": _hash("block", n - 1) if n else "0x" + "00" * 32,
                "transactions": txs,
            }
            self.logs[n] = logs
        self.tip = blocks

    def call(self, method: str, *params: Any) -> Any:
        if method == "eth_blockNumber":
            return hex(self.tip)
        if method == "eth_getLogs":
            f = params[0]
            return [log for n in range(int(f["fromBlock"], 16), int(f["toBlock"], 16) + 1) for log in self.logs[n]]
        raise NotImplementedError(method)

    def batch(self, calls: Sequence[tuple[str, Sequence[Any]]], *, chunk: int = 100) -> list[Any]:
        return [self.blocks.get(int(params[0], 16)) for method, params in calls]

    def close(self) -> None:
        pass


def catch_up(b: Bench, sessions, publisher: Publisher, watched: int, blocks: int) -> float:
    """Seconds the scanner takes to catch up ``blocks`` blocks with ``watched`` addresses watched."""
    network = b.settings().networks.get("LOCAL_EVM")
    token = next(t.contract.lower() for t in network.tokens if t.symbol == "USDC")
    addresses = ["0x" + format(0xB0000000 + i, "040x") for i in range(watched)]
    payees = addresses[:: max(1, watched // 1000)][:1000]  # the same 1k payees whatever is watched
    node = CannedNode(blocks, token, payees)
    with unit_of_work(sessions) as s:  # a fresh cursor: catch up from the start
        s.execute(sa.delete(ChainBlock).where(ChainBlock.network == network.name))
        s.execute(sa.delete(ChainCursor).where(ChainCursor.network == network.name))
        s.execute(sa.delete(ChainReport).where(ChainReport.network == network.name))
    watchlist = Watchlist(normalize, addresses)
    reports = 0

    def publish(messages) -> None:
        nonlocal reports
        publisher.publish_batch(messages)
        reports += len(messages)

    scanner = Scanner(
        network,
        EvmChain(network, node),
        Store(sessions, network.name, keep_blocks(network)),
        watchlist,
        publish,
        start_back=blocks,
    )
    t = time.perf_counter()
    while scanner.tick():
        pass
    elapsed = time.perf_counter() - t
    if reports < blocks * PER_BLOCK:
        raise RuntimeError(f"{reports} transfer reports published for {blocks * PER_BLOCK} transfers")
    return elapsed


def run(b: Bench) -> list[Result]:
    blocks, small, large = (50, 100, 1_000) if b.smoke else (3_000, 1_000, 100_000)
    with private_topology(b.settings().rabbitmq_url) as (_, topo), b.engine(2) as (_, sessions):
        publisher = Publisher(b.settings().rabbitmq_url, topo.exchange, declare=topo.declare)
        try:
            catch_up(b, sessions, publisher, small, min(blocks, 200))  # warm up
            reference = catch_up(b, sessions, publisher, small, blocks)
            measured = catch_up(b, sessions, publisher, large, blocks)
        finally:
            publisher.close()
    rate, cost = blocks / measured, measured / reference
    return [
        Result(
            "watcher_catch_up",
            f"watcher catch-up, {PER_BLOCK} transfers/block, {large:,} addresses",
            "blocks/s",
            rate,
            "≥ 500 blocks/s",
            rate >= 500,
        ),
        Result(
            "watcher_address_cost",
            f"watcher catch-up cost, {large:,} vs {small:,} addresses",
            "s",
            measured,
            "≤ 1.2×",
            cost <= 1.2,
            reference,
            f"{small:,} addresses",
            cost,
        ),
    ]
