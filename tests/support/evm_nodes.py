"""Scripted EVM nodes for the tests of what ``EvmChain`` reads: blocks of native transfers with
their receipts (``Node``), a USDC transfer log too (``LogNode``), and a node recording its
log queries (``QueryNode``); no I/O."""

from __future__ import annotations

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.chains.networks import load_registry
from kassa_common.chains.rpc import RpcError
from kassa_chain_watcher.evm import EvmChain

NET = load_registry({"LOCAL_EVM_RPC_URL": "http://node"}).get("LOCAL_EVM")  # ETH, USDC, USDT
A, B, OTHER = "0x" + "aa" * 20, "0x" + "bb" * 20, "0x" + "ee" * 20


class Node:
    """Blocks 1..n of transactions (hash, to, wei); receipts by hash: (status, block hash)."""

    def __init__(self, blocks: list[list[tuple[str, str, int]]], receipts: dict[str, tuple[str | None, str]]):
        self.blocks, self.receipts, self.asked = blocks, receipts, []

    def _block(self, n: int) -> dict:
        return {
            "hash": f"h{n}",
            "parentHash": f"h{n - 1}",
            "transactions": [{"hash": h, "to": to, "value": hex(wei)} for h, to, wei in self.blocks[n - 1]],
        }

    def batch(self, calls, chunk=100):
        self.asked += [(m, p[0]) for m, p in calls]
        out = []
        for method, params in calls:
            if method == "eth_getBlockByNumber":
                out.append(self._block(int(params[0], 16)))
            elif method == "eth_getTransactionReceipt":
                status, block = self.receipts[params[0]]
                out.append({"blockHash": block, **({"status": status} if status else {})})
            else:  # balances of the followed addresses: nothing moved inside contracts
                out.append("0x0")
        return out

    def call(self, method, *params):
        if method == "eth_getLogs":
            return []
        raise RpcError(f"{method}: {{'code': -32601}}")


def word(n: int) -> str:
    """``n`` as one 32-byte ABI word, as a node sends a uint256 log's data."""
    return f"0x{n:064x}"


def read(node, watched=(A, B)):
    return EvmChain(NET, node).blocks(1, len(node.blocks), set(watched))


USDC = next(t.contract for t in NET.tokens if t.symbol == "USDC")


class LogNode(Node):
    """Node's blocks, and a USDC transfer log to A in block ``number`` with ``block_hash``."""

    def __init__(self, blocks, receipts, number: int, block_hash: str) -> None:
        super().__init__(blocks, receipts)
        self.log = {
            "blockNumber": hex(number),
            "blockHash": block_hash,
            "logIndex": "0x3",
            "removed": False,
            "transactionHash": "0x" + "7" * 64,
            "address": USDC,
            "data": word(5),
            "topics": [TRANSFER_TOPIC, "0x" + "0" * 64, "0x" + A[2:].rjust(64, "0")],
        }

        self.logs = [self.log]

    def call(self, method, *params):
        assert method == "eth_getLogs"
        return self.logs


class QueryNode:
    """Answers eth_getLogs with nothing, recording each query."""

    def __init__(self) -> None:
        self.queries: list[dict] = []

    def call(self, method, query):
        assert method == "eth_getLogs"
        self.queries.append(query)
        return []
