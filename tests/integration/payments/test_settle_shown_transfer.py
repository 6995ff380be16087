"""Which transfer a payment shows (``transaction_hash``, ``confirmations``) once the one it
showed is gone, on the real database: a transfer still seen before a confirmed one, and
nothing at all (no hash, no confirmation) when none stands."""

from __future__ import annotations

import uuid

import pytest

from kassa_common.models import Payment
from kassa_common.statuses import TransferStatus
from tests.support.api import LIVE_PAYMENT
from tests.support.transfers import report, settle, settler_batches  # noqa: F401 (autouse)
from tests.support.transfers import tx_hash as tx

SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
REQUIRED = 2  # LOCAL_EVM's


@pytest.fixture
def live(live_merchant, create_payment):
    """A live 12.34 USDC payment on LOCAL_EVM."""
    return create_payment(live_merchant, LIVE_PAYMENT, mode="live")


def shown(sessions, p) -> tuple[str | None, int, str]:
    with sessions() as s:
        payment = s.get(Payment, uuid.UUID(p["id"]))
        return payment.transaction_hash, payment.confirmations, payment.status


def test_a_payment_whose_shown_transfer_is_orphaned_shows_the_one_still_seen_before_a_confirmed_one(sessions, live):
    part, pending, gone = tx(), tx(), tx()
    settle(sessions, report(live, CONFIRMED, 2_000_000, REQUIRED, tx=part, block_hash="0xb1"))
    settle(sessions, report(live, SEEN, 3_000_000, 1, tx=pending, block_hash="0xb2", log_index=1))
    settle(sessions, report(live, SEEN, 4_000_000, 1, tx=gone, block_hash="0xb3", log_index=2))
    assert shown(sessions, live) == (gone, 1, "PARTIALLY_PAID")
    settle(sessions, report(live, ORPHANED, 4_000_000, 0, tx=gone, block_hash="0xb3", log_index=2))
    assert shown(sessions, live) == (pending, 1, "PARTIALLY_PAID")  # what may still complete it


def test_a_payment_whose_only_transfer_is_lost_in_a_deep_reorg_shows_none_and_no_confirmation(sessions, live):
    only = tx()
    settle(sessions, report(live, CONFIRMED, 12_340_000, REQUIRED, tx=only, block_hash="0xb1"))
    assert shown(sessions, live) == (only, REQUIRED, "COMPLETED")
    settle(sessions, report(live, REORGED, 12_340_000, REQUIRED, tx=only, block_hash="0xb1"))
    assert shown(sessions, live) == (None, 0, "COMPLETED")
