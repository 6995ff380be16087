"""The EVM watcher learns new blocks from the node's ``newHeads`` subscription (anvil serves
WebSocket on its RPC port): with a poll that never comes (an hour), a payment is still
detected and completed as its blocks are mined. The subscription only wakes the scanner,
which reads blocks by number from its cursor: while the subscription is down (its
connection dropped) the watcher polls and misses no block, and it subscribes again once
the node is reachable."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.chains.networks import load_registry
from kassa_common.config import WatcherSettings
from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.api import set_live_wallet
from tests.support.tcpproxy import TcpProxy
from tests.support.wait import until
from tests.support.watcher import harness, pay_usdc

CONFIRMATIONS = 2
NEVER = WatcherSettings(poll_seconds=3600, reload_seconds=3600, standby_seconds=0.2)  # only pushed heads wake it
QUICK = WatcherSettings(poll_seconds=0.1, reload_seconds=3600, standby_seconds=0.2)


@pytest.fixture
def ws_proxy(chain):
    """A TCP proxy in front of anvil's port, for its WebSocket side: ``stop()`` drops it."""
    target = urlsplit(chain.url)
    proxy = TcpProxy(target.hostname, target.port)
    proxy.start()
    yield proxy
    proxy.stop()


def harness_for(settings, engine, sessions, make_merchant, env):
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "evm", TEST_XPUBS["evm"])
    env = {"LOCAL_EVM_CONFIRMATIONS": str(CONFIRMATIONS), **env}
    return harness(settings.with_(networks=load_registry(env)), engine, sessions, merchant, "LOCAL_EVM")


def test_pushed_heads_wake_the_scanner_without_a_poll(settings, engine, sessions, make_merchant, chain):
    with harness_for(settings, engine, sessions, make_merchant, {"LOCAL_EVM_RPC_URL": chain.url}) as h:
        watcher = h.start_watcher(NEVER)
        until(lambda: watcher.heads is not None and watcher.heads.live.is_set(), message="subscribed to new heads")
        p = h.create()
        pay_usdc(chain, p)  # mined in a block of its own
        until(lambda: h.payment(p["id"]).confirmations == 1, message="detected from the pushed head")
        chain.mine(CONFIRMATIONS - 1)
        h.wait_status(p["id"], "COMPLETED")
        assert watcher.heads.heads >= CONFIRMATIONS


def test_a_dropped_subscription_falls_back_to_polling_without_missing_a_block(
    settings, engine, sessions, make_merchant, chain, ws_proxy
):
    env = {"LOCAL_EVM_RPC_URL": chain.url, "LOCAL_EVM_WS_URL": f"ws://127.0.0.1:{ws_proxy.port}"}
    with harness_for(settings, engine, sessions, make_merchant, env) as h:
        watcher = h.start_watcher(QUICK)
        heads = until(lambda: watcher.heads, message="the subscription started")
        until(heads.live.is_set, message="subscribed to new heads")

        ws_proxy.stop()  # the connection drops; the node refuses new ones
        until(lambda: not heads.live.is_set(), message="the subscription noticed")
        p = h.create()
        pay_usdc(chain, p)
        chain.mine(CONFIRMATIONS - 1)
        h.wait_status(p["id"], "COMPLETED")  # read by polling
        st = watcher.scanner.state
        until(lambda: st.head == chain.block_number, message="every block read")

        ws_proxy.start()
        until(heads.live.is_set, timeout=30, message="subscribed again")
        q = h.create()
        pay_usdc(chain, q)
        chain.mine(CONFIRMATIONS - 1)
        h.wait_status(q["id"], "COMPLETED")
        blocks = [b for b in sorted(st.blocks) if b > st.confirmed_through - 5]
        assert blocks == list(range(blocks[0], blocks[-1] + 1))  # none skipped
