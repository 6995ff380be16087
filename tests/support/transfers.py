"""Transfer reports as the chain watcher sends them, settled on the test database: for tests
of what a transfer does to a payment without running a chain."""
from __future__ import annotations

import secrets

from kassa_common import payments
from kassa_common.db import unit_of_work
from kassa_common.messages import TransferReport, TransferStatus


def tx_hash() -> str:
    return "0x" + secrets.token_hex(32)


def report(p: dict, status: TransferStatus, amount_units: int, confirmations: int, *, tx: str | None = None,
           block_hash: str = "0xb1", log_index: int = 0) -> TransferReport:
    """A report of a transfer of the payment's own token to the payment (``p``: the API's
    payment object); the recipient in lower case, as the watcher reports it."""
    return TransferReport(status, p["network"], tx or tx_hash(), log_index, p["token"], p["address"].lower(),
                          amount_units, block_number=100, block_hash=block_hash, confirmations=confirmations)


def settle(sessions, *reports: TransferReport) -> None:
    """Each report in its own transaction, as the settler handles them."""
    for r in reports:
        with unit_of_work(sessions) as s:
            payments.settle(s, r)
