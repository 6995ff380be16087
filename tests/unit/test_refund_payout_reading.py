"""Reading a submitted payout's transaction from the nodes (``refunds.onchain``), with nodes
doubled in memory: the transfers an EVM transaction makes (its native value, its ERC-20
logs ranked per recipient, their senders) or a Bitcoin transaction's outputs, the reasons
one is refused (unknown, unmined, reverted), and the RPC quorum: a transfer counts only when
enough nodes read it the same, at the confirmations the quorum's slowest agreeing node has;
a claim's tip is the height the quorum has reached."""

from __future__ import annotations

import dataclasses

import pytest

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.chains.networks import shipped
from kassa_common.chains.nodes import NodePool
from kassa_common.chains.rpc import RpcError, RpcUnavailable
from kassa_common.refunds import onchain
from kassa_common.refunds.onchain import (
    ChainUnavailable,
    PayoutConflict,
    PayoutRefused,
    QuorumShort,
    Reader,
    reader_for,
    transfer_ref,
)

pytestmark = pytest.mark.unit

EVM = shipped().get("LOCAL_EVM")
BTC = shipped().get("BITCOIN_REGTEST")
USDC = next(t.contract for t in EVM.tokens if t.symbol == "USDC").lower()
TX = "0x" + "11" * 32
BLOCK = "0x" + "22" * 32
SENDER = "0x" + "aa" * 20
TO = "0x" + "bb" * 20
TO2 = "0x" + "cc" * 20


def topic(address: str) -> str:
    return "0x" + "0" * 24 + address[2:]


def log(index: int, to: str, units: int | None, *, contract: str = USDC, topics: list[str] | None = None) -> dict:
    return {
        "logIndex": hex(index),
        "address": contract,
        "topics": topics if topics is not None else [TRANSFER_TOPIC, topic(SENDER), topic(to)],
        "data": f"0x{units:064x}" if units is not None else "0x",  # one 32-byte word, as a node sends it
    }


class Evm:
    """One EVM node's answers about the transaction TX."""

    def __init__(self, *, tip=105, number=100, value=0, to=TO, logs=(), status="0x1", tx=True, mined=True):
        self.tip, self.number, self.value, self.to, self.logs = tip, number, value, to, list(logs)
        self.status, self.tx, self.mined = status, tx, mined

    def call(self, method, *params):
        if method == "eth_getTransactionByHash":
            return (
                {"from": SENDER.upper().replace("0X", "0x"), "to": self.to, "value": hex(self.value)}
                if self.tx
                else None
            )
        if method == "eth_getTransactionReceipt":
            if not self.mined:
                return {"blockNumber": None}
            return {"blockNumber": hex(self.number), "blockHash": BLOCK, "status": self.status, "logs": self.logs}
        if method == "eth_blockNumber":
            return hex(self.tip)
        raise AssertionError(method)


def read(rpc, network=EVM):
    return onchain.transfers_in(Reader(network, rpc), TX)


def test_an_evm_transactions_native_value_and_token_logs_are_its_transfers():
    got = read(Evm(value=5, logs=[log(3, TO2, 9), log(1, TO, 7), log(2, TO, 8), log(4, TO, None)]))
    assert [(p.place, p.token, p.to, p.amount_units) for p in got] == [
        (-1, "ETH", TO, 5),
        (0, "USDC", TO, 7),  # ranked per recipient in log order
        (1, "USDC", TO, 8),
        (0, "USDC", TO2, 9),
    ]  # a log without data is no transfer (the watcher's reading: kassa_common.chains.evm.transfer_of)
    assert {(p.network, p.block_number, p.block_hash, p.confirmations, p.sender) for p in got} == {
        ("LOCAL_EVM", 100, BLOCK, 6, SENDER)
    }


def test_logs_that_are_no_transfer_of_the_networks_tokens_and_a_zero_value_are_passed_over():
    other_contract = "0x" + "99" * 20
    logs = [
        log(0, TO, 1, contract=other_contract),
        log(1, TO, 2, topics=[TRANSFER_TOPIC, topic(SENDER), topic(TO), topic(TO)]),
        log(2, TO, 3, topics=["0x" + "00" * 32, topic(SENDER), topic(TO)]),
        log(3, TO, 4),
    ]
    got = read(Evm(value=0, logs=logs))
    assert [(p.place, p.amount_units) for p in got] == [(0, 4)]
    assert read(Evm(value=5, to=None)) == []  # a contract creation pays no one


def test_a_transaction_just_mined_has_one_confirmation_and_a_node_behind_it_none():
    assert read(Evm(value=1, tip=100))[0].confirmations == 1
    assert read(Evm(value=1, tip=98))[0].confirmations == 0


def test_an_unknown_unmined_or_reverted_evm_transaction_is_refused():
    with pytest.raises(PayoutRefused, match="no transaction"):
        read(Evm(tx=False))
    with pytest.raises(PayoutConflict, match="not mined"):
        read(Evm(mined=False))
    with pytest.raises(PayoutRefused, match="reverted"):
        read(Evm(status="0x0"))
    assert read(Evm(value=1, status=None))  # before Byzantium: no status, not reverted


class Bitcoin:
    def __init__(self, *, confirmations=3, blockhash="00" * 32, fail=None, vout=None):
        self.confirmations, self.blockhash, self.fail = confirmations, blockhash, fail
        self.vout = (
            vout
            if vout is not None
            else [
                {"n": 0, "value": 0.0001, "scriptPubKey": {"address": "BCRT1QXYZ"}},
                {"n": 1, "value": 0, "scriptPubKey": {}},  # OP_RETURN: no address
                {"n": 2, "value": 1.23456789, "scriptPubKey": {"address": "bcrt1qabc"}},
            ]
        )

    def call(self, method, *params):
        if method == "getrawtransaction":
            assert params[1] is True  # verbose: the decoded transaction, not its hex
            if self.fail:
                raise self.fail
            return {"blockhash": self.blockhash, "confirmations": self.confirmations, "vout": self.vout}
        if method == "getblockheader":
            return {"height": 250}
        raise AssertionError(method)


def test_a_bitcoin_transactions_outputs_to_an_address_are_its_transfers():
    got = read(Bitcoin(), BTC)
    assert [(p.place, p.token, p.to, p.amount_units, p.block_number, p.confirmations) for p in got] == [
        (0, "BTC", "bcrt1qxyz", 10_000, 250, 3),
        (2, "BTC", "bcrt1qabc", 123_456_789, 250, 3),
    ]


def test_a_bitcoin_transaction_in_the_tip_block_has_one_confirmation():
    assert {p.confirmations for p in read(Bitcoin(confirmations=1), BTC)} == {1}


def test_an_unknown_or_unmined_bitcoin_transaction_is_refused_and_a_node_down_is_unavailable():
    with pytest.raises(PayoutRefused, match="no transaction"):
        read(Bitcoin(fail=RpcError("No such mempool or blockchain transaction")), BTC)
    with pytest.raises(PayoutConflict, match="not mined"):
        read(Bitcoin(blockhash=None), BTC)
    with pytest.raises(PayoutConflict, match="not mined"):
        read(Bitcoin(confirmations=0), BTC)
    with pytest.raises(PayoutConflict, match="not mined"):
        read(Bitcoin(confirmations=None), BTC)
    with pytest.raises(ChainUnavailable):
        read(Bitcoin(fail=RpcUnavailable("down")), BTC)


class Pool(NodePool):
    """A node pool of nodes doubled in memory: the first is the reader."""

    def __init__(self, network, nodes):
        self.network, self.name, self.nodes, self.reader = network, network.name, list(nodes), None
        self.closed = False

    def call(self, method, *params):
        return self.nodes[0].call(method, *params)

    def peers(self):
        return self.nodes[1:]

    def ask(self, node, fn):
        return fn(node)

    def close(self):
        self.closed = True


class Down:
    def call(self, method, *params):
        raise RpcUnavailable("down")


def quorum(n):
    return dataclasses.replace(EVM, rpc_quorum=n, rpc_urls=("http://a", "http://b", "http://c"))


def test_under_a_quorum_a_transfer_counts_at_the_confirmations_enough_nodes_agree_on():
    nodes = [Evm(value=5, tip=109), Evm(value=5, tip=104), Down(), Evm(value=5, tip=106)]
    (got,) = onchain.transfers_in(Reader(quorum(2), Pool(quorum(2), nodes)), TX)
    assert got.confirmations == 7  # the second highest of 10, 5 and 7
    (got,) = onchain.transfers_in(Reader(quorum(3), Pool(quorum(3), nodes)), TX)
    assert got.confirmations == 5
    # one node is no quorum of one: read as is
    (got,) = onchain.transfers_in(Reader(quorum(1), Pool(quorum(1), nodes)), TX)
    assert got.confirmations == 10


def test_a_transfer_too_few_nodes_read_the_same_is_no_payout_yet():
    lying = [Evm(value=5), Evm(value=6), Evm(value=7)]
    with pytest.raises(QuorumShort, match="1 of the 2"):
        onchain.transfers_in(Reader(quorum(2), Pool(quorum(2), lying)), TX)
    # one to another address that the others disagree on is left out; the refund's own counts
    nodes = [Evm(logs=[log(0, TO, 7), log(1, TO2, 8)]), Evm(logs=[log(0, TO, 7), log(1, TO2, 9)])]
    refund = type("Refund", (), {"address": TO.upper().replace("0X", "0x")})()
    got = onchain.transfers_in(Reader(quorum(2), Pool(quorum(2), nodes)), TX, refund)
    assert [(p.to, p.amount_units) for p in got] == [(TO, 7)]
    with pytest.raises(QuorumShort):
        onchain.transfers_in(Reader(quorum(2), Pool(quorum(2), nodes)), TX)


class Tip:
    def __init__(self, answer, method="eth_blockNumber"):
        self.answer, self.method = answer, method

    def call(self, method, *params):
        assert method == self.method
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def pools(monkeypatch):
    made = []

    def pool(network, nodes):
        def make(net, **kw):
            made.append(Pool(net, nodes))
            made[-1].version = kw["version"]
            return made[-1]

        monkeypatch.setattr(onchain, "NodePool", make)
        return made

    return pool


def test_a_claims_tip_is_the_height_the_quorum_has_reached(pools):
    made = pools(EVM, [Tip("0x64"), Tip("0x70"), Tip(RpcError("x")), Tip("0x66")])
    assert onchain.quorum_tip(quorum(2)) == 0x66  # 112, 102 and 100: the second highest
    assert onchain.quorum_tip(quorum(3)) == 0x64
    assert onchain.quorum_tip(quorum(4)) is None  # three answered
    assert onchain.quorum_tip(quorum(1)) == 0x64  # the reader alone
    assert all(p.closed and p.version == "2.0" for p in made)


def test_a_bitcoin_tip_is_a_number_and_no_answer_is_no_tip(pools):
    made = pools(BTC, [Tip(250, "getblockcount")])
    assert onchain.quorum_tip(dataclasses.replace(BTC, rpc_urls=("http://a",))) == 250
    assert made[0].version == "1.0"
    pools(BTC, [Tip(RpcUnavailable("down"), "getblockcount")])
    assert onchain.quorum_tip(dataclasses.replace(BTC, rpc_urls=("http://a",))) is None
    assert onchain.quorum_tip(BTC) is None  # no node configured
    assert onchain.quorum_tip(None) is None


def test_a_payout_is_known_by_its_transaction_place_and_recipient():
    (got,) = read(Evm(logs=[log(4, TO, 7)]))
    assert got.ref == transfer_ref(TX, 0, TO) == f"{TX}:0:{TO}"


def test_a_reader_reads_the_networks_nodes_and_asks_its_required_confirmations():
    assert reader_for(None) is None and reader_for(EVM) is None  # no node configured
    evm = reader_for(dataclasses.replace(EVM, rpc_urls=("http://127.0.0.1:9",)))
    btc = reader_for(dataclasses.replace(BTC, rpc_urls=("http://127.0.0.1:9",)))
    try:
        assert isinstance(evm.rpc, NodePool) and evm.required == EVM.required_confirmations == 2
        assert [n.rpc.version for n in evm.rpc.nodes] == ["2.0"] and [n.rpc.version for n in btc.rpc.nodes] == ["1.0"]
    finally:
        evm.close(), btc.close()


def test_a_node_down_is_a_503_worth_retrying_in_ten_seconds():
    with pytest.raises(ChainUnavailable) as down:
        read(Down())
    assert down.value.retry_after == 10


def test_without_a_quorum_the_readers_own_confirmations_count_whatever_the_others_say():
    nodes = [Evm(value=5, tip=104), Evm(value=5, tip=109)]
    (got,) = onchain.transfers_in(Reader(quorum(1), Pool(quorum(1), nodes)), TX)
    assert got.confirmations == 5


def test_the_refunds_own_transfer_read_differently_by_the_nodes_is_no_payout_yet():
    nodes = [Evm(logs=[log(0, TO, 7)]), Evm(logs=[log(0, TO, 8)])]
    refund = type("Refund", (), {"address": TO})()
    with pytest.raises(QuorumShort):
        onchain.transfers_in(Reader(quorum(2), Pool(quorum(2), nodes)), TX, refund)
