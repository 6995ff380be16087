"""Helpers of the refund tests on the API and the claim page: funds confirmed on a payment
(settled as the chain watcher would report them), and a refund claimed on its page."""

from __future__ import annotations

from kassa_common import payments
from kassa_common.db import unit_of_work
from kassa_common.statuses import TransferStatus
from tests.support.dashboard import csrf_of
from tests.support.transfers import report, tx_hash

GOOD = "0x52908400098527886E0F7030069857D2E4169EE7"  # EIP-55's own example


def settle_confirmed(sessions, p: dict, units: int, *, network: str | None = None) -> None:
    """A confirmed transfer of ``units`` of the payment's token to its address (on
    ``network``: another network's, a wrong-network transfer)."""
    r = report(p, TransferStatus.CONFIRMED, units, 2, tx=tx_hash())
    if network is not None:
        r = type(r)(**{**r.__dict__, "network": network})
    with unit_of_work(sessions) as s:
        payments.settle(s, r)


def path_of(refund: dict) -> str:
    """The refund's claim page."""
    return "/refunds/" + refund["claim_url"].rsplit("/", 1)[1]


def claim(client, refund, address, **extra):
    """Post ``address`` on the refund's claim page, with the page's CSRF token."""
    page = client.get(path_of(refund))
    return client.post(path_of(refund), data={"csrf_token": csrf_of(page), "address": address, **extra})
