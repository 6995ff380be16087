"""A node scripted for the internal credit tests (balances per block hash, traces per block
number), and the blocks and parity traces they read."""

from __future__ import annotations

from kassa_common.chains.rpc import RpcError
from kassa_chain_watcher.chain import Block

A, B = "0x" + "aa" * 20, "0x" + "bb" * 20


class Node:
    """Balances per block hash; traces per block number; records what it was asked."""

    def __init__(self, balances: dict[str, dict[str, int]], traces=None, tracer="trace_block"):
        self.balances, self.traces, self.tracer, self.asked = balances, traces or {}, tracer, []

    def batch(self, calls, chunk=100):
        self.asked += calls
        return [hex(self.balances[params[1]["blockHash"]].get(params[0], 0)) for _m, params in calls]

    def call(self, method, *params):
        if method != self.tracer:
            raise RpcError(f"{method}: {{'code': -32601, 'message': 'Method not found'}}")
        if method == "eth_getBlockByHash":
            return {"transactions": []}
        return self.traces.get(int(params[0], 16), [])


def chain(n: int) -> list[Block]:
    return [Block(i, f"h{i}", f"h{i - 1}") for i in range(1, n + 1)]


def parity_call(tx, to, wei, depth=1, at=None, error=None, call_type="call"):
    t = {
        "type": "call",
        "action": {"callType": call_type, "to": to, "value": hex(wei)},
        "transactionHash": tx,
        "traceAddress": list(at) if at is not None else [0] * depth,
        "blockHash": None,
    }
    if error:
        t["error"] = error
    return t
