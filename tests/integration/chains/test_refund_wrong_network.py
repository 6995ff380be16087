"""Funds sent on the wrong network refunded there, on two anvils (LOCAL_EVM and LOCAL_EVM_2):
the refund is on LOCAL_EVM_2, its claimed address is watched by LOCAL_EVM_2's watcher only, a
payout of the same amount on LOCAL_EVM completes nothing, the payout on LOCAL_EVM_2 completes it."""

from __future__ import annotations

import secrets
import uuid

from web3 import Web3

from kassa_common.db import unit_of_work
from kassa_common.models import Refund
from kassa_common.refunds import transitions
from kassa_dev import chain as devchain
from tests.support.api import set_live_wallet
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.sweeper import live_pipeline
from tests.support.two_chains import SECOND, USDC, chains, env, pay_usdc, subscribe  # noqa: F401  (fixtures)
from tests.support.wait import until

TIMEOUT = 30


def test_funds_on_the_wrong_network_are_refunded_on_that_network(
    env, engine, sessions, make_merchant, chains, receiver
):
    first, second = chains
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id)
    customer, wallet = Web3.to_checksum_address("0x" + secrets.token_hex(20)), second.accounts[1]
    with live_pipeline(env, engine, sessions, merchant, also=(SECOND,)) as h:
        subscribe(h, receiver)
        payment = h.create(amount=12.34, token="USDC")
        pay_usdc(second, payment["address"], 5 * USDC)
        until(lambda: receiver.events("payment.wrong_network", payment["id"]), TIMEOUT, message="wrong network")

        r = h.client.post(f"/v1/api/payments/{payment['id']}/refunds", json={}, headers=merchant.headers("live"))
        assert r.status_code == 201, r.get_data(as_text=True)
        refund = r.get_json()["data"]
        assert (refund["network"], refund["amount"]) == (SECOND, "5")
        with unit_of_work(sessions) as s:
            transitions.claim_refund(s, s.get(Refund, uuid.UUID(refund["id"])).claim_token, customer)
        until(lambda: customer.lower() in h.watchlists[SECOND], TIMEOUT, message="watched on LOCAL_EVM_2")
        assert customer.lower() not in h.watchlists["LOCAL_EVM"]

        with sessions() as s:
            due = 5 * USDC + s.get(Refund, uuid.UUID(refund["id"])).payout_tag  # its payout_amount
        usdc = {"token_contract": first.tokens["USDC"], "amount_base_units": due, "to": customer}
        devchain.pay(first.w3, sender=wallet, **usdc)  # the right amount on the other chain: not this refund's
        paid = devchain.pay(second.w3, sender=wallet, **{**usdc, "token_contract": second.tokens["USDC"]})

        def completed():
            got = h.client.get(f"/v1/api/refunds/{refund['id']}", headers=merchant.headers("live")).get_json()["data"]
            return got if got["status"] == "COMPLETED" else None

        done = until(completed, TIMEOUT, message="refund completed on LOCAL_EVM_2")
        assert done["transaction_hash"] == paid
        until(lambda: receiver.events("refund.completed"), TIMEOUT, message="refund.completed at the receiver")
