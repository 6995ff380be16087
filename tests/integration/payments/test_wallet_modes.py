"""One extended public key set for test and for live mode (a merchant trying Kassa with the
wallet they will use for real): test payments never use up the live wallet's addresses,
and test mode shows the test network's address forms, the same in the API, on the checkout
page and on the dashboard's Wallets page."""

from __future__ import annotations

import re

import pytest

from kassa_common.accounts import keys, merchants
from kassa_common.chains.hd import derive_address
from kassa_common.chains.networks import load_registry
from kassa_common.db import unit_of_work
from kassa_common.payments.addresses import TEST_INDEX_BASE
from kassa_common.payments.gap import bitcoin_watch_only
from tests.support.api import API
from tests.support.dashboard import log_in, merchant_with_password, switch_mode
from tests.support.keys import fresh_key

BTC = {"amount": 10, "token": "BTC", "network": "BITCOIN"}
USDC = {"amount": 10, "token": "USDC", "network": "LOCAL_EVM"}


@pytest.fixture(scope="module")
def app(settings, base_env, engine):
    """The API with BITCOIN enabled for live payments (an RPC URL is all it takes; no node is asked)."""
    from kassa_api.app import create_app

    networks = load_registry({**base_env, "BITCOIN_RPC_URL": "http://127.0.0.1:9"})
    return create_app(settings.with_(networks=networks), engine=engine)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def merchant(client, sessions):
    """A merchant with a dashboard login and a test and a live API key."""
    email = merchant_with_password(sessions)
    with unit_of_work(sessions) as s:
        m = merchants.merchant_by_email(s, email)
        mode_keys = {mode: keys.create_key(s, m.id, mode, list(keys.SCOPES)).key for mode in ("test", "live")}
        merchant_id = m.id
    return type("Merchant", (), {"id": merchant_id, "email": email, "keys": mode_keys})


def same_key_in_both_modes(sessions, merchant, chain: str, key: str) -> None:
    with unit_of_work(sessions) as s:
        for mode in ("test", "live"):
            merchants.set_wallet(s, merchant.id, mode, chain, key)


def create(client, merchant, mode: str, body: dict) -> dict:
    r = client.post(f"{API}/payments", json=body, headers={"X-Api-Key": merchant.keys[mode]})
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def sign_in(client, merchant, mode: str) -> None:
    log_in(client, merchant.email)
    if mode == "live":
        switch_mode(client, "live")


def first_shown(client, chain: str) -> str:
    page = client.get("/dashboard/wallets").get_data(as_text=True)
    return re.search(rf'<code id="first-{chain}" class="value">([^<]+)</code>', page).group(1)


def test_test_payments_never_use_up_the_live_bitcoin_wallets_addresses(client, sessions, settings, merchant):
    key = fresh_key("zpub")  # a mainnet key, set for both modes
    same_key_in_both_modes(sessions, merchant, "bitcoin", key)

    tests = [create(client, merchant, "test", BTC) for _ in range(5)]

    with sessions() as s:  # the live wallet's gap monitor: nothing handed out in live mode yet
        gap = bitcoin_watch_only(s, merchant.id, "live", settings.networks).gap
    assert (gap.handed_out, gap.longest_run) == (0, 0)
    live = create(client, merchant, "live", BTC)
    assert live["address"] == derive_address("bitcoin", key, 0, bech32_hrp="bc")  # the wallet's first address
    assert [p["address"] for p in tests] == [
        derive_address("bitcoin", key, TEST_INDEX_BASE + i, bech32_hrp="tb") for i in range(5)
    ]
    with sessions() as s:
        assert bitcoin_watch_only(s, merchant.id, "live", settings.networks).gap.handed_out == 1
        assert bitcoin_watch_only(s, merchant.id, "test", settings.networks).gap.handed_out == 5


def test_a_test_mode_bitcoin_payment_shows_the_test_networks_address_in_the_api_the_checkout_and_the_dashboard(
    client, sessions, merchant
):
    key = fresh_key("zpub")
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant.id, "test", "bitcoin", key)
    sign_in(client, merchant, "test")
    shown_first = first_shown(client, "bitcoin")

    p = create(client, merchant, "test", BTC)

    assert p["address"].startswith("tb1q") and p["address"] == shown_first
    got = client.get(f"{API}/payments/{p['id']}", headers={"X-Api-Key": merchant.keys["test"]}).get_json()["data"]
    assert got["address"] == p["address"]
    checkout = client.get(f"/pay/{p['short_id']}").get_data(as_text=True)
    assert f'<code id="address" class="value">{p["address"]}</code>' in checkout and "bc1q" not in checkout
    assert client.get(f"/pay/{p['short_id']}/status").status_code == 200


def test_the_live_dashboard_shows_the_live_wallets_own_first_address(client, sessions, merchant):
    key = fresh_key("zpub")
    same_key_in_both_modes(sessions, merchant, "bitcoin", key)
    create(client, merchant, "test", BTC)
    sign_in(client, merchant, "live")
    assert first_shown(client, "bitcoin") == derive_address("bitcoin", key, 0, bech32_hrp="bc")
    assert create(client, merchant, "live", BTC)["address"] == derive_address("bitcoin", key, 0, bech32_hrp="bc")


def test_one_evm_key_in_both_modes_gives_each_mode_its_own_addresses(client, sessions, merchant):
    key = fresh_key()
    same_key_in_both_modes(sessions, merchant, "evm", key)
    tests = [create(client, merchant, "test", USDC)["address"] for _ in range(3)]
    lives = [create(client, merchant, "live", USDC)["address"] for _ in range(3)]
    assert lives == [derive_address("evm", key, i) for i in range(3)]  # the wallet's first three accounts
    assert tests == [derive_address("evm", key, TEST_INDEX_BASE + i) for i in range(3)]
    sign_in(client, merchant, "test")
    assert first_shown(client, "evm") == tests[0]


def test_a_key_used_by_both_modes_before_they_had_sequences_of_their_own_hands_out_no_address_twice(
    client, sessions, engine, merchant
):
    """Before, one sequence per key served both modes: its position (here 7) lies past every
    index either mode took. The live sequence is that one, continued; test mode starts at its
    own range, which no index of the shared sequence reached."""
    from kassa_common.payments import addresses

    key = fresh_key()
    same_key_in_both_modes(sessions, merchant, "evm", key)
    shared = addresses.sequence_name("evm", key)  # the name the key's one sequence had
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE SEQUENCE {shared} MINVALUE 0 START WITH 0")
        conn.exec_driver_sql(f"SELECT setval('{shared}', 6, true)")  # indexes 0..6 handed out, to either mode
    addresses._known.clear()  # as a process started after the upgrade
    assert shared == addresses.sequence_name("evm", key, False)
    assert create(client, merchant, "live", USDC)["address"] == derive_address("evm", key, 7)
    assert create(client, merchant, "test", USDC)["address"] == derive_address("evm", key, TEST_INDEX_BASE)
