"""Bitcoin over Bitcoin Core JSON-RPC: ``getblockcount``, ``getblockhash`` and
``getblock`` (verbosity 2) in batched requests, ``getrawmempool`` for seen-not-confirmed.

A transfer is a transaction output paying a watched address; its index is the vout.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Collection

from kassa_common.chains.networks import Network

from kassa_chain_watcher.chain import Block, ChainMoved, Found
from kassa_chain_watcher.rpc import JsonRpc, RpcError, RpcUnavailable

SATS = Decimal(100_000_000)


def normalize(address: str) -> str:
    return address.lower()  # the watcher only follows bech32 addresses (case-insensitive)


class BitcoinChain:
    def __init__(self, network: Network, rpc: JsonRpc, *, batch: int = 50) -> None:
        self.network, self.rpc, self.batch = network, rpc, batch
        self.symbol = network.tokens[0].symbol if network.tokens else "BTC"
        # txid -> its outputs to addresses watched when it was first fetched (a tx is read once)
        self._mempool_cache: dict[str, list[Found]] = {}

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
        return dict(zip(wanted, got))

    def blocks(self, start: int, end: int, watched: Collection[str]) -> list[Block]:
        try:
            hashes = self.rpc.batch([("getblockhash", [n]) for n in range(start, end + 1)], chunk=500)
            raw = self.rpc.batch([("getblock", [h, 2]) for h in hashes], chunk=self.batch)
        except RpcUnavailable:
            raise
        except RpcError as exc:
            raise ChainMoved(str(exc)) from exc
        blocks: list[Block] = []
        for n, b in zip(range(start, end + 1), raw):
            if b.get("confirmations", 1) < 0 or b["height"] != n:
                raise ChainMoved(f"block {n} left the best chain while we read it")
            parent = b.get("previousblockhash", "0" * 64)
            if blocks and parent != blocks[-1].hash:
                raise ChainMoved(f"block {n} does not follow block {n - 1}")
            found = [f for tx in b["tx"] for f in self._outputs(tx, watched)]
            blocks.append(Block(n, b["hash"], parent, found))
        return blocks

    def _outputs(self, tx: dict[str, Any], watched: Collection[str]) -> list[Found]:
        found = []
        for out in tx.get("vout", []):
            address = (out.get("scriptPubKey") or {}).get("address")
            if address and address.lower() in watched:
                sats = int(Decimal(str(out["value"])) * SATS)
                found.append(Found(tx["txid"], int(out["n"]), self.symbol, address.lower(), sats))
        return found

    def mempool(self, watched: Collection[str]) -> list[Found]:
        txids = self.rpc.call("getrawmempool")
        current = set(txids)
        for gone in set(self._mempool_cache) - current:
            del self._mempool_cache[gone]
        new = [t for t in txids if t not in self._mempool_cache]
        if new:
            try:
                txs = self.rpc.batch([("getrawtransaction", [t, True]) for t in new], chunk=200)
            except RpcUnavailable:
                raise
            except RpcError:  # a tx left the mempool meanwhile: take the others next time
                txs = []
                new = []
            for txid, tx in zip(new, txs):
                self._mempool_cache[txid] = self._outputs(tx, watched)
        return [f for outs in self._mempool_cache.values() for f in outs if f.to in watched]

    def history(self, start: int, end: int, addresses: Collection[str], native: Collection[str] = ()) -> list[Block]:
        """Backfill for newly watched addresses: no address index here, so whole blocks."""
        found: list[Block] = []
        for lo in range(start, end + 1, self.batch):
            found += [b for b in self.blocks(lo, min(end, lo + self.batch - 1), addresses) if b.transfers]
        return found

    def close(self) -> None:
        self.rpc.close()
