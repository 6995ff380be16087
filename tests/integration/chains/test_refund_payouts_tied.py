"""A refund is paid by its own payout, never a stranger's (DESIGN §8, "Tied to its refund" and
"Mode and merchant never mix"), on anvil with the real watcher, settler and API:

- the watcher completes a refund only from a transfer of exactly its ``payout_amount``: an
  unrelated inflow of more than the amount to the claimed address pays nothing;
- a test-mode refund claimed to an address never takes a live payout sent there, nor one of
  its own ``payout_amount``;
- two merchants' refunds claimed to one address are each completed by their own tagged
  payout, whichever is paid first;
- a submitted hash needs at least ``amount`` and is refused when it comes from the claimed
  address itself, is a Kassa sweep, or moves a payment's deposit; the sender is recorded
  (``payout_from``);
- a refund whose payout is seen cannot be canceled;
- under ``LOCAL_EVM_RPC_QUORUM=2`` a lying node neither completes a refund by a hash nor
  moves a claim's ``claim_block``, which is the nodes' tip at the claim (not the watcher's
  scanned height, which lags).
"""

from __future__ import annotations

import argparse
import builtins
import json
import secrets
from contextlib import contextmanager
from decimal import Decimal

import pytest
from web3 import Web3

from kassa_common.db import unit_of_work
from kassa_common.models import Sweep
from kassa_common.refunds import transitions
from kassa_dev import chain as devchain
from kassa_dev.cli import cmd_dev_pay_refund
from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.api import set_live_wallet
from tests.support.refund_payouts import claim, create_refund, get, row, status
from tests.support.refunds import settle_confirmed
from tests.support.rpc_proxy import RpcProxy
from tests.support.wait import until
from tests.support.watcher import live_evm, live_evm_fixture

CONFIRMATIONS = 2
TIMEOUT = 30
API = "/v1/api"
USDC = 10**6


h = live_evm_fixture(CONFIRMATIONS, watching=True)


def wallet() -> str:
    """A customer's own address, this test's alone (the database outlives anvil's snapshots)."""
    return Web3.to_checksum_address("0x" + secrets.token_hex(20))


def merchant_wallet(chain) -> str:
    return chain.w3.eth.accounts[1]


def units(amount: str) -> int:
    return int(Decimal(amount) * USDC)


def usdc(chain, to: str, amount_units: int, sender: str | None = None) -> str:
    return devchain.pay(
        chain.w3,
        to=to,
        amount_base_units=amount_units,
        token_contract=chain.tokens["USDC"],
        sender=sender or merchant_wallet(chain),
    )


def paid(h, chain, amount=5) -> dict:
    p = h.create(amount=amount, token="USDC")
    devchain.pay(
        chain.w3,
        to=p["address"],
        amount_base_units=int(h.payment(p["id"]).crypto_amount_units),
        token_contract=chain.tokens["USDC"],
    )
    chain.mine(CONFIRMATIONS)
    h.wait_status(p["id"], "COMPLETED", timeout=TIMEOUT)
    return p


def settled_up_to_here(h, chain) -> None:
    """Everything mined so far is settled: a payment paid after it completes."""
    paid(h, chain, amount=1)


def pay_refund(refund: dict, settings) -> str:
    """``kassa dev pay-refund REFUND_ID --json``; the payout's transaction hash."""
    out: list[str] = []
    original = builtins.print
    builtins.print = lambda *a, **k: out.append(" ".join(map(str, a)))  # type: ignore[assignment]
    try:
        cmd_dev_pay_refund(argparse.Namespace(refund_id=refund["id"], amount=None, json=True), settings)
    finally:
        builtins.print = original
    return json.loads(out[-1])["tx_hash"]


def complete(h, refund: dict, tx: str):
    return h.client.post(
        f"{API}/refunds/{refund['id']}/complete", json={"transaction_hash": tx}, headers=h.merchant.headers("live")
    )


@contextmanager
def as_merchant(h, merchant):
    before = h.merchant
    h.merchant = merchant
    try:
        yield
    finally:
        h.merchant = before


def test_only_a_transfer_of_exactly_payout_amount_completes_a_refund(h, chain):
    p = paid(h, chain)
    refund = create_refund(h, p, amount="1")
    to = wallet()
    claimed = claim(h, refund, to)
    due = units(claimed["payout_amount"])
    assert USDC < due < USDC + 1000, claimed["payout_amount"]
    usdc(chain, to, 5 * USDC, sender=chain.w3.eth.accounts[0])  # an unrelated inflow, more than the amount
    usdc(chain, to, USDC)  # the bare amount, without the tag
    chain.mine(CONFIRMATIONS)
    settled_up_to_here(h, chain)
    assert status(h, refund) == "AWAITING_PAYMENT" and row(h, refund).transfer_ref is None
    tx = pay_refund(refund, h.settings)
    chain.mine(CONFIRMATIONS)
    until(lambda: status(h, refund) == "COMPLETED", TIMEOUT, message="refund COMPLETED")
    done = get(h, refund)
    assert done["transaction_hash"] == tx and done["payout_amount"] == claimed["payout_amount"]
    assert done["payout_from"].lower() == merchant_wallet(chain).lower()


def test_a_test_refund_never_takes_a_live_payout(h, chain, client, sessions):
    to = wallet()
    m = h.merchant
    test_payment = client.post(
        f"{API}/payments", json={"amount": 5, "token": "USDC", "network": "LOCAL_EVM"}, headers=m.headers("test")
    ).get_json()["data"]
    settle_confirmed(sessions, test_payment, 5 * USDC)
    r = client.post(f"{API}/payments/{test_payment['id']}/refunds", json={"amount": "1"}, headers=m.headers("test"))
    test_refund = r.get_json()["data"]
    with unit_of_work(h.sessions) as s:  # claimed first: the older claim
        transitions.claim_refund(s, row(h, test_refund).claim_token, to, registry=h.settings.networks)
    test_due = int(row(h, test_refund).amount_units) + row(h, test_refund).payout_tag

    live = create_refund(h, paid(h, chain), amount="1")
    claimed = claim(h, live, to)
    usdc(chain, to, test_due)  # even the test refund's own payout_amount, on chain
    tx = usdc(chain, to, units(claimed["payout_amount"]))
    chain.mine(CONFIRMATIONS)
    until(lambda: status(h, live) == "COMPLETED", TIMEOUT, message="the live refund COMPLETED")
    settled_up_to_here(h, chain)
    assert get(h, live)["transaction_hash"] == tx
    assert status(h, test_refund) == "AWAITING_PAYMENT" and row(h, test_refund).transfer_ref is None


def test_two_merchants_refunds_claimed_to_one_address_are_each_paid_by_their_own_payout(
    h, chain, make_merchant, sessions
):
    to = wallet()
    other = make_merchant()
    set_live_wallet(sessions, other.id, "evm")
    first = create_refund(h, paid(h, chain), amount="1")
    with as_merchant(h, other):
        second = create_refund(h, paid(h, chain), amount="1")
    a = claim(h, first, to)  # the older claim
    with as_merchant(h, other):
        b = claim(h, second, to)
    assert a["payout_amount"] != b["payout_amount"]
    tx_b = usdc(chain, to, units(b["payout_amount"]))  # the newer claim's paid first
    chain.mine(CONFIRMATIONS)
    with as_merchant(h, other):
        until(lambda: status(h, second) == "COMPLETED", TIMEOUT, message="the second refund COMPLETED")
        assert get(h, second)["transaction_hash"] == tx_b
    settled_up_to_here(h, chain)
    assert status(h, first) == "AWAITING_PAYMENT"
    tx_a = usdc(chain, to, units(a["payout_amount"]))
    chain.mine(CONFIRMATIONS)
    until(lambda: status(h, first) == "COMPLETED", TIMEOUT, message="the first refund COMPLETED")
    assert get(h, first)["transaction_hash"] == tx_a


def test_a_submitted_hash_from_the_address_itself_a_sweep_or_a_deposit_is_refused(h, chain, sessions):
    customer = chain.w3.eth.accounts[7]  # the customer's wallet, which can send
    p = paid(h, chain)
    refund = create_refund(h, p, amount="1")
    claim(h, refund, customer)
    h.stop_watchers()  # nothing but the hash completes it

    own = usdc(chain, customer, 2 * USDC, sender=customer)  # the customer's own transfer to itself
    swept = usdc(chain, customer, 2 * USDC)
    with unit_of_work(sessions) as s:  # as if Kassa's sweeper had sent it
        s.add(
            Sweep(
                network="LOCAL_EVM",
                sender=merchant_wallet(chain),
                nonce=0,
                status="CONFIRMED",
                tx_hash=swept,
                deposit_count=1,
                gas_limit=100_000,
            )
        )
    chain.rpc("anvil_setBalance", p["address"], hex(10**18))
    deposit = usdc(chain, customer, USDC, sender=p["address"])  # out of a payment's deposit address
    small = usdc(chain, customer, USDC - 1)
    chain.mine(CONFIRMATIONS)
    for tx, why in ((own, "its own address"), (swept, "sweep"), (deposit, "deposit"), (small, "too small")):
        r = complete(h, refund, tx)
        assert r.status_code == 400, (why, r.get_data(as_text=True))
        assert why in r.get_json()["error"]["message"], (why, r.get_json())
    assert status(h, refund) == "AWAITING_PAYMENT"
    tx = usdc(chain, customer, USDC)  # at least the amount: the tag is for the watcher only
    chain.mine(CONFIRMATIONS)
    r = complete(h, refund, tx)
    assert r.status_code == 200, r.get_data(as_text=True)
    done = r.get_json()["data"]
    assert done["status"] == "COMPLETED" and done["payout_from"].lower() == merchant_wallet(chain).lower()


def test_a_refund_whose_payout_is_seen_cannot_be_canceled(h, chain):
    refund = create_refund(h, paid(h, chain), amount="1")
    claimed = claim(h, refund, wallet())
    usdc(chain, claimed["address"], units(claimed["payout_amount"]))  # one confirmation of two
    until(lambda: row(h, refund).transfer_ref is not None, TIMEOUT, message="payout seen")
    r = h.client.post(f"{API}/refunds/{refund['id']}/cancel", headers=h.merchant.headers("live"))
    assert r.status_code == 409, r.get_data(as_text=True)
    chain.mine(CONFIRMATIONS)
    until(lambda: status(h, refund) == "COMPLETED", TIMEOUT, message="refund COMPLETED")


# -- under an RPC quorum, one node lying ----------------------------------------------------------


@pytest.fixture
def liar(chain):
    with RpcProxy(chain.url) as proxy:
        yield proxy


@pytest.fixture
def hq(settings, chain, engine, sessions, make_merchant, liar):
    """A harness reading LOCAL_EVM from the lying proxy first, then anvil itself, with a
    quorum of 2: the two must agree."""
    env = {"LOCAL_EVM_RPC_URLS": f"{liar.url()},{chain.url}", "LOCAL_EVM_RPC_QUORUM": "2"}
    with live_evm(settings, engine, sessions, make_merchant, chain.url, CONFIRMATIONS, watching=True, env=env) as h:
        yield h


def test_a_claim_takes_the_nodes_tip_and_a_lying_node_does_not_move_it(hq, chain, liar):
    h = hq
    refund = create_refund(h, paid(h, chain), amount="1")
    h.stop_watchers()  # the watcher's scanned height stays behind
    chain.mine(5)
    tip = chain.block_number
    liar.rewrite = lambda req, answer: (
        {**answer, "result": hex(tip + 1000)}
        if isinstance(req, dict) and req.get("method") == "eth_blockNumber"
        else answer
    )
    with unit_of_work(h.sessions) as s:
        transitions.claim_refund(s, row(h, refund).claim_token, wallet(), registry=h.settings.networks)
    assert row(h, refund).claim_block == tip


def test_a_hash_a_lying_node_invents_does_not_complete_a_refund_under_quorum(hq, chain, liar):
    h = hq
    refund = create_refund(h, paid(h, chain), amount="1")
    claimed = claim(h, refund, wallet())
    h.stop_watchers()
    elsewhere = wallet()
    tx = usdc(chain, elsewhere, units(claimed["payout_amount"]))  # pays someone else
    chain.mine(CONFIRMATIONS)
    topic = "0x" + "00" * 12 + claimed["address"][2:].lower()
    theirs = "0x" + "00" * 12 + elsewhere[2:].lower()

    def lie(req, answer):  # the reader says it paid the refund's address
        if isinstance(req, dict) and req.get("method") == "eth_getTransactionReceipt" and answer.get("result"):
            for log in answer["result"].get("logs") or []:
                log["topics"] = [topic if t.lower() == theirs else t for t in log["topics"]]
        return answer

    liar.rewrite = lie
    r = complete(h, refund, tx)
    assert r.status_code in (400, 409), r.get_data(as_text=True)
    assert status(h, refund) == "AWAITING_PAYMENT"
    liar.rewrite = None
    r = complete(h, refund, tx)
    assert r.status_code == 400 and "pays someone else" in r.get_json()["error"]["message"]
