"""Transfer reports as the chain watcher sends them, settled on the test database as the
settler applies them (``kassa_settler.main.apply_transfer``: a payment's, or a claimed
refund's payout): for tests of what a transfer does without running a chain."""

from __future__ import annotations

import secrets
import sys

import pytest

from kassa_common.db import unit_of_work
from kassa_common.messaging.messages import TransferReport
from kassa_common.payments.settle import lock_for_reports
from kassa_common.statuses import TransferStatus
from kassa_settler.main import apply_transfer


def tx_hash() -> str:
    return "0x" + secrets.token_hex(32)


def report(
    p: dict,
    status: TransferStatus,
    amount_units: int,
    confirmations: int,
    *,
    tx: str | None = None,
    block_hash: str = "0xb1",
    log_index: int = 0,
) -> TransferReport:
    """A report of a transfer of the payment's own token to the payment (``p``: the API's
    payment object); the recipient in lower case, as the watcher reports it."""
    return TransferReport(
        status,
        p["network"],
        tx or tx_hash(),
        log_index,
        p["token"],
        p["address"].lower(),
        amount_units,
        block_number=100,
        block_hash=block_hash,
        confirmations=confirmations,
    )


@pytest.fixture(autouse=True, params=["each alone", "in one batch"])
def settler_batches(request, monkeypatch):
    """Imported by a test module: its every test runs with reports settled one per
    transaction and again together, the batch's payments and transfers locked up front."""
    monkeypatch.setattr(sys.modules[__name__], "BATCHED", request.param == "in one batch")


BATCHED = False  # True: the reports of one call in one transaction, as the settler batches them


def settle(sessions, *reports: TransferReport) -> None:
    """Each report in its own transaction, or (``BATCHED``) all in one after locking what they
    pay up front, as the settler handles a batch."""
    if BATCHED:
        with unit_of_work(sessions) as s:
            lock_for_reports(s, reports)
            for r in reports:
                apply_transfer(s, r)
        return
    for r in reports:
        with unit_of_work(sessions) as s:
            apply_transfer(s, r)


def settle_batch(sessions, reports) -> None:
    """All ``reports`` in one transaction, after locking what they pay up front."""
    with unit_of_work(sessions) as s:
        lock_for_reports(s, reports)
        for r in reports:
            apply_transfer(s, r)
