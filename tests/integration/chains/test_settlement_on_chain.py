"""Settlement as a customer and a merchant see it, on anvil with the real dev ERC-20 and the
chain watcher: spam that moves nothing, cancel while a transfer waits for its
confirmations, and a reorg that takes a seen transfer away. LOCAL_EVM needs 3 confirmations."""

from __future__ import annotations

from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.api import API, assert_error
from tests.support.dashboard import csrf_of
from tests.support.wait import until
from tests.support.watcher import live_evm_fixture, pay_usdc, units_due

CONFIRMATIONS = 3


h = live_evm_fixture(CONFIRMATIONS, watching=True)


def cancel(h, p: dict):
    return h.client.post(f"{API}/payments/{p['id']}/cancel", headers=h.merchant.headers("live"))


def checkout_status(h, p: dict) -> dict:
    return h.client.get(f"/pay/{p['short_id']}/status").get_json()


def test_a_zero_value_transfer_from_anyone_changes_nothing(h, chain):
    p = h.create(amount=5)
    pay_usdc(chain, p, 0, sender=chain.accounts[3])  # transfer(address, 0): anyone can send it
    marker = h.create(amount=1)  # paid in a later block: once it completes, the spam was reported
    pay_usdc(chain, marker, 1_000_000)
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(marker["id"], "COMPLETED")
    paid = h.payment(p["id"])
    assert (paid.status, paid.transaction_hash, int(paid.amount_received_units)) == ("PENDING", None, 0)
    assert h.events(p["id"]) == ["payment.created"] and h.transfers(p["id"]) == []
    assert cancel(h, p).status_code == 200


def test_cancel_while_the_transfer_is_seen_is_refused_then_the_payment_completes(h, chain):
    p = h.create(amount=5)
    page = h.client.get(f"/pay/{p['short_id']}").get_data(as_text=True)  # the customer's tab, opened before paying
    assert 'id="cancel-form"' in page
    tx = pay_usdc(chain, p, units_due(p))
    until(lambda: h.payment(p["id"]).confirmations == 1, message="transfer seen")
    error = assert_error(cancel(h, p), 409, "CONFLICT")
    assert "seen" in error["message"]
    refused = h.client.post(f"/pay/{p['short_id']}/cancel", data={"csrf_token": csrf_of(page)})
    assert refused.status_code == 409 and "can no longer be canceled" in refused.get_data(as_text=True)
    assert 'id="cancel-form"' not in h.client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert checkout_status(h, p)["cancelable"] is False
    chain.mine(CONFIRMATIONS - 1)
    h.wait_status(p["id"], "COMPLETED")
    assert h.payment(p["id"]).transaction_hash == tx
    assert h.events(p["id"]) == ["payment.created", "payment.detected", "payment.completed"]


def test_a_seen_transfer_a_reorg_removes_clears_the_seen_state(h, chain):
    chain.mine(2)
    p = h.create(amount=5)
    pay_usdc(chain, p, units_due(p))
    until(lambda: h.payment(p["id"]).confirmations == 1, message="transfer seen")
    assert checkout_status(h, p)["seen"] is True
    chain.reorg(1)  # the block holding the transfer is replaced by one without it
    until(lambda: [t.status for t in h.transfers(p["id"])] == ["ORPHANED"], message="transfer orphaned")
    paid = h.payment(p["id"])
    assert (paid.status, paid.transaction_hash, paid.confirmations) == ("PENDING", None, 0)
    shown = checkout_status(h, p)
    assert (shown["seen"], shown["confirmations"], shown["cancelable"]) == (False, 0, True)
    assert cancel(h, p).status_code == 200
