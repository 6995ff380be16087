"""A refund's pure rules (DESIGN §8), without a database: what a payment can still refund
per network, which moves its state machine allows, which network a refund is made on, and
which transfer may pay a claimed refund (its token, network, exact ``payout_amount``, a
block after the claim, not from the claimed address itself)."""

from __future__ import annotations

from types import SimpleNamespace as Row

import pytest

from kassa_common.payments import refunded as amounts
from kassa_common.payments.refunded import RefundTotals
from kassa_common.refunds import payouts, transitions
from kassa_common.refunds.onchain import Payout

pytestmark = pytest.mark.unit

ADDRESS = "0x" + "ab" * 20
OTHER = "0x" + "cd" * 20


def payment(network="BSC", token="USDC", decimals=18):
    return Row(network=network, token=token, decimals=decimals)


def transfer(units, network="BSC", token="USDC", status="CONFIRMED"):
    return Row(network=network, token=token, status=status, amount_units=units)


# -- what is refundable ---------------------------------------------------------------------


def test_the_decimals_are_the_payments_on_its_own_network_and_the_tokens_on_another():
    p = payment("BSC", "USDC", 18)  # USDC has 18 decimals on BSC, 6 on Ethereum
    assert amounts.decimals_on(p, "BSC") == 18
    assert amounts.decimals_on(p, "ETHEREUM") == 6
    assert amounts.decimals_on(payment("POLYGON", "POL", 18), "ETHEREUM") is None  # no POL there
    assert amounts.decimals_on(p, "NO_SUCH_NETWORK") is None


def test_only_confirmed_funds_of_the_payments_token_are_received_per_network():
    got = amounts.received(
        payment(),
        [
            transfer(5),
            transfer(7),
            transfer(100, status="SEEN"),
            transfer(100, status="REORGED"),
            transfer(100, token="USDT"),
            transfer(3, network="ETHEREUM"),
        ],
    )
    assert got == {"BSC": 12, "ETHEREUM": 3}


def test_refundable_is_what_was_received_less_what_refunds_hold_on_networks_with_something_left():
    p = payment()
    transfers = [transfer(10), transfer(4, network="ETHEREUM"), transfer(9, network="POLYGON")]
    assert amounts.refundable(p, transfers, amounts.NONE) == {"BSC": 10, "ETHEREUM": 4, "POLYGON": 9}
    held = RefundTotals(held={"BSC": 10, "ETHEREUM": 1})
    assert amounts.refundable(p, transfers, held) == {"ETHEREUM": 3, "POLYGON": 9}  # BSC: exactly nothing left
    one_left = RefundTotals(held={"BSC": 9, "ETHEREUM": 4, "POLYGON": 9})
    assert amounts.refundable(p, transfers, one_left) == {"BSC": 1}  # one base unit is refundable
    # funds of a token on a network that has no such token are never refundable there
    pol = payment("POLYGON", "POL", 18)
    assert amounts.refundable(pol, [transfer(5, "ETHEREUM", "POL")], amounts.NONE) == {}


def test_the_payment_shows_refunded_and_refundable_in_its_token_over_every_network():
    p = payment()  # USDC: 18 places on BSC, 6 on Ethereum
    transfers = [transfer(3 * 10**18), transfer(2_500_000, network="ETHEREUM")]
    totals = RefundTotals(held={"BSC": 10**18}, refunded={"BSC": 10**18, "ETHEREUM": 500_000})
    assert amounts.shown(p, transfers, totals) == ("1.5", "4.5")
    assert amounts.shown(p, [], amounts.NONE) == ("0", "0")
    # a network without the token counts for nothing in the totals
    assert amounts.shown(payment("POLYGON", "POL"), [], RefundTotals(refunded={"ETHEREUM": 7})) == ("0", "0")


def test_only_funds_confirmed_once_may_have_refunds():
    assert amounts.may_have_refunds([transfer(1, status="SEEN"), transfer(1, status="CONFIRMED")])
    assert amounts.may_have_refunds([transfer(1, status="REORGED")])
    assert not amounts.may_have_refunds([transfer(1, status="SEEN"), transfer(1, status="ORPHANED")])
    assert not amounts.may_have_refunds([])


# -- the state machine and the network ------------------------------------------------------


@pytest.mark.parametrize(
    "status, trigger, refused",
    [
        ("AWAITING_ADDRESS", transitions.Trigger.CLAIM, None),
        ("AWAITING_PAYMENT", transitions.Trigger.CLAIM, "a AWAITING_PAYMENT refund cannot be claimed"),
        ("AWAITING_PAYMENT", transitions.Trigger.COMPLETE, None),
        ("COMPLETED", transitions.Trigger.CANCEL, "a COMPLETED refund cannot be canceled"),
        ("AWAITING_PAYMENT", transitions.Trigger.EXPIRE, "a AWAITING_PAYMENT refund cannot be expired"),
        ("COMPLETED", transitions.Trigger.REORG, None),
    ],
)
def test_the_moves_a_refund_may_take(status, trigger, refused):
    assert transitions.refusal(status, trigger) == refused


def test_a_refund_is_on_the_network_asked_else_the_payments_else_the_only_one_with_funds():
    p = payment("BSC")
    assert transitions._network_of(p, {"BSC": 1}, "ethereum") == "ETHEREUM"
    assert transitions._network_of(p, {"BSC": 1, "ETHEREUM": 1}, None) == "BSC"
    assert transitions._network_of(p, {}, None) == "BSC"
    assert transitions._network_of(p, {"ETHEREUM": 1, "POLYGON": 1}, None) == "BSC"  # no single other
    assert transitions._network_of(p, {"ETHEREUM": 1}, None) == "ETHEREUM"


# -- which transfer pays a claimed refund ---------------------------------------------------


def refund(**kw):
    base = {
        "status": "AWAITING_PAYMENT",
        "test_mode": False,
        "network": "LOCAL_EVM",
        "token": "USDC",
        "address": ADDRESS,
        "amount_units": 1_000_000,
        "payout_tag": 7,
        "claim_block": 100,
    }
    return Row(**{**base, **kw})


def payout(**kw):
    base = {
        "network": "LOCAL_EVM",
        "tx_hash": "0x" + "11" * 32,
        "place": 0,
        "token": "usdc",
        "to": ADDRESS,
        "amount_units": 1_000_007,
        "block_number": 101,
        "block_hash": "0x" + "22" * 32,
        "confirmations": 1,
        "sender": OTHER,
    }
    return Payout(**{**base, **kw})


def test_a_payout_of_exactly_payout_amount_after_the_claim_from_another_address_covers_the_refund():
    assert payouts.covers(refund(), payout())
    assert payouts.covers(refund(), payout(block_number=None))  # in the mempool: after the claim
    assert payouts.covers(refund(claim_block=None), payout(block_number=5))
    assert payouts.covers(refund(), payout(sender=None))  # no sender known (Bitcoin)


@pytest.mark.parametrize(
    "r, p",
    [
        (refund(status="AWAITING_ADDRESS"), payout()),
        (refund(status="COMPLETED"), payout()),
        (refund(test_mode=True), payout()),
        (refund(network="LOCAL_EVM_2"), payout()),
        (refund(), payout(token="USDT")),
        (refund(), payout(amount_units=1_000_000)),  # the bare amount, without the tag
        (refund(), payout(amount_units=1_000_008)),
        (refund(), payout(block_number=100)),  # in the claim's own block
        (refund(), payout(block_number=99)),
        (refund(), payout(sender=ADDRESS.upper().replace("0X", "0x"))),  # from the claimed address itself
    ],
)
def test_anything_else_does_not_cover_it(r, p):
    assert not payouts.covers(r, p)


def test_a_payout_from_the_claimed_address_itself_is_told_whatever_the_case():
    assert payouts.from_itself(refund(), payout(sender=ADDRESS))
    assert not payouts.from_itself(refund(), payout(sender=OTHER))
    assert not payouts.from_itself(refund(), payout(sender=None))
    assert not payouts.from_itself(refund(address=None), payout(sender=""))
