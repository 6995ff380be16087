"""Native coin from contracts (balances.py): which block and which transaction a balance's
unexplained rise comes from, on a node with parity traces, the call tracer, or neither."""
from __future__ import annotations

import pytest

from kassa_chain_watcher.balances import InternalCredits
from kassa_chain_watcher.chain import Block, Found
from kassa_chain_watcher.rpc import RpcError

pytestmark = pytest.mark.unit
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


def parity_call(tx, to, wei, depth=1):
    return {"type": "call", "action": {"callType": "call", "to": to, "value": hex(wei)}, "transactionHash": tx,
            "traceAddress": [0] * depth, "blockHash": None}


def test_a_rise_is_found_in_its_block_and_transaction():
    balances = {f"h{i}": {A: 0} for i in range(0, 9)}
    for i in range(5, 9):
        balances[f"h{i}"][A] = 700
    node = Node(balances, {5: [parity_call("0xtx", A, 700), parity_call("0xtop", A, 1, depth=0)]})
    blocks = chain(8)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[4].transfers == [Found("0xtx", -2, "ETH", A, 700)]
    assert all(not b.transfers for b in blocks if b.number != 5)


def test_top_level_transfers_explain_a_rise_and_ask_for_no_trace():
    balances = {"h0": {A: 0}, "h1": {A: 50}}
    blocks = chain(1)
    blocks[0].transfers.append(Found("0xplain", -1, "ETH", A, 50))
    node = Node(balances, {1: [parity_call("0xnever", A, 50)]})
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [Found("0xplain", -1, "ETH", A, 50)]


def test_the_next_range_starts_from_the_remembered_balance():
    balances = {"h0": {A: 0}, "h1": {A: 0}, "h2": {A: 9}}
    node = Node(balances, {2: [parity_call("0xtx", A, 9)]})
    credits = InternalCredits(node, "ETH")
    first, second = chain(2)
    credits.add([first], {A})
    asked = len(node.asked)
    credits.add([second], {A})
    assert len(node.asked) - asked == 1  # only the new end: h1's balance was remembered
    assert second.transfers == [Found("0xtx", -2, "ETH", A, 9)]


def test_two_internal_credits_of_one_transaction_are_two_transfers():
    balances = {"h0": {A: 0}, "h1": {A: 30}}
    node = Node(balances, {1: [parity_call("0xtx", A, 10), parity_call("0xtx", B, 5), parity_call("0xtx", A, 20)]})
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [Found("0xtx", -2, "ETH", A, 10), Found("0xtx", -3, "ETH", A, 20)]


def test_the_call_tracer_serves_when_parity_traces_are_missing():
    balances = {"h0": {A: 0}, "h1": {A: 4}}
    frame = {"txHash": "0xtx", "result": {"type": "CALL", "calls": [
        {"type": "CALL", "to": B, "value": "0x0", "calls": [{"type": "CALL", "to": A, "value": "0x4"}]},
        {"type": "CALL", "to": A, "value": "0x9", "error": "execution reverted"}]}}
    node = Node(balances, {1: [frame]}, tracer="debug_traceBlockByNumber")
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [Found("0xtx", -2, "ETH", A, 4)]


def test_without_traces_the_block_identifies_the_credit():
    balances = {"h0": {A: 0}, "h1": {A: 4}}
    node = Node(balances, tracer="none")
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [Found("h1", -2, "ETH", A, 4)]
