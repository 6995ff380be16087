"""Helpers of the refund payout tests on a live harness ``h`` (a chain watcher, the settler and
the API, as ``tests.support.watcher`` builds them): a refund made, claimed and read back."""

from __future__ import annotations

import uuid

from kassa_common.db import unit_of_work
from kassa_common.messaging.relay import relay_pending
from kassa_common.models import Refund
from kassa_common.refunds import transitions
from tests.support.api import API
from tests.support.wait import until


def create_refund(h, p: dict, amount: str | None = None, reason: str | None = None) -> dict:
    body = {k: v for k, v in (("amount", amount), ("reason", reason)) if v is not None}
    r = h.client.post(f"{API}/payments/{p['id']}/refunds", json=body, headers=h.merchant.headers("live"))
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def claim(h, refund: dict, address: str) -> dict:
    with unit_of_work(h.sessions) as s:
        token = s.get(Refund, uuid.UUID(refund["id"])).claim_token
        transitions.claim_refund(s, token, address, registry=h.settings.networks)
    relay_pending(h.sessions, h.publisher)  # refund.claimed reaches the watcher's feed
    until(lambda: address.lower() in h.watchlist, message="the refund's address watched")
    return get(h, refund)


def get(h, refund: dict) -> dict:
    r = h.client.get(f"{API}/refunds/{refund['id']}", headers=h.merchant.headers("live"))
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.get_json()["data"]


def row(h, refund: dict) -> Refund:
    with h.sessions() as s:
        return s.get(Refund, uuid.UUID(refund["id"]))


def status(h, refund: dict) -> str:
    return row(h, refund).status
