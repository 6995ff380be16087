"""The Bitcoin family (Bitcoin, Litecoin) over Bitcoin Core's JSON-RPC (``litecoind`` speaks
it too): ``getblockcount``, ``getblockhash`` and ``getblock`` (verbosity 2) in batched
requests, ``getrawmempool`` for seen-not-confirmed. Outputs are read in both shapes nodes
write (``kassa_common.chains.utxo``).

A transfer is a transaction output paying a watched address; its index is the vout.

Each mempool transaction is read once (``getrawtransaction``) and its outputs are matched
against the watched addresses at every look, not only those watched when it was read: a
payment's address may reach the watcher after the customer's transaction reached the
node (the bus was slow, the address came with the periodic reload). Every output is kept
for ``REMATCH_SECONDS`` after the transaction was read, then only those paying a watched
address (a whole mempool's outputs would not fit in memory). No transaction can pay an
address before its payment exists, and an address reaches the watcher within the reload
period of its payment's creation (30 s by default) or when the watcher (re)starts, which
reads the whole mempool again.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Container
from decimal import Decimal
from typing import Any

from kassa_common.chains.networks import Network
from kassa_common.chains.rpc import JsonRpc, RpcError, RpcUnavailable
from kassa_common.chains.utxo import output_address
from kassa_chain_watcher.chain import Block, ChainMoved, Found

SATS = Decimal(100_000_000)
REMATCH_SECONDS = 600.0  # every output of a transaction is kept this long after it was read


def normalize(address: str) -> str:
    return address.lower()  # the watcher only follows bech32 addresses (case-insensitive)


class BitcoinChain:
    def __init__(
        self, network: Network, rpc: JsonRpc, *, batch: int = 50, rematch_seconds: float = REMATCH_SECONDS
    ) -> None:
        self.network, self.rpc, self.batch = network, rpc, batch
        self.symbol = network.tokens[0].symbol if network.tokens else "BTC"
        self.rematch_seconds = rematch_seconds
        # The mempool's transactions as read (each once): recently read ones with every output
        # (txid -> (when read, outputs), in reading order), older ones with their outputs to
        # addresses watched by the time they stopped being recent.
        self._recent: dict[str, tuple[float, list[Found]]] = {}
        self._older: dict[str, list[Found]] = {}

    def tip(self) -> int:
        return int(self.rpc.call("getblockcount"))

    def hashes(self, numbers: list[int]) -> dict[int, str]:
        tip = self.tip()
        wanted = [n for n in numbers if 0 <= n <= tip]
        try:
            got = self.rpc.batch([("getblockhash", [n]) for n in wanted], chunk=500)
        except RpcUnavailable:
            raise  # the node is away: the watcher backs off (not a moved chain, read again at once)
        except RpcError as exc:  # the tip moved down between the two calls
            raise ChainMoved(str(exc)) from exc
        return dict(zip(wanted, got, strict=False))

    def blocks(self, start: int, end: int, watched: Container[str]) -> list[Block]:
        try:
            hashes = self.rpc.batch([("getblockhash", [n]) for n in range(start, end + 1)], chunk=500)
            raw = self.rpc.batch([("getblock", [h, 2]) for h in hashes], chunk=self.batch)
        except RpcUnavailable:
            raise
        except RpcError as exc:
            raise ChainMoved(str(exc)) from exc
        blocks: list[Block] = []
        for n, b in zip(range(start, end + 1), raw, strict=False):
            if b.get("confirmations", 1) < 0 or b["height"] != n:
                raise ChainMoved(f"block {n} left the best chain while we read it")
            parent = b.get("previousblockhash", "0" * 64)
            if blocks and parent != blocks[-1].hash:
                raise ChainMoved(f"block {n} does not follow block {n - 1}")
            found = [f for tx in b["tx"] for f in self._outputs(tx, watched)]
            blocks.append(Block(n, b["hash"], parent, found))
        return blocks

    def _outputs(self, tx: dict[str, Any], watched: Container[str] | None) -> list[Found]:
        """The outputs of ``tx`` paying ``watched`` addresses (None: paying any address)."""
        found = []
        for out in tx.get("vout", []):
            address = output_address(out)
            if address and (watched is None or address.lower() in watched):
                sats = int(Decimal(str(out["value"])) * SATS)
                found.append(Found(tx["txid"], int(out["n"]), self.symbol, address.lower(), sats))
        return found

    def mempool(self, watched: Container[str]) -> list[Found]:
        txids = self.rpc.call("getrawmempool")
        current = set(txids)
        for pool in (self._recent, self._older):
            for gone in [t for t in pool if t not in current]:
                del pool[gone]
        now = time.monotonic()
        new = [t for t in txids if t not in self._recent and t not in self._older]
        if new:
            try:
                txs = self.rpc.batch([("getrawtransaction", [t, True]) for t in new], chunk=200)
            except RpcUnavailable:
                raise
            except RpcError:  # a tx left the mempool meanwhile: take the others next time
                txs = []
            for txid, tx in zip(new, txs, strict=False):
                self._recent[txid] = (now, self._outputs(tx, None))
        for txid in list(self._recent):  # in reading order: the oldest first
            read_at, outputs = self._recent[txid]
            if now - read_at < self.rematch_seconds:
                break
            self._older[txid] = [f for f in outputs if f.to in watched]
            del self._recent[txid]
        return [
            f
            for outputs in (*(o for _, o in self._recent.values()), *self._older.values())
            for f in outputs
            if f.to in watched
        ]

    def history(self, start: int, end: int, addresses: Collection[str], native: Collection[str] = ()) -> list[Block]:
        """Backfill for newly watched addresses: no address index here, so whole blocks."""
        found: list[Block] = []
        for lo in range(start, end + 1, self.batch):
            found += [b for b in self.blocks(lo, min(end, lo + self.batch - 1), addresses) if b.transfers]
        return found

    def close(self) -> None:
        self.rpc.close()
