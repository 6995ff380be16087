"""What the operator and the merchant see of a held deposit, and the operator's retry:
`kassa sweep --held` (its reason, what it holds, the key's spending this hour),
`kassa sweep --retry-held PAYMENT` (swept on its own once the cause is fixed, held again
with the new reason if not), and the dashboard's Sweeps and payment pages."""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa

from kassa_common.accounts import merchants, stores
from kassa_common.db import unit_of_work
from kassa_common.models import SweepHold
from kassa_common.sweeps import holds
from kassa_common.timefmt import utcnow
from kassa_dev import chain as devchain
from kassa_sweeper.engine import Outcome
from tests.support import settlements
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.cli import cli_runner
from tests.support.forwarder import SWEEPER
from tests.support.sweeper import (  # noqa: F401  (chain, factory: fixtures)
    NETWORK,
    chain,
    chain_settings,
    events_of,
    factory,
    live_payment,
    paid,
    sweeper_for,
)

ETH = 10**16


@pytest.fixture
def kassa(database_url, monkeypatch, capsys, chain):
    env = {
        "DATABASE_URL": database_url,
        "LOCAL_EVM_RPC_URL": chain.url,
        "SWEEPER_PRIVATE_KEY": devchain.SWEEPER_PRIVATE_KEY,
        "SWEEP_MAX_SPEND_USD_PER_HOUR": "1000000000",
        "RATES_PROVIDERS": "none",  # no market source: the fixed rates value the gas
        "LOCAL_EVM_CONFIRMATIONS": "1",  # automine: no other block comes
    }
    return cli_runner(monkeypatch, capsys, env)


@pytest.fixture
def held(settings, chain, sessions, make_merchant, client):
    """A merchant settling to a contract that refuses the coin, and its ETH payment whose
    deposit the sweeper held."""
    refuser = settlements.deploy(chain.w3, "Refuser")
    merchant = make_merchant()
    with unit_of_work(sessions) as s:
        merchants.set_settlement_address(s, merchant.id, "live", refuser)
    p = live_payment(client, merchant, 30, "ETH")
    paid(chain, sessions, p, ETH)
    sweeper = sweeper_for(chain_settings(settings, chain), sessions)
    for _ in range(4):
        sweeper.tick()
        chain.mine(1)
    assert hold_of(sessions, p).status == "HELD"
    return merchant, p, refuser


def hold_of(sessions, p) -> SweepHold | None:
    with sessions() as s:
        return s.scalars(sa.select(SweepHold).where(SweepHold.payment_id == uuid.UUID(p["id"]))).first()


def accept_the_coin(chain, contract: str) -> None:
    """The merchant fixes its settlement contract (an upgrade, as a proxy would get): from now
    on its receive takes the coin."""
    fixed = settlements.deploy(chain.w3, "SmartAccount")
    chain.rpc("anvil_setCode", contract, chain.w3.eth.get_code(fixed).to_0x_hex())


def test_kassa_sweep_held_lists_the_deposit_its_reason_and_the_keys_spending(kassa, held):
    merchant, p, refuser = held

    code, out, err = kassa("sweep", "--held", "--network", "LOCAL_EVM", "--email", merchant.email)
    assert code == 0, err
    assert p["short_id"] in out and p["address"] in out and "0.01 ETH" in out and "did not take" in out
    assert "LOCAL_EVM: the sweeper key spent" in out

    code, out, err = kassa("--json", "sweep", "--held", "--email", merchant.email)
    (row,) = json.loads(out)["held"]
    assert row["short_id"] == p["short_id"] and row["status"] == "HELD" and row["held"] == {"ETH": str(ETH)}
    assert row["settlement_address"] == refuser and refuser in row["reason"]


def test_retry_held_sweeps_the_deposit_once_the_settlement_contract_takes_the_coin(kassa, held, chain, sessions):
    _merchant, p, refuser = held
    accept_the_coin(chain, refuser)

    code, out, err = kassa(
        "--json", "sweep", "--network", "LOCAL_EVM", "--retry-held", p["short_id"], "--timeout", "60"
    )

    assert code == 0, err
    (sweep,) = json.loads(out)["sweeps"]
    assert sweep["status"] == "CONFIRMED" and sweep["payments"] == [p["id"]]
    assert chain.w3.eth.get_balance(refuser) == ETH and hold_of(sessions, p) is None
    assert len(events_of(sessions, p["id"], "payment.swept")) == 1


def test_retry_held_of_a_deposit_still_refused_holds_it_again_with_the_new_reason(kassa, held, chain, sessions):
    _merchant, p, _refuser = held
    nonce = chain.w3.eth.get_transaction_count(SWEEPER.address)

    code, out, err = kassa("sweep", "--network", "LOCAL_EVM", "--retry-held", p["id"], "--timeout", "60")

    assert code == 1 and "held" in err
    assert "held: " + p["short_id"] in out and "did not take" in out
    hold = hold_of(sessions, p)
    assert hold.status == "HELD" and hold.times_held == 2 and hold.released_at is not None
    assert chain.w3.eth.get_balance(p["address"]) == ETH
    assert chain.w3.eth.get_transaction_count(SWEEPER.address) == nonce + 1  # one try, on its own


def test_retry_held_of_a_payment_that_is_not_held_is_refused(kassa, held):
    _merchant, _, _ = held
    code, _, err = kassa("sweep", "--network", "LOCAL_EVM", "--retry-held", "NOTHELD12")
    assert code == 1 and "no held deposit for payment NOTHELD12" in err


def test_the_dashboard_shows_the_held_deposit_and_why(held, app, sessions):
    from tests.support.dashboard import csrf_of, log_in

    merchant, p, _ = held
    with unit_of_work(sessions) as s:
        stores.account_by_email(s, merchant.email).password_hash = merchants.hash_password("s3cret-pass")
    dash = app.test_client()
    log_in(dash, merchant.email)
    assert dash.post(
        "/dashboard/mode", data={"csrf_token": csrf_of(dash.get("/dashboard/keys")), "mode": "live"}
    ).status_code in (302, 303)

    listing = dash.get("/dashboard/sweeps").get_data(as_text=True)
    detail = dash.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)

    assert "Held deposits" in listing and p["short_id"] in listing and "0.01 ETH" in listing
    assert "did not take 0.01 ETH" in listing and "kassa sweep --retry-held" in listing
    assert "Sweep held" in detail and "did not take 0.01 ETH" in detail


def test_a_released_deposit_goes_alone_and_is_free_again_once_swept(held, chain, sessions, settings):
    _merchant, p, refuser = held
    accept_the_coin(chain, refuser)
    with unit_of_work(sessions) as s:
        holds.release(s, p["short_id"], network=NETWORK, now=utcnow())
    assert hold_of(sessions, p).status == "SOLO"
    sweeper = sweeper_for(chain_settings(settings, chain), sessions)  # the process, not the command

    outcomes = []
    for _ in range(4):
        outcomes.append(sweeper.tick().outcome)
        chain.mine(1)

    assert Outcome.CONFIRMED in outcomes and hold_of(sessions, p) is None
    assert chain.w3.eth.get_balance(refuser) == ETH
