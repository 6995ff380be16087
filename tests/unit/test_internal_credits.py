"""Native coin from contracts (balances.py): which block and which transaction a balance's
unexplained rise comes from, on a node with parity traces, the call tracer, or neither;
only calls that were not undone (a frame that reverted, at any depth, prunes everything
below it), never more than the balance rose."""

from __future__ import annotations

import pytest

from kassa_chain_watcher.balances import InternalCredits, calls_from_call_tracer, calls_from_parity, capped
from kassa_chain_watcher.chain import ChainMoved, Found
from tests.support.internal_credits import A, B, Node, chain, parity_call

pytestmark = pytest.mark.unit


def test_a_rise_is_found_in_its_block_and_transaction():
    balances = {f"h{i}": {A: 0} for i in range(9)}
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
    frame = {
        "txHash": "0xtx",
        "result": {
            "type": "CALL",
            "calls": [
                {"type": "CALL", "to": B, "value": "0x0", "calls": [{"type": "CALL", "to": A, "value": "0x4"}]},
                {"type": "CALL", "to": A, "value": "0x9", "error": "execution reverted"},
            ],
        },
    }
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


# -- reverted frames, at any depth ------------------------------------------------------------
C = "0x" + "cc" * 20  # the paying contract


def test_a_parity_trace_prunes_every_call_under_a_frame_that_failed():
    """Only the failed frame ([1], then [0, 1, 0]) says ``error``: its children, however deep,
    were undone with it; its siblings and the other transaction's calls stand."""
    traces = [
        parity_call("0xtx", C, 0, at=[]),  # the transaction's own call
        parity_call("0xtx", A, 1, at=[0]),  # 1 wei, for real
        parity_call("0xtx", C, 0, at=[1], error="Reverted"),
        parity_call("0xtx", A, 500, at=[1, 0]),  # a successful child of the failed frame
        parity_call("0xtx", C, 0, at=[1, 1]),
        parity_call("0xtx", A, 600, at=[1, 1, 0, 0]),
        parity_call("0xtx", C, 0, at=[2]),
        parity_call("0xtx", C, 0, at=[2, 0]),
        parity_call("0xtx", C, 0, at=[2, 0, 0], error="Reverted"),  # failing two calls down
        parity_call("0xtx", A, 700, at=[2, 0, 0, 0]),
        parity_call("0xtx", B, 3, at=[2, 0, 1]),  # after it, in a frame that stood
        parity_call("0xother", A, 8, at=[1, 0]),  # the same place in another transaction
    ]
    assert calls_from_parity(traces, "h1") == [("0xtx", A, 1), ("0xtx", B, 3), ("0xother", A, 8)]


def test_a_parity_trace_of_a_reverted_transaction_moves_nothing():
    traces = [
        parity_call("0xtx", C, 9, at=[], error="Reverted"),
        parity_call("0xtx", A, 9, at=[0]),
        parity_call("0xtx", A, 4, at=[0, 0]),
    ]
    assert calls_from_parity(traces, "h1") == []


def test_a_parity_trace_counts_calls_and_creations_but_no_delegated_call():
    traces = [
        parity_call("0xtx", A, 5, at=[0], call_type="delegatecall"),
        parity_call("0xtx", A, 6, at=[1], call_type="staticcall"),
        {
            "type": "create",
            "action": {"value": hex(7)},
            "result": {"address": A.upper().replace("0X", "0x")},
            "transactionHash": "0xtx",
            "traceAddress": [2],
        },
        {
            "type": "suicide",
            "action": {"refundAddress": A, "balance": hex(8)},
            "transactionHash": "0xtx",
            "traceAddress": [3],
        },
    ]
    assert calls_from_parity(traces, "h1") == [("0xtx", A, 7), ("0xtx", A, 8)]


def test_parity_traces_of_another_block_mean_the_chain_moved():
    with pytest.raises(ChainMoved):
        calls_from_parity([{**parity_call("0xtx", A, 1), "blockHash": "h1-other-fork"}], "h1")


def test_the_call_tracer_skips_a_failed_frame_with_everything_nested_in_it():
    def call(to, wei, calls=(), error=None):
        return {
            "type": "CALL",
            "to": to,
            "value": hex(wei),
            "calls": list(calls),
            **({"error": error} if error else {}),
        }

    result = {
        "txHash": "0xtx",
        "result": call(
            C,
            0,
            [
                call(A, 1),
                call(C, 0, [call(C, 0, [call(A, 500)]), call(A, 600)], error="execution reverted"),
                call(C, 0, [call(C, 0, [call(A, 700, [call(A, 800)])], error="execution reverted"), call(B, 3)]),
            ],
        ),
    }
    reverted = {"txHash": "0xrev", "result": call(C, 0, [call(A, 9)], error="execution reverted")}
    assert calls_from_call_tracer([result, reverted]) == [("0xtx", A, 1), ("0xtx", B, 3)]


# -- never more than the balance rose -----------------------------------------------------------
def credit(rank, wei):
    return Found("0xtx", -2 - rank, "ETH", A, wei)


@pytest.mark.parametrize(
    "rise, expected",
    [
        (30, [credit(0, 10), credit(1, 20)]),  # explained exactly
        (100, [credit(0, 10), credit(1, 20)]),  # less than the rise: never more than traced
        (15, [credit(0, 10), credit(1, 5)]),  # the last one cut down to the rise
        (10, [credit(0, 10)]),  # those past the rise dropped
        (4, [credit(0, 4)]),
        (0, []),
    ],
)
def test_credits_are_capped_by_the_balance_rise_in_execution_order(rise, expected):
    assert capped([credit(0, 10), credit(1, 20)], rise) == expected


def test_traces_claiming_more_than_the_balance_rose_credit_the_rise():
    """1 wei stayed; 10**16 went through (flushed on in the same block, or a frame the node
    failed to mark as undone): the traces' claim is capped at what arrived."""
    balances = {"h0": {A: 0}, "h1": {A: 1}}
    node = Node(balances, {1: [parity_call("0xtx", A, 10**16, at=[0]), parity_call("0xtx", A, 1, at=[2])]})
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [Found("0xtx", -2, "ETH", A, 1)]


def test_a_reverted_frame_under_a_real_credit_leaves_the_real_one_alone():
    balances = {"h0": {A: 0}, "h1": {A: 1}}
    node = Node(
        balances,
        {
            1: [
                parity_call("0xtx", C, 0, at=[]),
                parity_call("0xtx", A, 1, at=[0]),
                parity_call("0xtx", C, 0, at=[1, 0], error="Reverted"),
                parity_call("0xtx", A, 10**16, at=[1, 0, 0]),
            ]
        },
    )
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [Found("0xtx", -2, "ETH", A, 1)]


def test_one_transaction_paying_two_followed_addresses_credits_both():
    balances = {"h0": {A: 0, B: 0}, "h1": {A: 10, B: 20}}
    node = Node(balances, {1: [parity_call("0xtx", A, 10, at=[0]), parity_call("0xtx", B, 20, at=[1])]})
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A, B})
    assert sorted(blocks[0].transfers, key=lambda f: f.to) == [
        Found("0xtx", -2, "ETH", A, 10),
        Found("0xtx", -2, "ETH", B, 20),
    ]
