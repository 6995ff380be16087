"""Forwarder settlement end to end, as the issue's acceptance asks: on anvil (its own chain,
a block every half second), a merchant with a settlement address takes a USDC payment, a
native ETH payment and a USDC payment that also receives a stray USDT transfer; the EVM
watcher and the settler complete them; then `kassa sweep` (a real subprocess) or the
sweeper process on its own (the Procfile's command) moves the funds. The settlement
address then holds exactly what was paid, the deposits hold nothing, and payment.swept
webhooks reach a real local receiver."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kassa_dev import chain as devchain
from kassa_dev import procfile
from tests.support.anvil import start_chain
from tests.support.forwarder import ensure_factory
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.sweeper import chain_settings, live_pipeline, reset_sweeps, settling_merchant
from tests.support.wait import until

ROOT = Path(__file__).resolve().parents[3]
KASSA = Path(sys.executable).with_name("kassa")
USDC, ETH = 10**6, 10**18
TIMEOUT = 30


@pytest.fixture(scope="module")
def chain():
    """A chain that makes blocks by itself, as a real one does."""
    c = start_chain(block_time=0.5)
    ensure_factory(c.w3)
    yield c
    devchain.stop_anvil(c.proc)


@pytest.fixture
def env(settings, chain):
    return chain_settings(settings, chain)


@pytest.fixture
def merchant(make_merchant, sessions):
    reset_sweeps(sessions)
    return settling_merchant(make_merchant, sessions)


@pytest.fixture
def process_env(base_env, chain):
    return procfile.with_this_python(
        {
            **os.environ,
            **base_env,
            "LOCAL_EVM_RPC_URL": chain.url,
            "SWEEPER_PRIVATE_KEY": devchain.SWEEPER_PRIVATE_KEY,
            "LOG_LEVEL": "INFO",
            # the run's other tests spent with the same key: no cap here
            "SWEEP_MAX_SPEND_USD_PER_HOUR": "1000000000",
        }
    )


def balances(chain, address: str) -> dict[str, int]:
    return {
        "USDC": devchain.token_balance(chain.w3, chain.tokens["USDC"], address),
        "USDT": devchain.token_balance(chain.w3, chain.tokens["USDT"], address),
        "ETH": chain.w3.eth.get_balance(address),
    }


def take_three_payments(h, chain, receiver) -> list[dict]:
    """USDC, ETH, and USDC with a stray USDT transfer, paid in full and completed."""
    r = h.client.post("/v1/api/webhooks", json={"url": receiver.url}, headers=h.merchant.headers("live"))
    assert r.status_code == 201, r.get_data(as_text=True)
    usdc, eth, mixed = h.create(amount=10, token="USDC"), h.create(amount=30, token="ETH"), h.create(amount=5)
    devchain.pay(chain.w3, to=usdc["address"], amount_base_units=10 * USDC, token_contract=chain.tokens["USDC"])
    devchain.pay(chain.w3, to=eth["address"], amount_base_units=ETH // 100, token_contract=None)
    devchain.pay(chain.w3, to=mixed["address"], amount_base_units=5 * USDC, token_contract=chain.tokens["USDC"])
    devchain.pay(chain.w3, to=mixed["address"], amount_base_units=5 * USDC // 2, token_contract=chain.tokens["USDT"])
    for p in (usdc, eth, mixed):
        h.wait_status(p["id"], "COMPLETED", timeout=TIMEOUT)
    until(
        lambda: (
            {(t.token, t.status, t.counted) for t in h.transfers(mixed["id"])}
            == {("USDC", "CONFIRMED", True), ("USDT", "CONFIRMED", False)}
        ),
        TIMEOUT,
        message="the stray USDT confirmed",
    )
    return [usdc, eth, mixed]


def assert_everything_reached_the_settlement_address(chain, merchant, payments, receiver) -> None:
    assert balances(chain, merchant.settlement) == {"USDC": 15 * USDC, "USDT": 5 * USDC // 2, "ETH": ETH // 100}
    for p in payments:
        assert balances(chain, p["address"]) == {"USDC": 0, "USDT": 0, "ETH": 0}
        hooks = until(lambda p=p: receiver.events("payment.swept", p["id"]), TIMEOUT, message="payment.swept")
        data = hooks[-1].json["data"]
        assert data["settlement_address"] == merchant.settlement and data["sweep_transaction_hash"].startswith("0x")
        assert chain.w3.eth.get_transaction_receipt(data["sweep_transaction_hash"])["status"] == 1


def test_kassa_sweep_moves_exactly_what_was_paid_and_the_merchant_hears_of_it(
    env, engine, sessions, merchant, chain, receiver, process_env
):
    with live_pipeline(env, engine, sessions, merchant) as h:
        payments = take_three_payments(h, chain, receiver)

        done = subprocess.run(
            [str(KASSA), "--json", "sweep", "--network", "LOCAL_EVM", "--email", merchant.email],
            env=process_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

        assert done.returncode == 0, done.stderr
        (sweep,) = json.loads(done.stdout)["sweeps"]
        assert sweep["status"] == "CONFIRMED" and sweep["deposits"] == 3 and sweep["gas_used"] > 0
        assert sorted(sweep["payments"]) == sorted(p["id"] for p in payments)
        assert_everything_reached_the_settlement_address(chain, merchant, payments, receiver)
        got = h.client.get(f"/v1/api/payments/{payments[1]['short_id']}", headers=merchant.headers("live"))
        assert got.get_json()["data"]["sweep_transaction_hash"] == sweep["tx_hash"]


def test_the_sweeper_process_on_its_own_moves_exactly_what_was_paid(
    env, engine, sessions, merchant, chain, receiver, process_env, tmp_path
):
    (command,) = [p.argv for p in procfile.read(ROOT / "Procfile") if p.name == "sweeper"]
    log = open(tmp_path / "sweeper.log", "wb")  # noqa: SIM115 - the sweeper writes to it while it runs
    sweeper = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**process_env, "SWEEP_MIN_USD": "1", "SWEEP_INTERVAL_SECONDS": "0.2", "SWEEPER_NETWORKS": "LOCAL_EVM"},
    )
    try:
        with live_pipeline(env, engine, sessions, merchant) as h:
            payments = take_three_payments(h, chain, receiver)
            until(lambda: balances(chain, merchant.settlement)["USDT"] > 0, TIMEOUT, message="the stray USDT swept")
            assert_everything_reached_the_settlement_address(chain, merchant, payments, receiver)
    finally:
        os.killpg(sweeper.pid, signal.SIGTERM)
        sweeper.wait(15)
        log.close()
    assert sweeper.returncode == 0, (tmp_path / "sweeper.log").read_text()[-3000:]
