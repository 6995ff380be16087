"""Native coin is credited only for value that really arrived, and every payment paid inside
one transaction is credited (DESIGN §5), on anvil with the contracts of tests/contracts:

- a contract sends the payment's address 1 wei for real, then 0.01 ETH from inside a call
  frame that reverts (the frame at depth 1 to 3, the value moved up to 2 calls below it):
  1 wei is received, nothing more;
- a top-level transaction that reverts (to a deployed forwarder deposit, whose code has no
  fallback for unknown calldata) credits nothing;
- the credits traced for an address in a block never exceed its balance rise there (a
  deposit flushed on in the middle of the transaction that paid it);
- one transaction paying 2 and 10 payments, in ETH (internal calls) and in USDC (one
  ``Transfer`` log each), completes every one of them.

The watcher, the settler and the API run as everywhere else (``tests.support.watcher``);
a payment that must not complete is checked once a payment paid in a later block has
completed: the watcher reports blocks in order and the one settler consumer settles them so.
"""

from __future__ import annotations

import uuid

import pytest
from web3 import Web3

from kassa_common.accounts import merchants
from kassa_common.chains import forwarder
from kassa_common.db import unit_of_work
from kassa_dev import chain as devchain
from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.contracts import deploy
from tests.support.forwarder import ensure_factory, fresh_address
from tests.support.rpc_proxy import RpcProxy
from tests.support.wait import until
from tests.support.watcher import live_evm, live_evm_fixture

CONFIRMATIONS = 2
WEI = 10**16  # 0.01 ETH: $30 at the fixed rate
TIMEOUT = 30


h = live_evm_fixture(CONFIRMATIONS, watching=True)


@pytest.fixture
def geth_like(settings, chain, engine, sessions, make_merchant):
    """The harness reading the chain through a node without ``trace_block``: the watcher
    falls back to ``debug_traceBlockByNumber`` with the call tracer (nested frames)."""
    with RpcProxy(chain.url) as proxy:
        proxy.unsupported = {"trace_block"}
        with live_evm(settings, engine, sessions, make_merchant, proxy.url(), CONFIRMATIONS, watching=True) as h:
            h.proxy = proxy
            yield h


@pytest.fixture
def payer(chain):
    return deploy(chain.w3, "Payer")


@pytest.fixture
def deposits(h, chain, sessions):
    """Forwarder mode for the harness's merchant: its payments' addresses are deposits."""
    settlement = fresh_address()
    with unit_of_work(sessions) as s:
        merchants.set_settlement_address(s, h.merchant.id, "live", settlement)
    return ensure_factory(chain.w3), settlement


def eth_payment(h) -> dict:
    p = h.create(amount=30, token="ETH")
    assert int(h.payment(p["id"]).crypto_amount_units) == WEI
    until(lambda: p["address"].lower() in h.watchlist.native, message="the address followed by balance")
    return p


def sender(chain) -> str:
    return chain.w3.eth.accounts[0]


def mined(chain, tx):
    return chain.w3.eth.wait_for_transaction_receipt(tx)


def settled_up_to_here(h, chain) -> None:
    """Everything mined so far is confirmed and settled: a payment paid after it completes."""
    marker = eth_payment(h)
    devchain.pay(chain.w3, to=marker["address"], amount_base_units=WEI, token_contract=None)
    chain.mine(CONFIRMATIONS)
    h.wait_status(marker["id"], "COMPLETED", timeout=TIMEOUT)


def received(h, pid) -> int:
    return int(h.payment(pid).amount_received_units or 0)


def deploy_deposit(chain, deposits, payment: dict) -> None:
    """Deploy the forwarder clone at ``payment``'s deposit address (a flush deploys it)."""
    factory, settlement = deposits
    salt = forwarder.payment_salt(uuid.UUID(payment["id"]))
    assert factory.functions.depositAddress(settlement, salt).call() == payment["address"]
    assert mined(chain, factory.functions.flush(settlement, salt, []).transact({"from": sender(chain)})).status == 1
    assert chain.w3.eth.get_code(payment["address"])


@pytest.mark.parametrize("fail_depth,send_depth", [(1, 0), (2, 1), (3, 2)])
def test_value_moved_inside_a_reverted_frame_credits_nothing(h, chain, payer, fail_depth, send_depth):
    p = eth_payment(h)
    tx = payer.functions.payThenFake(p["address"], 1, WEI, fail_depth, send_depth).transact(
        {"from": sender(chain), "value": WEI + 1}
    )
    assert mined(chain, tx).status == 1
    assert chain.w3.eth.get_balance(p["address"]) == 1
    traced = [
        t
        for t in chain.rpc("trace_transaction", tx.to_0x_hex())
        if (t["action"].get("to") or "").lower() == p["address"].lower()
    ]
    assert [int(t["action"]["value"], 16) for t in traced] == [1, WEI]  # what the node's traces show
    settled_up_to_here(h, chain)
    assert h.status(p["id"]) == "PARTIALLY_PAID" and received(h, p["id"]) == 1
    assert [int(t.amount_units) for t in h.transfers(p["id"])] == [1]


@pytest.mark.parametrize("fail_depth,send_depth", [(1, 0), (2, 1)])
def test_value_moved_inside_a_reverted_frame_credits_nothing_with_the_call_tracer(
    geth_like, chain, payer, fail_depth, send_depth
):
    h = geth_like
    p = eth_payment(h)
    tx = payer.functions.payThenFake(p["address"], 1, WEI, fail_depth, send_depth).transact(
        {"from": sender(chain), "value": WEI + 1}
    )
    assert mined(chain, tx).status == 1
    settled_up_to_here(h, chain)
    assert h.proxy.counts["unsupported"] >= 1  # trace_block was asked for, and refused
    assert h.status(p["id"]) == "PARTIALLY_PAID" and received(h, p["id"]) == 1
    assert [(t.tx_hash, int(t.amount_units)) for t in h.transfers(p["id"])] == [(tx.to_0x_hex(), 1)]


def test_a_reverted_transaction_to_a_deployed_forwarder_credits_nothing(h, chain, deposits):
    p = eth_payment(h)
    deploy_deposit(chain, deposits, p)
    devchain.pay(chain.w3, to=p["address"], amount_base_units=WEI // 2, token_contract=None)  # its receive()
    tx = chain.w3.eth.send_transaction(
        {"from": sender(chain), "to": p["address"], "value": WEI // 2, "data": "0xdeadbeef", "gas": 100_000}
    )  # no fallback: reverts
    assert mined(chain, tx).status == 0
    assert chain.w3.eth.get_balance(p["address"]) == WEI // 2
    settled_up_to_here(h, chain)
    assert h.status(p["id"]) == "PARTIALLY_PAID" and received(h, p["id"]) == WEI // 2
    assert tx.to_0x_hex() not in {t.tx_hash for t in h.transfers(p["id"])}


def test_a_reverted_transaction_before_the_address_reached_the_watcher_credits_nothing(h, chain, deposits):
    p = eth_payment(h)
    address = p["address"].lower()
    deploy_deposit(chain, deposits, p)
    # as if the address had not reached the watcher (bus lost, reload not due): backfilled later
    h.watchlist.replace([a for a in h.watchlist._all if a != address], native=())
    h.watchlist.take_new()
    devchain.pay(chain.w3, to=p["address"], amount_base_units=WEI // 2, token_contract=None)
    tx = chain.w3.eth.send_transaction(
        {"from": sender(chain), "to": p["address"], "value": WEI // 2, "data": "0xdeadbeef", "gas": 100_000}
    )
    assert mined(chain, tx).status == 0
    chain.mine(CONFIRMATIONS + 30)  # confirmed, and out of the blocks the watcher keeps
    until(
        lambda: h.watcher.scanner.state.confirmed_through >= chain.block_number - CONFIRMATIONS + 1,
        message="watcher past the transactions",
    )
    h.watchlist.add(address, native=True)  # arrives late
    h.wait_status(p["id"], "PARTIALLY_PAID", timeout=TIMEOUT)
    settled_up_to_here(h, chain)
    assert h.status(p["id"]) == "PARTIALLY_PAID" and received(h, p["id"]) == WEI // 2
    assert tx.to_0x_hex() not in {t.tx_hash for t in h.transfers(p["id"])}


def test_credits_never_exceed_the_balance_rise_they_explain(h, chain, payer, deposits):
    p = eth_payment(h)
    deploy_deposit(chain, deposits, p)
    _, settlement = deposits
    tx = payer.functions.payFlushPay(p["address"], WEI, 1).transact({"from": sender(chain), "value": WEI + 1})
    assert mined(chain, tx).status == 1
    assert chain.w3.eth.get_balance(p["address"]) == 1 and chain.w3.eth.get_balance(settlement) == WEI
    settled_up_to_here(h, chain)
    assert h.status(p["id"]) == "PARTIALLY_PAID" and received(h, p["id"]) == 1
    assert [int(t.amount_units) for t in h.transfers(p["id"])] == [1]


@pytest.mark.parametrize("n", [2, 10])
def test_one_transaction_paying_several_payments_in_eth_completes_them_all(h, chain, payer, n):
    payments = [eth_payment(h) for _ in range(n)]
    to = [Web3.to_checksum_address(p["address"]) for p in payments]
    tx = payer.functions.payMany(to, [WEI] * n).transact({"from": sender(chain), "value": WEI * n})
    assert mined(chain, tx).status == 1
    chain.mine(CONFIRMATIONS - 1)
    for p in payments:
        h.wait_status(p["id"], "COMPLETED", timeout=TIMEOUT)
        (t,) = h.transfers(p["id"])
        assert (t.tx_hash, int(t.amount_units)) == (tx.to_0x_hex(), WEI)
        assert received(h, p["id"]) == WEI


@pytest.mark.parametrize("n", [2, 10])
def test_one_transaction_paying_several_payments_in_usdc_completes_them_all(h, chain, payer, n):
    payments = [h.create(amount=5, token="USDC") for _ in range(n)]
    usdc = devchain.erc20(chain.w3, chain.tokens["USDC"])
    assert usdc.functions.approve(payer.address, 5 * 10**6 * n).transact({"from": sender(chain)})
    until(lambda: all(p["address"].lower() in h.watchlist for p in payments), message="addresses watched")
    tx = payer.functions.payTokens(
        usdc.address, [Web3.to_checksum_address(p["address"]) for p in payments], [5 * 10**6] * n
    ).transact({"from": sender(chain)})
    assert mined(chain, tx).status == 1
    chain.mine(CONFIRMATIONS - 1)
    for p in payments:
        h.wait_status(p["id"], "COMPLETED", timeout=TIMEOUT)
        (t,) = h.transfers(p["id"])
        assert t.tx_hash == tx.to_0x_hex() and received(h, p["id"]) == 5 * 10**6
