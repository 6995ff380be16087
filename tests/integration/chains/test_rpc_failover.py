"""Several nodes for one network, on anvil: the same chain behind two proxies (one of which
goes down, or answers other block hashes), and a second anvil on another chain id.

- one node down: the watcher keeps going on the other, and comes back to the first;
- ``LOCAL_EVM_RPC_QUORUM=2`` with one node answering other block hashes: the payment is
  seen, never credited, until the nodes agree; then it completes;
- a node on the wrong chain id: refused (logged, in the metrics), never read from, by
  the watcher, ``kassa sweep`` and ``kassa contracts deploy``.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import pytest
from prometheus_client import REGISTRY

from kassa_common.chains.networks import load_registry
from kassa_dev import chain as devchain
from tests.support.anvil import anvil, anvil_isolated, chain, start_chain  # noqa: F401  (fixtures)
from tests.support.api import set_live_wallet
from tests.support.cli import cli_runner
from tests.support.rpc_proxy import RpcProxy
from tests.support.wait import until
from tests.support.watcher import harness, pay_usdc

CONFIRMATIONS = 2


@pytest.fixture
def first(chain):
    with RpcProxy(chain.url) as p:
        yield p


@pytest.fixture
def second(chain):
    with RpcProxy(chain.url) as p:
        yield p


@pytest.fixture(scope="module")
def other_chain():
    """An anvil on chain id 31338: a node someone pointed at the wrong chain."""
    c = start_chain(chain_id=devchain.CHAIN_ID_2)
    yield c
    devchain.stop_anvil(c.proc)


@contextmanager
def nodes(settings, engine, sessions, make_merchant, urls: list[str], quorum: int = 1):
    env = {
        "LOCAL_EVM_RPC_URLS": ",".join(urls),
        "LOCAL_EVM_RPC_QUORUM": str(quorum),
        "LOCAL_EVM_CONFIRMATIONS": str(CONFIRMATIONS),
    }
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "evm")
    with harness(settings.with_(networks=load_registry(env)), engine, sessions, merchant, "LOCAL_EVM") as h:
        yield h


def metric(name: str, url: str | None = None, node: int | None = None) -> float:
    labels = {"network": "LOCAL_EVM"} | ({"node": str(node), "url": url} if url else {})
    return REGISTRY.get_sample_value(name, labels) or 0


def transfer_statuses(h, pid) -> list[str]:
    return [t.status for t in h.transfers(pid)]


def test_with_one_node_down_the_watcher_keeps_going_on_the_other(
    settings, engine, sessions, make_merchant, chain, first, second, caplog
):
    caplog.set_level(logging.INFO, logger="kassa.chain_watcher")
    with nodes(settings, engine, sessions, make_merchant, [first.url("/v3/KEY1"), second.url("/v3/KEY2")]) as h:
        watcher = h.start_watcher()
        until(watcher.active.is_set, message="watcher active")
        failovers = metric("kassa_rpc_failovers_total")
        p1 = h.create(amount=3)
        first.down()  # the preferred node goes away
        pay_usdc(chain, p1)
        chain.mine(CONFIRMATIONS)
        h.wait_status(p1["id"], "COMPLETED", timeout=30)
        assert metric("kassa_rpc_failovers_total") == failovers + 1
        assert metric("kassa_rpc_node_up", first.url(), 1) == 0
        assert "reading from node 2 (" + second.url() + ")" in caplog.text

        first.up()  # back: preferred again once its backoff passed, and the second may go
        until(lambda: watcher.scanner.chain.rpc.reader.index == 1, 30, message="back on node 1")
        second.down()
        p2 = h.create(amount=4)
        pay_usdc(chain, p2)
        chain.mine(CONFIRMATIONS)
        h.wait_status(p2["id"], "COMPLETED", timeout=30)
        for p in (p1, p2):
            assert transfer_statuses(h, p["id"]) == ["CONFIRMED"]
    assert "KEY1" not in caplog.text and "KEY2" not in caplog.text


def test_with_a_quorum_of_two_a_node_answering_other_block_hashes_holds_the_credit_until_they_agree(
    settings, engine, sessions, make_merchant, chain, first, second, caplog
):
    caplog.set_level(logging.INFO, logger="kassa.chain_watcher")
    second.rewrite_hashes = True  # node 2 is on another fork (or lies about the chain)
    with nodes(settings, engine, sessions, make_merchant, [first.url(), second.url()], quorum=2) as h:
        watcher = h.start_watcher()
        until(watcher.active.is_set, message="watcher active")
        p = h.create(amount=5)
        disagreements = metric("kassa_rpc_node_disagreements_total", second.url(), 2)
        pay_usdc(chain, p)
        chain.mine(CONFIRMATIONS + 3)
        until(
            lambda: (
                transfer_statuses(h, p["id"]) == ["SEEN"]
                and metric("kassa_rpc_node_disagreements_total", second.url(), 2) >= disagreements + 2
                and watcher.scanner.state.head == chain.block_number
            ),
            30,
            message="the transfer seen, node 2 disagreeing on the blocks past the depth",
        )
        assert h.status(p["id"]) == "PENDING"  # seen, never credited on node 1's word alone
        assert "node 2 (" + second.url() + ") disagrees" in caplog.text
        assert "confirmations held" in caplog.text

        second.rewrite_hashes = False  # the nodes agree again
        h.wait_status(p["id"], "COMPLETED", timeout=30)
        assert transfer_statuses(h, p["id"]) == ["CONFIRMED"]


def test_with_a_quorum_of_two_and_the_other_node_down_nothing_is_credited_until_it_is_back(
    settings, engine, sessions, make_merchant, chain, first, second
):
    with nodes(settings, engine, sessions, make_merchant, [first.url(), second.url()], quorum=2) as h:
        watcher = h.start_watcher()
        until(watcher.active.is_set, message="watcher active")
        p = h.create(amount=6)
        second.down()
        waits = metric("kassa_rpc_quorum_waits_total")
        pay_usdc(chain, p)
        chain.mine(CONFIRMATIONS + 2)
        until(
            lambda: (
                transfer_statuses(h, p["id"]) == ["SEEN"]
                and metric("kassa_rpc_quorum_waits_total") > waits
                and watcher.scanner.state.head == chain.block_number
            ),
            30,
            message="seen, held back",
        )
        assert h.status(p["id"]) == "PENDING"
        second.up()
        h.wait_status(p["id"], "COMPLETED", timeout=30)


def test_a_node_on_another_chain_id_is_refused_and_never_read(
    settings, engine, sessions, make_merchant, chain, first, other_chain, caplog
):
    caplog.set_level(logging.INFO, logger="kassa.chain_watcher")
    wrong = RpcProxy(other_chain.url).up()
    try:
        with nodes(settings, engine, sessions, make_merchant, [wrong.url("/v3/KEY"), first.url()]) as h:
            watcher = h.start_watcher()
            until(watcher.active.is_set, message="watcher active")
            p = h.create(amount=7)
            pay_usdc(chain, p)
            chain.mine(CONFIRMATIONS)
            h.wait_status(p["id"], "COMPLETED", timeout=30)
        assert f"node 1 ({wrong.url()}) refused: it answers chain id 31338, not 31337" in caplog.text
        assert metric("kassa_rpc_node_refused", wrong.url(), 1) == 1
        assert wrong.counts["forwarded"] == 1  # its eth_chainId: nothing else was asked of it
        assert "KEY" not in caplog.text.replace("KEYS", "")
    finally:
        wrong.down()


@pytest.fixture
def kassa(database_url, monkeypatch, capsys):
    kassa = cli_runner(
        monkeypatch, capsys, {"DATABASE_URL": database_url, "SWEEPER_PRIVATE_KEY": devchain.SWEEPER_PRIVATE_KEY}
    )

    def run(urls: list[str], *args: str) -> tuple[int, str, str]:
        monkeypatch.setenv("LOCAL_EVM_RPC_URLS", ",".join(urls))
        return kassa(*args)

    return run


@pytest.mark.parametrize(
    "command", [["sweep", "--network", "LOCAL_EVM", "--dry-run"], ["contracts", "deploy", "--network", "LOCAL_EVM"]]
)
def test_kassa_sweep_and_contracts_deploy_refuse_a_node_on_another_chain(kassa, other_chain, command):
    code, _, err = kassa([other_chain.url], *command)
    assert code == 1
    assert f"node 1 ({other_chain.url}) refused: it answers chain id 31338, not 31337" in err


def test_kassa_sweep_fails_over_past_a_refused_node(kassa, other_chain, chain):
    code, out, err = kassa([other_chain.url, chain.url], "sweep", "--network", "LOCAL_EVM", "--dry-run")
    assert code == 0, err
    assert "nothing to sweep on LOCAL_EVM" in out or "would sweep" in out


def test_kassa_dev_pay_refuses_a_node_on_another_chain(
    kassa, other_chain, app, base_env, monkeypatch, make_merchant, sessions
):
    from kassa_common.chains.hd import TEST_XPUBS

    for name, value in base_env.items():
        monkeypatch.setenv(name, value)
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "evm", TEST_XPUBS["evm"])
    r = app.test_client().post(
        "/v1/api/payments",
        json={"amount": 1, "token": "USDC", "network": "LOCAL_EVM"},
        headers=merchant.headers("live"),
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    code, _, err = kassa([other_chain.url], "dev", "pay", r.get_json()["data"]["short_id"])
    assert code == 1 and "is on chain id 31338, not 31337" in err
