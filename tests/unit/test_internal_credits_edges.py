"""Native coin from contracts (balances.py) at its edges: nothing to follow, the bisection's
boundaries, a block that explains exactly its rise. Scripted node answers, no I/O."""

from __future__ import annotations

import pytest

from kassa_common.chains.rpc import RpcError, RpcUnavailable
from kassa_chain_watcher.balances import InternalCredits, calls_from_parity, capped
from kassa_chain_watcher.chain import Found
from tests.support.internal_credits import A, Node, chain, parity_call

pytestmark = pytest.mark.unit


class Silent:
    """A node that must not be asked anything."""

    def batch(self, calls, chunk=100):
        raise AssertionError(f"asked {calls}")

    def call(self, method, *params):
        raise AssertionError(f"asked {method}")


def test_blocks_with_no_address_to_follow_ask_the_node_nothing():
    InternalCredits(Silent(), "ETH").add(chain(3), set())


def test_a_token_transfer_to_the_address_explains_none_of_its_native_rise():
    node = Node({"h0": {A: 0}, "h1": {A: 700}}, {1: [parity_call("0xtx", A, 700)]})
    blocks = chain(1)
    token = Found("0xusdc", 3, "USDC", A, 700)
    blocks[0].transfers.append(token)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [token, Found("0xtx", -2, "ETH", A, 700)]


def test_a_native_transfer_to_another_address_explains_none_of_this_ones_rise():
    node = Node({"h0": {A: 0}, "h1": {A: 700}}, {1: [parity_call("0xtx", A, 700)]})
    blocks = chain(1)
    other = Found("0xother", -1, "ETH", "0x" + "bb" * 20, 700)
    blocks[0].transfers.append(other)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [other, Found("0xtx", -2, "ETH", A, 700)]


class Recording(Node):
    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.methods: list[str] = []

    def call(self, method, *params):
        self.methods.append(method)
        return super().call(method, *params)


def test_a_node_with_parity_traces_is_asked_for_them_and_nothing_else():
    node = Recording({"h0": {A: 0}, "h1": {A: 9}}, {1: [parity_call("0xtx", A, 9)]})
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert node.methods == ["trace_block"]
    assert blocks[0].transfers == [Found("0xtx", -2, "ETH", A, 9)]


class OldTracer(Node):
    """The call tracer of an older node: frames without ``txHash``, in block order; the
    block's transaction hashes from ``eth_getBlockByHash`` (hashes only, when asked so)."""

    def call(self, method, *params):
        if method == "eth_getBlockByHash":
            block_hash, full = params
            assert block_hash == "h1"
            return {"transactions": [{"hash": "0xtx"}] if full else ["0xtx"]}
        return super().call(method, *params)


def test_an_older_call_tracer_takes_its_transactions_hashes_from_the_block():
    frame = {"result": {"type": "CALL", "calls": [{"type": "CALL", "to": A, "value": "0x4"}]}}
    node = OldTracer({"h0": {A: 0}, "h1": {A: 4}}, {1: [frame]}, tracer="debug_traceBlockByNumber")
    blocks = chain(1)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert blocks[0].transfers == [Found("0xtx", -2, "ETH", A, 4)]


class Failing(Recording):
    """Parity traces that fail once with ``error``, then answer."""

    def __init__(self, error: Exception, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.error = error

    def call(self, method, *params):
        if method == "trace_block" and self.error is not None:
            self.methods.append(method)
            error, self.error = self.error, None
            raise error
        return super().call(method, *params)


@pytest.mark.parametrize(
    "error",
    [
        RpcUnavailable("http://node: ConnectionError"),
        RpcError("trace_block: {'code': -32000, 'message': 'execution timeout'}"),
    ],
)
def test_a_tracer_that_fails_for_another_reason_than_lacking_the_method_is_kept(error):
    node = Failing(error, {"h0": {A: 0}, "h1": {A: 9}}, {1: [parity_call("0xtx", A, 9)]})
    credits = InternalCredits(node, "ETH")
    with pytest.raises(RpcError):
        credits.add(chain(1), {A})
    blocks = chain(1)
    credits.add(blocks, {A})  # tried again: the same tracer
    assert node.methods == ["trace_block", "trace_block"]
    assert blocks[0].transfers == [Found("0xtx", -2, "ETH", A, 9)]


def test_credits_past_the_rise_are_dropped_not_kept_at_zero():
    first, second = Found("0xtx", -2, "ETH", A, 10), Found("0xtx", -3, "ETH", A, 20)
    assert capped([first, second], 10) == [first]


def test_a_parity_call_without_a_value_moves_nothing():
    call = parity_call("0xtx", A, 0)
    del call["action"]["value"]
    assert calls_from_parity([call], "h1") == []


def test_a_top_level_transfer_in_the_next_block_explains_none_of_this_blocks_rise():
    node = Node({"h0": {A: 0}, "h1": {A: 700}, "h2": {A: 750}}, {1: [parity_call("0xtx", A, 700)]})
    blocks = chain(2)
    plain = Found("0xplain", -1, "ETH", A, 50)
    blocks[1].transfers.append(plain)
    InternalCredits(node, "ETH").add(blocks, {A})
    assert [b.transfers for b in blocks] == [[Found("0xtx", -2, "ETH", A, 700)], [plain]]
