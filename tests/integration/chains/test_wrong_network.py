"""Wrong network, end to end on two anvils: LOCAL_EVM (chain id 31337) and LOCAL_EVM_2 (chain
id 31338, the same dev tokens at the same addresses). A USDC payment on LOCAL_EVM paid on
LOCAL_EVM_2 is seen by LOCAL_EVM_2's watcher, recorded on the payment without counting,
reported once by payment.wrong_network at a real receiver, and explained on the checkout
and in the dashboard; the payment stays PENDING until it is paid where it should be. In
forwarder mode `kassa sweep --network LOCAL_EVM_2` moves those funds to the settlement
address on LOCAL_EVM_2 (the deposit and the factory have the same address on every chain)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kassa_dev import chain as devchain
from tests.support.api import set_live_wallet
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.sweeper import live_pipeline, settling_merchant
from tests.support.two_chains import SECOND, USDC, chains, env, pay_usdc, subscribe  # noqa: F401  (fixtures)
from tests.support.wait import until

KASSA = Path(sys.executable).with_name("kassa")
TIMEOUT = 30


def wrong_network_hook(receiver, payment_id: str) -> dict:
    hooks = until(
        lambda: receiver.events("payment.wrong_network", payment_id),
        TIMEOUT,
        message="payment.wrong_network at the receiver",
    )
    return hooks[0].json["data"]


def test_usdc_sent_on_the_wrong_network_is_recorded_reported_and_not_counted(
    env, engine, sessions, make_merchant, chains, receiver
):
    first, second = chains
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id)
    with live_pipeline(env, engine, sessions, merchant, also=(SECOND,)) as h:
        subscribe(h, receiver)
        payment = h.create(amount=12.34, token="USDC")

        tx = pay_usdc(second, payment["address"], 1234 * USDC // 100)

        data = wrong_network_hook(receiver, payment["id"])
        assert data["status"] == "PENDING" and data["amount_received"] == "0"
        assert data["wrong_network"] == [
            {
                "network": SECOND,
                "token": "USDC",
                "amount": "12.34",
                "transaction_hash": tx,
                "log_index": data["wrong_network"][0]["log_index"],
                "recovery": "wallet",
            }
        ]
        assert h.status(payment["id"]) == "PENDING"
        (transfer,) = h.transfers(payment["id"])
        assert (transfer.network, transfer.status, transfer.counted) == (SECOND, "CONFIRMED", False)

        checkout = h.client.get(f"/pay/{payment['short_id']}").get_data(as_text=True)
        assert (
            "12.34 USDC arrived on <strong>Second local dev chain</strong>" in checkout and "can recover it" in checkout
        )
        shown = h.client.get(f"/pay/{payment['short_id']}/status").get_json()
        assert shown["wrong_network"] == [{"network": SECOND, "token": "USDC", "amount": "12.34"}]
        assert shown["amount_remaining"] == "12.34"

        pay_usdc(first, payment["address"], 1234 * USDC // 100)  # then on the right network

        h.wait_status(payment["id"], "COMPLETED", timeout=TIMEOUT)
        got = h.client.get(f"/v1/api/payments/{payment['id']}", headers=merchant.headers("live")).get_json()["data"]
        assert got["amount_received"] == "12.34" and len(got["wrong_network"]) == 1
        until(lambda: receiver.events("payment.completed", payment["id"]), TIMEOUT, message="payment.completed")
        assert len(receiver.events("payment.wrong_network", payment["id"])) == 1
        assert h.events(payment["id"]).count("payment.wrong_network") == 1


def test_forwarder_funds_on_the_wrong_network_are_swept_there_to_the_settlement_address(
    env, engine, sessions, make_merchant, chains, receiver, base_env
):
    first, second = chains
    merchant = settling_merchant(make_merchant, sessions)
    with live_pipeline(env, engine, sessions, merchant, also=(SECOND,)) as h:
        subscribe(h, receiver)
        payment = h.create(amount=20, token="USDC")
        pay_usdc(second, payment["address"], 20 * USDC)
        data = wrong_network_hook(receiver, payment["id"])
        assert data["wrong_network"][0]["recovery"] == "sweep" and data["status"] == "PENDING"

        done = subprocess.run(
            [str(KASSA), "--json", "sweep", "--network", SECOND, "--email", merchant.email],
            env={
                **os.environ,
                **base_env,
                "LOCAL_EVM_RPC_URL": first.url,
                "LOCAL_EVM_2_RPC_URL": second.url,
                "SWEEPER_PRIVATE_KEY": devchain.SWEEPER_PRIVATE_KEY,
                "SWEEP_MAX_SPEND_USD_PER_HOUR": "1000000000",
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

        assert done.returncode == 0, done.stderr
        (sweep,) = json.loads(done.stdout)["sweeps"]
        assert sweep["status"] == "CONFIRMED" and sweep["payments"] == [payment["id"]]
        usdc = second.tokens["USDC"]
        assert devchain.token_balance(second.w3, usdc, merchant.settlement) == 20 * USDC
        assert devchain.token_balance(second.w3, usdc, payment["address"]) == 0
        assert devchain.token_balance(first.w3, first.tokens["USDC"], merchant.settlement) == 0
        swept = until(lambda: receiver.events("payment.swept", payment["id"]), TIMEOUT, message="payment.swept")
        assert swept[-1].json["data"]["sweep_transaction_hash"] == sweep["tx_hash"]
        assert second.w3.eth.get_transaction_receipt(sweep["tx_hash"])["status"] == 1
        assert h.status(payment["id"]) == "PENDING"
