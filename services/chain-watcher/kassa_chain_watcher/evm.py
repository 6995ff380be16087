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
        logs = self.rpc.call("eth_getLogs", {
            "fromBlock": hex(blocks[0].number), "toBlock": hex(blocks[-1].number),
            "address": list(self.tokens), "topics": [TRANSFER_TOPIC],
        })
        for log in logs:
            block = by_number.get(int(log["blockNumber"], 16))
            if block is None or log["blockHash"] != block.hash:
                raise ChainMoved(f"log of block {log['blockNumber']} is from another fork")
            topics = log["topics"]
            if log.get("removed") or len(topics) != 3:
                continue  # not an ERC-20 Transfer(address,address,uint256) with indexed addresses
            to = "0x" + topics[2][-40:].lower()
            if to in watched:
                data = log["data"]
                token = self.tokens[log["address"].lower()]
                block.transfers.append(Found(log["transactionHash"], int(log["logIndex"], 16), token, to,
                                             int(data, 16) if data not in ("0x", "") else 0))
        for block in blocks:
            block.transfers.sort(key=lambda f: f.index)

    def close(self) -> None:
        self.rpc.close()
