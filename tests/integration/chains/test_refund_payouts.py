"""Refund payouts on anvil with the real contracts, the real watcher and settler (DESIGN §8):

- an over-paid USDC payment refunded in part: claimed, paid with ``kassa dev pay-refund``
  (its ``payout_amount``), COMPLETED with the payout's hash once confirmed,
  ``refunded_amount`` on the payment;
- a native ETH refund, paid by a top-level transfer, and one paid from inside a contract;
- a payout inside a call frame that reverted, a payout smaller than the refund, and one
  to a canceled refund complete nothing;
- two refunds claimed to one address: each is completed by its own payout (its
  ``payout_amount``), whichever is paid first;
- a refund completed by a submitted transaction hash (``POST /refunds/:id/complete``), and
  the hashes refused: paying someone else, too small, not yet confirmed, already used;
- a completed refund whose payout a reorg deeper than the confirmations took away goes back
  to AWAITING_PAYMENT with ``refund.reorged``.
"""

from __future__ import annotations

import argparse
import secrets
import uuid
from decimal import Decimal

import pytest
import sqlalchemy as sa
from web3 import Web3

from kassa_common.db import unit_of_work
from kassa_common.messaging.relay import relay_pending
from kassa_common.models import Event
from kassa_common.refunds import transitions
from kassa_chain_watcher.watchlist import reload
from kassa_dev import chain as devchain
from kassa_dev.cli import cmd_dev_pay_refund
from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.contracts import deploy
from tests.support.refund_payouts import claim, create_refund, get, row, status
from tests.support.wait import until
from tests.support.watcher import live_evm_fixture

CONFIRMATIONS = 2
TIMEOUT = 30
API = "/v1/api"
USDC = 10**6
WEI = 10**16  # 0.01 ETH: $30 at the fixed rate


h = live_evm_fixture(CONFIRMATIONS, watching=True)


WALLETS: dict[int, str] = {}


@pytest.fixture(autouse=True)
def fresh_wallets():
    """Each test's customers have wallets of their own: the refunds other tests leave waiting
    (the database outlives anvil's snapshots) are claimed to other addresses."""
    WALLETS.clear()


def customer(chain, n: int = 3) -> str:
    """An address of the customer's own wallet ``n`` (never a deposit), this test's own."""
    return WALLETS.setdefault(n, Web3.to_checksum_address("0x" + secrets.token_hex(20)))


def merchant_wallet(chain) -> str:
    return chain.w3.eth.accounts[1]  # `kassa dev pay-refund` pays from it


def paid(h, chain, *, amount=5, pay_units: int | None = None, token="USDC") -> dict:
    """A live payment of ``amount`` (USD) in ``token``, paid ``pay_units`` (default: what is due), completed."""
    p = h.create(amount=amount, token=token)
    units = pay_units if pay_units is not None else int(h.payment(p["id"]).crypto_amount_units)
    contract = chain.tokens.get(token)
    devchain.pay(chain.w3, to=p["address"], amount_base_units=units, token_contract=contract)
    chain.mine(CONFIRMATIONS)
    h.wait_status(p["id"], "COMPLETED", timeout=TIMEOUT)
    return p


def payment_amounts(h, p: dict) -> tuple[str, str]:
    got = h.client.get(f"{API}/payments/{p['id']}", headers=h.merchant.headers("live")).get_json()["data"]
    return got["refunded_amount"], got["refundable_amount"]


def wait_refund(h, refund: dict, wanted: str, timeout: float = TIMEOUT) -> None:
    until(lambda: status(h, refund) == wanted, timeout, message=f"refund {wanted}")


def refund_events(h, refund: dict) -> list[str]:
    with h.sessions() as s:
        rows = s.execute(
            sa.select(Event.type, Event.payload).where(Event.type.like("refund.%")).order_by(Event.created_at)
        ).all()
    return [t for t, payload in rows if payload["data"]["id"] == refund["id"]]


def pay_refund(chain, refund: dict, settings, amount: Decimal | None = None) -> str:
    """``kassa dev pay-refund REFUND_ID`` as the CLI runs it; the payout's transaction hash."""
    out: list[str] = []
    import builtins

    original = builtins.print
    builtins.print = lambda *a, **k: out.append(" ".join(map(str, a)))  # type: ignore[assignment]
    try:
        cmd_dev_pay_refund(argparse.Namespace(refund_id=refund["id"], amount=amount), settings)
    finally:
        builtins.print = original
    return out[-1].rsplit(" ", 1)[-1]


def tag(h, refund: dict) -> int:
    """The refund's payout tag: its ``payout_amount`` is its amount plus these base units."""
    return row(h, refund).payout_tag


def settled_up_to_here(h, chain) -> None:
    """Everything mined so far is confirmed and settled: a payment paid after it completes."""
    paid(h, chain, amount=1)


def test_an_over_paid_usdc_payment_is_refunded_in_part_and_completed_by_its_payout(h, chain):
    p = paid(h, chain, amount=5, pay_units=7 * USDC)  # 2 USDC too much
    assert (
        h.client.get(f"{API}/payments/{p['id']}", headers=h.merchant.headers("live")).get_json()["data"][
            "refundable_amount"
        ]
        == "7"
    )
    refund = create_refund(h, p, amount="2", reason="paid too much")
    assert refund["status"] == "AWAITING_ADDRESS"
    claimed = claim(h, refund, customer(chain))
    assert claimed["status"] == "AWAITING_PAYMENT" and claimed["address"] == customer(chain)

    tx = pay_refund(chain, refund, h.settings)
    assert chain.w3.eth.get_transaction(tx)["from"] == merchant_wallet(chain)
    chain.mine(CONFIRMATIONS)
    wait_refund(h, refund, "COMPLETED")
    done = get(h, refund)
    assert done["transaction_hash"] == tx and done["completed_at"]
    assert payment_amounts(h, p) == ("2", "5")
    assert refund_events(h, refund) == ["refund.created", "refund.claimed", "refund.completed"]
    assert row(h, refund).transfer_ref.startswith(tx.lower() + ":0:")


def test_a_native_eth_refund_is_completed_by_its_payout(h, chain):
    p = paid(h, chain, amount=30, token="ETH")
    refund = create_refund(h, p, amount="0.004")
    claim(h, refund, customer(chain))
    before = chain.w3.eth.get_balance(customer(chain))
    tx = pay_refund(chain, refund, h.settings)
    assert chain.w3.eth.get_balance(customer(chain)) == before + 4 * 10**15 + tag(h, refund)
    chain.mine(CONFIRMATIONS)
    wait_refund(h, refund, "COMPLETED")
    assert get(h, refund)["transaction_hash"] == tx
    assert get(h, refund)["payout_from"].lower() == merchant_wallet(chain).lower()  # the transaction's sender


def test_a_native_refund_paid_from_inside_a_contract_completes_and_a_reverted_frame_pays_nothing(h, chain):
    payer = deploy(chain.w3, "Payer")
    p = paid(h, chain, amount=30, token="ETH")
    faked, real = create_refund(h, p, amount="0.004"), create_refund(h, p, amount="0.003")
    claim(h, faked, customer(chain, 4))
    claim(h, real, customer(chain, 5))
    until(lambda: customer(chain, 4).lower() in h.watchlist.native, message="followed by balance")
    sender = chain.w3.eth.accounts[0]
    faked_due = 4 * 10**15 + tag(h, faked)  # its payout_amount, in a frame that reverts
    fake = payer.functions.payThenFake(customer(chain, 4), 0, faked_due, 1, 0).transact(
        {"from": sender, "value": faked_due}
    )
    assert chain.w3.eth.wait_for_transaction_receipt(fake).status == 1  # the transaction itself succeeded
    due = 3 * 10**15 + tag(h, real)  # its payout_amount
    sent = payer.functions.payThenFake(customer(chain, 5), due, 0, 1, 0).transact({"from": sender, "value": due})
    assert chain.w3.eth.wait_for_transaction_receipt(sent).status == 1
    chain.mine(CONFIRMATIONS)
    wait_refund(h, real, "COMPLETED")
    assert get(h, real)["transaction_hash"] == sent.to_0x_hex()
    settled_up_to_here(h, chain)
    assert status(h, faked) == "AWAITING_PAYMENT" and row(h, faked).transfer_ref is None


def test_a_payout_smaller_than_the_refund_completes_nothing(h, chain):
    p = paid(h, chain, amount=5)
    refund = create_refund(h, p, amount="3")
    claim(h, refund, customer(chain))
    pay_refund(chain, refund, h.settings, amount=Decimal("2.999999"))
    chain.mine(CONFIRMATIONS)
    settled_up_to_here(h, chain)
    assert status(h, refund) == "AWAITING_PAYMENT"
    tx = pay_refund(chain, refund, h.settings)  # the whole amount, later: completes it
    chain.mine(CONFIRMATIONS)
    wait_refund(h, refund, "COMPLETED")
    assert get(h, refund)["transaction_hash"] == tx


def test_a_canceled_refund_is_not_completed_by_a_later_payout(h, chain):
    p = paid(h, chain, amount=5)
    refund = create_refund(h, p, amount="1")
    claim(h, refund, customer(chain))
    r = h.client.post(f"{API}/refunds/{refund['id']}/cancel", headers=h.merchant.headers("live"))
    assert r.status_code == 200, r.get_data(as_text=True)
    devchain.pay(
        chain.w3,
        to=customer(chain),
        amount_base_units=USDC,
        token_contract=chain.tokens["USDC"],
        sender=merchant_wallet(chain),
    )
    chain.mine(CONFIRMATIONS)
    settled_up_to_here(h, chain)
    assert status(h, refund) == "CANCELED" and row(h, refund).transaction_hash is None
    assert "refund.completed" not in refund_events(h, refund)


def test_two_refunds_claimed_to_one_address_need_two_payouts(h, chain):
    p = paid(h, chain, amount=5)
    first, second = create_refund(h, p, amount="1"), create_refund(h, p, amount="1")
    claim(h, second, customer(chain))  # claimed first: the older claim
    claim(h, first, customer(chain))
    assert tag(h, first) != tag(h, second)
    one = devchain.pay(
        chain.w3,
        to=customer(chain),
        amount_base_units=USDC + tag(h, second),
        token_contract=chain.tokens["USDC"],
        sender=merchant_wallet(chain),
    )
    chain.mine(CONFIRMATIONS)
    wait_refund(h, second, "COMPLETED")
    settled_up_to_here(h, chain)
    assert status(h, first) == "AWAITING_PAYMENT" and get(h, second)["transaction_hash"] == one
    two = pay_refund(chain, first, h.settings)
    chain.mine(CONFIRMATIONS)
    wait_refund(h, first, "COMPLETED")
    assert get(h, first)["transaction_hash"] == two


def test_a_payout_lost_in_a_deep_reorg_puts_the_refund_back_to_awaiting_payment(h, chain):
    p = paid(h, chain, amount=5)
    refund = create_refund(h, p, amount="1.5")
    claim(h, refund, customer(chain))
    tx = pay_refund(chain, refund, h.settings)
    raw = chain.raw_transaction(tx)
    block = chain.w3.eth.get_transaction_receipt(tx)["blockNumber"]
    chain.mine(CONFIRMATIONS)
    wait_refund(h, refund, "COMPLETED")
    until(lambda: h.watcher.scanner.state.confirmed_through >= block, message="the payout's block confirmed")
    reload(h.watchlist, h.sessions, h.watcher.address_networks)  # as the periodic reload does: completed, unwatched
    assert customer(chain).lower() not in h.watchlist

    chain.reorg(chain.block_number - block + 2)  # deeper than the confirmations: the payout is gone
    wait_refund(h, refund, "AWAITING_PAYMENT")
    relay_pending(h.sessions, h.publisher)  # refund.reorged: the address is watched again at once
    until(lambda: customer(chain).lower() in h.watchlist, message="the refund's address watched again")
    back = get(h, refund)
    assert back["transaction_hash"] is None and back["completed_at"] is None
    assert refund_events(h, refund)[-2:] == ["refund.completed", "refund.reorged"]
    assert row(h, refund).transfer_ref is None

    chain.w3.eth.send_raw_transaction(raw)  # the same payout mined again: it completes the refund again
    chain.mine(CONFIRMATIONS)
    wait_refund(h, refund, "COMPLETED")
    assert get(h, refund)["transaction_hash"] == tx


# -- a submitted transaction hash ---------------------------------------------------------------


def complete(h, refund: dict, tx: str):
    return h.client.post(
        f"{API}/refunds/{refund['id']}/complete", json={"transaction_hash": tx}, headers=h.merchant.headers("live")
    )


def usdc_to(chain, to: str, units: int) -> str:
    return devchain.pay(
        chain.w3, to=to, amount_base_units=units, token_contract=chain.tokens["USDC"], sender=merchant_wallet(chain)
    )


def test_a_refund_is_completed_by_a_submitted_hash_checked_on_chain(h, chain):
    p = paid(h, chain, amount=5)
    refund, other = create_refund(h, p, amount="1"), create_refund(h, p, amount="1")
    claim(h, refund, customer(chain))
    claim(h, other, customer(chain))  # the same address
    h.stop_watchers()  # nothing but the hash completes it

    elsewhere = usdc_to(chain, customer(chain, 5), USDC)
    r = complete(h, refund, elsewhere)
    assert r.status_code == 400 and "pays someone else" in r.get_json()["error"]["message"]
    small = usdc_to(chain, customer(chain), USDC // 2)
    r = complete(h, refund, small)
    assert r.status_code == 400 and "too small" in r.get_json()["error"]["message"]
    tx = usdc_to(chain, customer(chain), USDC)
    r = complete(h, refund, tx)
    assert r.status_code == 409 and "not yet confirmed" in r.get_json()["error"]["message"]
    r = complete(h, refund, "0x1234")
    assert r.status_code == 400
    r = complete(h, refund, "0x" + "ab" * 32)
    assert r.status_code == 400 and "no transaction" in r.get_json()["error"]["message"]
    chain.mine(CONFIRMATIONS)
    r = complete(h, refund, tx)
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["data"]["status"] == "COMPLETED" and r.get_json()["data"]["transaction_hash"] == tx
    assert complete(h, refund, tx).status_code == 409  # completed already
    r = complete(h, other, tx)
    assert r.status_code == 409 and "already used for another refund" in r.get_json()["error"]["message"]
    assert status(h, other) == "AWAITING_PAYMENT"
    assert refund_events(h, refund).count("refund.completed") == 1


def test_a_native_eth_refund_is_completed_by_its_hash_and_a_reverted_transaction_is_refused(h, chain):
    p = paid(h, chain, amount=30, token="ETH")
    refund = create_refund(h, p, amount="0.002")
    claim(h, refund, customer(chain))
    h.stop_watchers()
    token = chain.tokens["USDC"]
    broke = chain.w3.eth.accounts[6]
    usdc = devchain.erc20(chain.w3, token)
    spent = usdc.functions.balanceOf(broke).call()
    failed = usdc.functions.transfer(customer(chain), spent + 1).transact({"from": broke, "gas": 100_000})
    assert chain.w3.eth.wait_for_transaction_receipt(failed).status == 0
    r = complete(h, refund, failed.to_0x_hex())
    assert r.status_code == 400 and "reverted" in r.get_json()["error"]["message"]
    tx = devchain.pay(
        chain.w3, to=customer(chain), amount_base_units=2 * 10**15, token_contract=None, sender=merchant_wallet(chain)
    )
    chain.mine(CONFIRMATIONS)
    r = complete(h, refund, tx.upper().replace("0X", "0x"))  # any case
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["data"]["transaction_hash"] == tx


def test_kassa_dev_pay_refund_says_why_it_cannot_pay(h, chain):
    p = paid(h, chain, amount=5)
    refund = create_refund(h, p, amount="1")
    with pytest.raises(ValueError, match="the customer has not claimed it yet"):
        pay_refund(chain, refund, h.settings)
    with pytest.raises(ValueError, match="not a refund id"):
        pay_refund(chain, {"id": "nope"}, h.settings)
    with pytest.raises(ValueError, match="no refund with id"):
        pay_refund(chain, {"id": str(uuid.uuid4())}, h.settings)


def test_a_refund_claimed_and_paid_while_the_watcher_is_down_completes_when_it_is_back(h, chain):
    p = paid(h, chain, amount=5)
    refund = create_refund(h, p, amount="1")
    h.stop_watchers()
    with unit_of_work(h.sessions) as s:
        transitions.claim_refund(s, row(h, refund).claim_token, customer(chain))
    tx = pay_refund(chain, refund, h.settings)
    chain.mine(CONFIRMATIONS + 3)
    h.feed = None  # a new process: its own feed, which missed refund.claimed
    h.watcher = h.start_watcher()
    wait_refund(h, refund, "COMPLETED")
    assert get(h, refund)["transaction_hash"] == tx
