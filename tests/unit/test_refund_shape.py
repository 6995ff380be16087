"""What a refund's payout is asked to send, without a database: the bare amount until the
customer claims it, then the amount and the claim's tag (the watcher knows the payout by it),
as base units (``payout_units``) and as the refund object's ``payout_amount``."""

from __future__ import annotations

from types import SimpleNamespace as Row

import pytest

from kassa_common.refunds.shape import due_units, payout_amount, payout_units

pytestmark = pytest.mark.unit


def refund(address=None, tag=None):
    return Row(amount_units=2_500_000, payout_tag=tag, address=address, decimals=6)


def test_before_the_claim_nothing_is_due_and_a_payout_would_send_the_bare_amount():
    unclaimed = refund()
    assert due_units(unclaimed) is None and payout_amount(unclaimed) is None
    assert payout_units(unclaimed) == 2_500_000


def test_once_claimed_a_payout_sends_the_amount_and_its_tag():
    claimed = refund("0x" + "ab" * 20, tag=417)
    assert payout_units(claimed) == due_units(claimed) == 2_500_417
    assert payout_amount(claimed) == "2.500417"
    assert payout_units(refund("0x" + "ab" * 20)) == 2_500_000  # claimed before tags existed
