"""The EVM watcher behind a hosted-provider-like node: anvil behind a proxy that rate limits
(HTTP 429, Retry-After), refuses ``eth_getLogs`` over more than a few blocks ("query returned
more than 10000 results") and goes away for a while. The watcher recovers, misses nothing,
counts nothing twice, and never logs the key in its RPC URL."""

from __future__ import annotations

import logging

from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.rpc_proxy import proxy  # noqa: F401  (fixture)
from tests.support.wait import until
from tests.support.watcher import at_tip as tip_reached
from tests.support.watcher import live_evm_fixture, pay_usdc, units_due

CONFIRMATIONS = 3
KEY = "SECRETKEY123"  # a fake API key in the URL's path, as Infura and Alchemy have it
MAX_LOG_RANGE = 8  # blocks per eth_getLogs the proxy answers


h = live_evm_fixture(CONFIRMATIONS, proxy_path=f"/v3/{KEY}")


def at_tip(watcher, chain):
    tip_reached(watcher, chain, CONFIRMATIONS, timeout=30.0)


def test_the_watcher_rides_out_rate_limits_an_outage_and_log_range_limits_missing_nothing(h, chain, proxy, caplog):
    caplog.set_level(logging.DEBUG, logger="kassa.chain_watcher")
    proxy.max_log_range = MAX_LOG_RANGE
    proxy.refuse(3, retry_after=1)  # the watcher's first requests are rate limited
    watcher = h.start_watcher()
    until(watcher.active.is_set, message="watcher active")
    payments = [h.create(amount=2 + i) for i in range(4)]
    at_tip(watcher, chain)
    assert proxy.counts["rate_limited"] == 3

    proxy.down()  # the node goes away (connection refused) while 50+ blocks pass with payments in them
    until(lambda: "ConnectionError" in caplog.text, message="the watcher noticed the outage")
    start = chain.block_number
    pay_usdc(chain, payments[0])
    chain.mine(20)
    pay_usdc(chain, payments[1])
    pay_usdc(chain, payments[2])  # the next block
    chain.mine(30)
    pay_usdc(chain, payments[3])  # near the tip: seen, then confirmed
    chain.mine(CONFIRMATIONS - 1)
    assert chain.block_number - start >= 50
    proxy.up()

    for p in payments:
        h.wait_status(p["id"], "COMPLETED", timeout=60)
        assert int(h.payment(p["id"]).amount_received_units) == units_due(p)
        assert [t.status for t in h.transfers(p["id"])] == ["CONFIRMED"]  # exactly once
    at_tip(watcher, chain)

    # The window shrank below the proxy's limit instead of asking the refused range again,
    # and read the missed blocks in pieces of several blocks, not one by one.
    assert proxy.counts["too_large"] >= 1
    spans = [hi - lo + 1 for lo, hi in proxy.log_ranges]
    assert max(spans) <= MAX_LOG_RANGE and max(spans) > 1
    covered = sorted(n for lo, hi in proxy.log_ranges for n in range(lo, hi + 1) if n > start)
    assert set(covered) >= set(range(start + 1, chain.block_number + 1))

    text = caplog.text
    assert f"http://127.0.0.1:{proxy.port}" in text  # the node is named ...
    assert KEY not in text  # ... without its key
