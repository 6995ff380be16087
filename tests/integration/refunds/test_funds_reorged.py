"""A deep reorg of a payment's own funds flags its open refunds (DESIGN §8): the chain's
reports go through the bus to the settler as its process runs it; a confirmed transfer to
the payment's address later reported ``reorged`` sets ``funds_reorged`` on the payment's
AWAITING_ADDRESS and AWAITING_PAYMENT refunds on that network, shown by the API, the
refund's later events and the dashboard (a warning on its page and in the lists)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from kassa_common.accounts import keys
from kassa_common.models import Merchant
from kassa_common.statuses import TransferStatus
from tests.conftest import MerchantKeys, make_key
from tests.support.api import API, LIVE_PAYMENT, set_live_wallet
from tests.support.bus import bus, running_settler  # noqa: F401 (fixture)
from tests.support.dashboard import log_in, merchant_with_password, switch_mode
from tests.support.refunds import GOOD, claim
from tests.support.transfers import report, tx_hash
from tests.support.wait import until

CONFIRMED, REORGED = TransferStatus.CONFIRMED, TransferStatus.REORGED
REQUIRED = 2  # LOCAL_EVM's


@pytest.fixture
def settler(bus, settings, sessions):
    with running_settler(settings, bus[1], sessions) as consumers:
        yield consumers[0]


@pytest.fixture
def merchant(client, sessions):
    """A live merchant signed in to the dashboard (live mode) on ``client``."""
    email = merchant_with_password(sessions)
    with sessions() as s:
        merchant_id = s.scalar(sa.select(Merchant.id).where(Merchant.email == email))
    set_live_wallet(sessions, merchant_id)
    log_in(client, email)
    switch_mode(client, "live")
    return MerchantKeys(merchant_id, email, {"live": make_key(sessions, merchant_id, "live", list(keys.SCOPES))})


def test_a_deep_reorg_of_the_payments_funds_flags_its_open_refunds(
    client, merchant, create_payment, sessions, bus, settler
):
    _, _, publisher = bus
    headers = merchant.headers("live")

    def get(path: str) -> dict:
        r = client.get(f"{API}{path}", headers=headers)
        assert r.status_code == 200, r.get_data(as_text=True)
        return r.get_json()["data"]

    def refund(p: dict, amount: str) -> dict:
        r = client.post(f"{API}/payments/{p['id']}/refunds", json={"amount": amount}, headers=headers)
        assert r.status_code == 201, r.get_data(as_text=True)
        return r.get_json()["data"]

    p, other = create_payment(merchant, LIVE_PAYMENT, mode="live"), create_payment(merchant, LIVE_PAYMENT, mode="live")
    paid = report(p, CONFIRMED, 15_000_000, REQUIRED, tx=tx_hash(), block_hash="0xb1")
    publisher.publish_batch([paid.to_message(), report(other, CONFIRMED, 15_000_000, REQUIRED).to_message()])
    until(
        lambda: (
            get(f"/payments/{p['id']}")["refundable_amount"]
            == get(f"/payments/{other['id']}")["refundable_amount"]
            == "15"
        ),
        timeout=30,
        message="both payments settled",
    )
    waiting, claimed, canceled = refund(p, "1"), refund(p, "2"), refund(p, "3")
    assert claim(client, claimed, GOOD).status_code == 303
    assert client.post(f"{API}/refunds/{canceled['id']}/cancel", headers=headers).status_code == 200
    elsewhere = refund(other, "1")  # another payment's funds still stand
    assert waiting["funds_reorged"] is False

    lost = report(p, REORGED, 15_000_000, REQUIRED, tx=paid.tx_hash, block_hash="0xb1")
    publisher.publish_batch([lost.to_message()])
    until(lambda: get(f"/refunds/{waiting['id']}")["funds_reorged"], timeout=30, message="the refund flagged")
    flagged = {r["id"]: r["funds_reorged"] for r in get(f"/payments/{p['id']}/refunds")}
    assert flagged == {waiting["id"]: True, claimed["id"]: True, canceled["id"]: False}
    assert get(f"/refunds/{elsewhere['id']}")["funds_reorged"] is False
    assert get(f"/payments/{p['id']}")["amount_received"] == "0"  # the payment's side, as before

    # the dashboard warns on the refund's page and in the lists
    page = client.get(f"/dashboard/refunds/{claimed['id']}").get_data(as_text=True)
    assert 'id="funds-reorged"' in page and "lost in a chain reorganisation" in page
    assert 'id="funds-reorged"' not in client.get(f"/dashboard/refunds/{elsewhere['id']}").get_data(as_text=True)
    listed = client.get("/dashboard/refunds").get_data(as_text=True)
    assert listed.count("funds reorged</span>") == 2
    assert client.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True).count("funds reorged</span>") == 2

    # the refund's next event carries the flag
    assert client.post(f"{API}/refunds/{waiting['id']}/cancel", headers=headers).get_json()["data"]["funds_reorged"]
    events = get(f"/events?type=refund.canceled&payment_id={p['id']}&pageSize=100")["data"]
    assert {e["data"]["id"]: e["data"]["funds_reorged"] for e in events} == {waiting["id"]: True, canceled["id"]: False}
