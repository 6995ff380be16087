"""EVM chains: ERC-20 ``Transfer`` logs of the configured tokens via ``eth_getLogs`` over a
block range, native transfers from full blocks fetched in batched JSON-RPC requests.

Matching is a set lookup per log and per transaction, so the cost grows with the
number of transfers, not with the number of watched addresses. Native coin moved by a
contract's internal call (no top-level transaction to the address) is not seen.
"""
from __future__ import annotations

from typing import Any, Collection

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.chains.networks import Network

from kassa_chain_watcher.chain import Block, ChainMoved, Found
from kassa_chain_watcher.rpc import JsonRpc


ADDRESS_CHUNK = 100  # recipients per eth_getLogs topic filter
HISTORY_RANGE = 2000  # blocks per eth_getLogs call of a backfill


def normalize(address: str) -> str:
    return address.lower()


class EvmChain:
    def __init__(self, network: Network, rpc: JsonRpc, *, batch: int = 100) -> None:
        self.network, self.rpc, self.batch = network, rpc, batch
        self.tokens = {t.contract.lower(): t.symbol for t in network.tokens if t.contract}
        native = [t for t in network.tokens if t.native]
        self.native = native[0].symbol if native else None

    def tip(self) -> int:
        return int(self.rpc.call("eth_blockNumber"), 16)

    def hashes(self, numbers: list[int]) -> dict[int, str]:
        heads = self.rpc.batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers], chunk=self.batch)
        return {n: h["hash"] for n, h in zip(numbers, heads) if h}

    def mempool(self, watched: Collection[str]) -> list[Found]:
        return []  # EVM transactions are reported once mined (1 confirmation)

    def blocks(self, start: int, end: int, watched: Collection[str]) -> list[Block]:
        full = self.native is not None
        raw = self.rpc.batch([("eth_getBlockByNumber", [hex(n), full]) for n in range(start, end + 1)],
                             chunk=self.batch)
        blocks: list[Block] = []
        for n, b in zip(range(start, end + 1), raw):
            if not b:
                raise ChainMoved(f"block {n} does not exist")
            if blocks and b["parentHash"] != blocks[-1].hash:
                raise ChainMoved(f"block {n} does not follow block {n - 1}")
            blocks.append(Block(n, b["hash"], b["parentHash"], self._native(b, watched) if full else []))
        if self.tokens:
            self._add_token_transfers(blocks, watched)
        return blocks

    def _native(self, block: dict[str, Any], watched: Collection[str]) -> list[Found]:
        found = []
        for tx in block["transactions"]:
            to = tx.get("to")
            if to and to.lower() in watched:
                value = int(tx["value"], 16)
                if value > 0:
                    found.append(Found(tx["hash"], -1, self.native, to.lower(), value))
        return found

    def _add_token_transfers(self, blocks: list[Block], watched: Collection[str]) -> None:
        by_number = {b.number: b for b in blocks}
        for number, block_hash, found in self._token_transfers(blocks[0].number, blocks[-1].number, watched):
            block = by_number.get(number)
            if block is None or block_hash != block.hash:
                raise ChainMoved(f"log of block {number} is from another fork")
            block.transfers.append(found)
        for block in blocks:
            block.transfers.sort(key=lambda f: f.index)

    def _token_transfers(self, start: int, end: int, watched: Collection[str], *,
                         recipients: list[str] | None = None) -> list[tuple[int, str, Found]]:
        """Transfer logs of the configured tokens to ``watched`` in ``start..end``: (block, hash, found).

        ``recipients`` narrows the query itself to those addresses (the ``to`` topic), for
        backfills over long ranges. A log's ``position`` is its rank among its transaction's
        transfer logs to the same address: both kinds of query see all of those.
        """
        topics: list = [TRANSFER_TOPIC]
        if recipients:
            topics += [None, ["0x" + a[2:].rjust(64, "0") for a in recipients]]
        logs = self.rpc.call("eth_getLogs", {"fromBlock": hex(start), "toBlock": hex(end),
                                             "address": list(self.tokens), "topics": topics})
        out: list[tuple[int, str, Found]] = []
        ranks: dict[tuple[str, str], int] = {}
        for log in sorted(logs, key=lambda g: (int(g["blockNumber"], 16), int(g["logIndex"], 16))):
            topics_ = log["topics"]
            if log.get("removed") or len(topics_) != 3:
                continue  # not an ERC-20 Transfer(address,address,uint256) with indexed addresses
            to = "0x" + topics_[2][-40:].lower()
            if to not in watched:
                continue
            rank = ranks[(log["transactionHash"], to)] = ranks.get((log["transactionHash"], to), -1) + 1
            data = log["data"]
            out.append((int(log["blockNumber"], 16), log["blockHash"], Found(
                log["transactionHash"], int(log["logIndex"], 16), self.tokens[log["address"].lower()], to,
                int(data, 16) if data not in ("0x", "") else 0, rank)))
        return out

    def history(self, start: int, end: int, addresses: Collection[str]) -> list[Block]:
        """Backfill for newly watched addresses: their token transfers through ``eth_getLogs``
        narrowed to them (``ADDRESS_CHUNK`` at a time), native ones from full blocks."""
        found: dict[int, Block] = {}
        wanted = sorted(addresses)
        for i in range(0, len(wanted), ADDRESS_CHUNK):
            chunk = wanted[i:i + ADDRESS_CHUNK]
            for lo in range(start, end + 1, HISTORY_RANGE):
                for number, block_hash, f in self._token_transfers(lo, min(end, lo + HISTORY_RANGE - 1), set(chunk),
                                                                   recipients=chunk):
                    found.setdefault(number, Block(number, block_hash, "")).transfers.append(f)
        if self.native is not None:
            for lo in range(start, end + 1, self.batch):
                raw = self.rpc.batch([("eth_getBlockByNumber", [hex(n), True])
                                      for n in range(lo, min(end, lo + self.batch - 1) + 1)], chunk=self.batch)
                for b in filter(None, raw):
                    native = self._native(b, addresses)
                    if native:
                        found.setdefault(int(b["number"], 16), Block(int(b["number"], 16), b["hash"], "")) \
                            .transfers.extend(native)
        return [found[n] for n in sorted(found)]

    def close(self) -> None:
        self.rpc.close()
