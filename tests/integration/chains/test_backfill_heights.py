"""A watcher backfilling a late address starts from where it stood itself when the payment was
created, never from another network's height (DESIGN §5).

Two anvils as two EVM networks of very different heights: LOCAL_EVM, young (a few dozen
blocks), and LOCAL_EVM_2, whose genesis is block 20,000,000, like Ethereum beside a new L2.
Every EVM watcher also watches the other EVM networks' payments (wrong network), so a new
LOCAL_EVM payment's address reaches LOCAL_EVM_2's watcher too, which backfills it. That
backfill must start on LOCAL_EVM_2 where LOCAL_EVM_2's watcher stood at the payment's
creation, not at the payment's own LOCAL_EVM height (20 million blocks back). LOCAL_EVM_2 is
read through a proxy that records every ``eth_getLogs`` range and block asked for.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from kassa_common.chains.networks import load_registry
from kassa_common.messaging.relay import relay_pending
from kassa_common.models import ChainCursor, Payment
from kassa_chain_watcher.network_watcher import keep_blocks
from kassa_dev import chain as devchain
from tests.support.anvil import start_chain
from tests.support.api import set_live_wallet
from tests.support.rpc_proxy import RpcProxy
from tests.support.sweeper import live_pipeline
from tests.support.wait import until

SECOND = "LOCAL_EVM_2"
HIGH = 20_000_000
USDC = 10**6
TIMEOUT = 30


@pytest.fixture(scope="module")
def chains():
    low = start_chain(block_time=0.5)
    try:
        high = start_chain(block_time=0.5, chain_id=devchain.CHAIN_ID_2, genesis=HIGH)
    except BaseException:
        devchain.stop_anvil(low.proc)
        raise
    yield low, high
    devchain.stop_anvil(high.proc)
    devchain.stop_anvil(low.proc)


class Recording(RpcProxy):
    """The proxy, also noting the lowest block any request for LOCAL_EVM_2 named."""

    def __init__(self, target_url: str) -> None:
        super().__init__(target_url)
        self.lowest: int | None = None

    def _answer(self, body: bytes):
        try:
            calls = json.loads(body)
        except ValueError:
            calls = []
        for call in calls if isinstance(calls, list) else [calls]:
            for n in _blocks_named(call):
                self.lowest = n if self.lowest is None else min(self.lowest, n)
        return super()._answer(body)


def _blocks_named(call: dict) -> list[int]:
    method, params = call.get("method"), call.get("params") or []
    if method == "eth_getLogs" and params:
        return [int(params[0][k], 16) for k in ("fromBlock", "toBlock") if str(params[0].get(k, "")).startswith("0x")]
    if method in ("eth_getBlockByNumber", "eth_getBalance") and params:
        named = params[0] if method == "eth_getBlockByNumber" else params[-1]
        return [int(named, 16)] if isinstance(named, str) and named.startswith("0x") else []
    return []


def create(h, network: str, token: str = "USDC", amount: float = 12.34) -> dict:
    r = h.client.post(
        "/v1/api/payments",
        json={"amount": amount, "token": token, "network": network},
        headers=h.merchant.headers("live"),
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    relay_pending(h.sessions, h.publisher)  # payment.created reaches the watchers' feed
    return r.get_json()["data"]


def cursor(sessions, network: str) -> int | None:
    with sessions() as s:
        return s.scalar(sa.select(ChainCursor.block_number).where(ChainCursor.network == network))


def test_a_payment_on_a_low_network_does_not_send_a_high_networks_watcher_back(
    settings, engine, sessions, make_merchant, chains
):
    low, high = chains
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id)
    with Recording(high.url) as proxy:
        env = settings.with_(
            networks=load_registry(
                {
                    "LOCAL_EVM_RPC_URL": low.url,
                    "LOCAL_EVM_CONFIRMATIONS": "2",
                    "LOCAL_EVM_2_RPC_URL": proxy.url(),
                    "LOCAL_EVM_2_CONFIRMATIONS": "2",
                }
            )
        )
        with live_pipeline(env, engine, sessions, merchant, also=(SECOND,)) as h:
            until(
                lambda: cursor(sessions, SECOND) is not None and cursor(sessions, "LOCAL_EVM") is not None,
                TIMEOUT,
                message="both watchers have a cursor",
            )
            started = cursor(sessions, SECOND)
            assert started >= HIGH and cursor(sessions, "LOCAL_EVM") < 1000
            proxy.lowest = None  # from here on

            on_low = create(h, "LOCAL_EVM")
            with sessions() as s:
                row = s.scalar(sa.select(Payment).where(Payment.address == on_low["address"]))
                assert row.created_block < 1000
                assert row.watch_points[SECOND] >= started  # where LOCAL_EVM_2's watcher stood

            on_high = create(h, SECOND)
            devchain.pay(
                high.w3, to=on_high["address"], amount_base_units=1234 * USDC // 100, token_contract=high.tokens["USDC"]
            )
            devchain.pay(
                low.w3, to=on_low["address"], amount_base_units=1234 * USDC // 100, token_contract=low.tokens["USDC"]
            )

            h.wait_status(on_high["id"], "COMPLETED", timeout=TIMEOUT)
            h.wait_status(on_low["id"], "COMPLETED", timeout=TIMEOUT)
            # at most the blocks it keeps below its head (a backfill starts at the oldest of them)
            floor = started - keep_blocks(env.networks.get(SECOND))
            assert proxy.lowest is not None and proxy.lowest >= floor, (
                f"LOCAL_EVM_2's watcher read block {proxy.lowest}, below where it stood ({started})"
            )
