"""Several nodes per network (``nodes.NodePool``): failover, per-node backoff with jitter,
the chain check before a node serves, and never a key from a URL in a log or an error.
Pure logic: scripted nodes and a scripted clock."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY

from kassa_common.chains.networks import Network
from kassa_common.chains.nodes import REFUSED_SECONDS, NodePool, NoNode, chain_mismatch
from kassa_common.chains.rpc import BadAnswer, RpcError, RpcUnavailable, redact

URLS = ("https://one.example/v3/KEYONE", "https://two.example:8545/KEYTWO", "http://three.example/?key=KEYTHREE")
NET = Network("TESTNET", "evm", 7, 3, 1.0, URLS[0], (), rpc_urls=URLS)


class ScriptedNode:
    """Answers ``eth_chainId`` with its chain id and any other call with its name, or fails."""

    def __init__(self, url: str, chain_id: int = 7) -> None:
        self.url, self.where, self.chain_id = url, redact(url), chain_id
        self.fail: Exception | None = None
        self.calls: list[str] = []

    def call(self, method, *params):
        self.calls.append(method)
        if self.fail is not None:
            raise self.fail
        return hex(self.chain_id) if method == "eth_chainId" else self.where

    def batch(self, calls, *, chunk=100):
        return [self.call(m, *p) for m, p in calls]

    def raw(self, payload):
        return {"jsonrpc": "2.0", "id": payload["id"], "result": self.call(payload["method"])}

    def close(self):
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pool():
    clock = Clock()
    p = NodePool(NET, clock=clock, jitter=lambda lo, hi: hi)  # the longest wait of each draw
    p.nodes_ = [ScriptedNode(u) for u in URLS]
    for node, scripted in zip(p.nodes, p.nodes_, strict=False):
        node.rpc = scripted
    p.clock = clock
    return p


def sample(name: str, node: int) -> float:
    return REGISTRY.get_sample_value(name, {"network": NET.name, "node": str(node), "url": redact(URLS[node - 1])})


def failovers() -> float:
    return REGISTRY.get_sample_value("kassa_rpc_failovers_total", {"network": NET.name}) or 0


def test_requests_go_to_the_first_node_once_its_chain_id_was_checked(pool):
    assert pool.call("eth_blockNumber") == "https://one.example"
    assert pool.nodes_[0].calls == ["eth_chainId", "eth_blockNumber"]
    assert pool.call("eth_blockNumber") == "https://one.example"
    assert pool.nodes_[0].calls.count("eth_chainId") == 1  # checked once, not on every request
    assert pool.nodes_[1].calls == []


def test_a_node_that_stops_answering_fails_over_to_the_next_for_the_same_request(pool):
    pool.call("eth_blockNumber")
    before = failovers()
    pool.nodes_[0].fail = RpcUnavailable("https://one.example: ConnectionError")
    assert pool.call("eth_blockNumber") == "https://two.example:8545"
    assert pool.nodes_[1].calls == ["eth_chainId", "eth_blockNumber"]  # the new reader's chain checked first
    assert failovers() == before + 1
    assert sample("kassa_rpc_node_up", 1) == 0 and sample("kassa_rpc_node_up", 2) == 1


def test_a_set_aside_node_is_not_asked_until_its_backoff_passed_then_checked_and_preferred_again(pool):
    pool.nodes_[0].fail = RpcUnavailable("down")
    pool.call("x")
    asked = len(pool.nodes_[0].calls)
    pool.nodes_[0].fail = None
    pool.clock.now += 0.99  # the first wait is at most 1 s
    assert pool.call("x") == "https://two.example:8545"
    assert len(pool.nodes_[0].calls) == asked
    pool.clock.now += 0.02
    assert pool.call("x") == "https://one.example"  # back: the operator's first choice
    assert pool.nodes_[0].calls[-2:] == ["eth_chainId", "x"]


def test_each_failure_in_a_row_doubles_a_nodes_wait_up_to_a_cap_and_a_retry_after_is_honoured(pool):
    node = pool.nodes[0]
    waits = []
    for _ in range(8):
        pool._set_aside(node, RpcUnavailable("down"))
        waits.append(node.until - pool.clock.now)
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]
    pool._set_aside(node, RpcUnavailable("429", retry_after=120))
    assert node.until - pool.clock.now == 120


def test_waits_are_jittered_within_the_upper_half_of_the_backoff():
    draws = []
    p = NodePool(NET, clock=Clock(), jitter=lambda lo, hi: draws.append((lo, hi)) or lo)
    p._set_aside(p.nodes[0], RpcUnavailable("down"))
    p._set_aside(p.nodes[0], RpcUnavailable("down"))
    assert draws == [(0.5, 1.0), (1.0, 2.0)]


def test_an_answer_that_is_not_json_rpc_fails_over_but_an_error_answer_is_the_requests(pool):
    pool.nodes_[0].fail = BadAnswer("HTTP 502, not JSON")
    assert pool.call("x") == "https://two.example:8545"
    pool.nodes_[1].fail = RpcError("execution reverted")
    with pytest.raises(RpcError, match="reverted"):
        pool.call("x")
    assert pool.reader is pool.nodes[1]  # the node answered: it stays the reader


def test_a_node_on_another_chain_is_refused_with_an_error_log_and_never_serves(pool, caplog):
    pool.nodes_[0].chain_id = 31338
    with caplog.at_level(logging.ERROR, logger="kassa.chain_watcher"):
        assert pool.call("x") == "https://two.example:8545"
    assert "node 1 (https://one.example) refused: it answers chain id 31338, not 7" in caplog.text
    assert pool.nodes_[0].calls == ["eth_chainId"]
    assert sample("kassa_rpc_node_refused", 1) == 1
    pool.clock.now += REFUSED_SECONDS - 1
    pool.call("x")
    assert pool.nodes_[0].calls == ["eth_chainId"]  # not asked again meanwhile
    pool.clock.now += 2
    pool.nodes_[0].chain_id = 7  # the operator fixed it
    assert pool.call("x") == "https://one.example" and sample("kassa_rpc_node_refused", 1) == 0


def test_failing_over_checks_the_chain_of_the_new_reader_every_time(pool):
    pool.call("x")
    pool.nodes_[1].chain_id = 1
    pool.nodes_[0].fail = RpcUnavailable("down")
    assert pool.call("x") == "http://three.example"  # node 2 is on another chain
    assert pool.nodes_[1].calls == ["eth_chainId"]


def test_with_no_node_in_service_the_error_says_why_each_is_out_and_when_to_try_again(pool):
    pool.nodes_[0].fail = RpcUnavailable("https://one.example: ConnectionError")
    pool.nodes_[1].chain_id = 1
    pool.nodes_[2].fail = RpcUnavailable("http://three.example: HTTP 429", retry_after=30)
    with pytest.raises(NoNode) as info:
        pool.call("x")
    text = str(info.value)
    assert "node 2 (https://two.example:8545) refused: it answers chain id 1, not 7" in text
    assert "node 1 (https://one.example) RpcUnavailable" in text
    assert info.value.retry_after == pytest.approx(1.0)  # node 1 is back first
    assert isinstance(info.value, RpcUnavailable)  # callers back off as for one node


def test_no_key_of_any_node_url_reaches_a_log_or_an_error(caplog):
    caplog.set_level(logging.DEBUG)
    p = NodePool(NET, timeout=0.5, urls=("http://127.0.0.1:9/v3/KEYONE", "http://user:KEYTWO@127.0.0.1:9/x?k=KEYTHREE"))
    with pytest.raises(NoNode) as info:
        p.call("eth_blockNumber")
    seen = caplog.text + str(info.value)
    assert "ConnectionError" in seen
    for key in ("KEYONE", "KEYTWO", "KEYTHREE", "user"):
        assert key not in seen


def test_the_chain_check_reads_bitcoin_cores_chain_name():
    btc = Network("BTCNET", "bitcoin", None, 2, 600.0, "http://node", (), bech32_hrp="bc", bitcoin_chain="main")

    class Core:
        def call(self, method):
            assert method == "getblockchaininfo"
            return {"chain": "regtest"}

    assert chain_mismatch(btc, Core()) == "it is on Bitcoin chain 'regtest', not 'main'"
