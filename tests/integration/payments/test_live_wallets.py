"""Live mode takes real money, so it takes only keys that can hold it (DESIGN.md section 5,
"Live wallets"), as operators and merchants meet it: the ``kassa`` CLI, the dashboard, the
API, and the web process refusing to start on the development secret.

The test suite runs as a development stack (``KASSA_ENV=development``, like ``make run``);
these tests run production where production is the point."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from kassa_common import cli
from kassa_common.accounts import merchants
from kassa_common.chains.hd import TEST_XPUBS, derive_address
from kassa_common.chains.networks import load_registry
from kassa_common.db import unit_of_work
from kassa_common.models import Wallet
from kassa_common.payments import addresses
from kassa_common.payments.addresses import TEST_INDEX_BASE
from kassa_dev import procfile
from tests.support.api import API, LIVE_PAYMENT, assert_error, set_live_wallet
from tests.support.dashboard import csrf_of, signed_in
from tests.support.keys import encoded, fresh_key
from tests.support.stack import free_port

ROOT = Path(__file__).resolve().parents[3]
# Published keys (BIP39 "abandon ... about" and anvil's/Hardhat's "test ... junk" mnemonics).
ABANDON_BIP84_ZPUB = (
    "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"
)
JUNK_EVM_XPUB = (
    "xpub6Ce9NcJvTk36xtLSrJLZqE7wtgA5deCeYs7rSQtreh4cj6ByPtrg9sD7V2FNFLPnf8heNP3FGkeV9qwfzvZNSd54JoNXVsXFYSYwHsnJxqP"
)


@pytest.fixture
def kassa_main(database_url, monkeypatch, capsys):
    """The operator CLI in-process, in an environment: returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("DATABASE_URL", database_url)

    def run(*args: str, env: str = "production") -> tuple[int, str, str]:
        monkeypatch.setenv("KASSA_ENV", env)
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def wallet_set(kassa_main, merchant, mode, chain, xpub, env="production"):
    return kassa_main(
        "wallet", "set", "--email", merchant.email, "--mode", mode, "--chain", chain, "--xpub", xpub, env=env
    )


def wallets_of(sessions, merchant_id) -> dict:
    with sessions() as s:
        return {
            (w.mode, w.chain): w.xpub for w in s.scalars(sa.select(Wallet).where(Wallet.merchant_id == merchant_id))
        }


def app_client(settings, engine, **overrides):
    from kassa_api.app import create_app

    return create_app(settings.with_(**overrides), engine=engine).test_client()


@pytest.fixture
def production(settings, engine):
    """The API and pages as production runs them (its own secret, fixed rates not for live, no
    market source configured)."""
    return app_client(
        settings,
        engine,
        kassa_env="production",
        web={"secret_key": secrets.token_urlsafe(32)},
        rates={"fixed_rates_allow_live": False, "providers": ()},
    )


# ---- mainnet keys only ------------------------------------------------------------------


@pytest.mark.parametrize("env", ["production", "development"])
@pytest.mark.parametrize("chain, prefix", [("evm", "tpub"), ("bitcoin", "tpub"), ("bitcoin", "vpub")])
def test_live_mode_refuses_a_testnet_key_in_any_environment(kassa_main, merchant, sessions, env, chain, prefix):
    key = fresh_key(prefix)
    code, _, err = wallet_set(kassa_main, merchant, "live", chain, key, env=env)
    assert code == 1 and "testnet key" in err and "mainnet" in err
    assert wallets_of(sessions, merchant.id) == {}
    assert wallet_set(kassa_main, merchant, "test", chain, key, env=env)[0] == 0  # test mode takes it


def test_a_ypub_is_refused_with_what_to_enter_instead(kassa_main, merchant, sessions):
    code, _, err = wallet_set(kassa_main, merchant, "live", "bitcoin", encoded(ABANDON_BIP84_ZPUB, "ypub"))
    assert code == 1 and "BIP49" in err and "zpub" in err
    assert wallets_of(sessions, merchant.id) == {}


# ---- published test keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    "chain, key",
    [
        ("evm", TEST_XPUBS["evm"]),
        ("evm", JUNK_EVM_XPUB),
        ("bitcoin", ABANDON_BIP84_ZPUB),
        ("bitcoin", encoded(ABANDON_BIP84_ZPUB, "xpub")),  # another encoding of the same key
        ("bitcoin", TEST_XPUBS["bitcoin"]),
    ],
    ids=["abandon evm", "anvil junk evm", "abandon zpub", "abandon zpub as xpub", "abandon vpub"],
)
def test_live_mode_refuses_the_published_test_keys_outside_development(kassa_main, merchant, sessions, chain, key):
    code, _, err = wallet_set(kassa_main, merchant, "live", chain, key)
    assert code == 1 and "published" in err and "anyone can spend" in err
    assert wallets_of(sessions, merchant.id) == {}


def test_in_development_a_published_test_key_is_accepted_with_a_warning(database_url, merchant, sessions):
    env = {**os.environ, "DATABASE_URL": database_url, "KASSA_ENV": "development"}
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("kassa")),
            "wallet",
            "set",
            "--email",
            merchant.email,
            "--mode",
            "live",
            "--chain",
            "evm",
            "--xpub",
            TEST_XPUBS["evm"],
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "evm wallet set" in done.stdout
    assert done.stderr.startswith("kassa: warning: ") and "published" in done.stderr
    assert wallets_of(sessions, merchant.id) == {("live", "evm"): TEST_XPUBS["evm"]}


def login(client, sessions, mode: str) -> str:
    signed_in(client, sessions, mode)
    return csrf_of(client.get("/dashboard/wallets"))


def test_the_dashboard_refuses_a_published_key_for_live_mode_in_production(production, sessions):
    token = login(production, sessions, "live")
    r = production.post(
        "/dashboard/wallets",
        data={"csrf_token": token, "chain": "evm", "xpub": TEST_XPUBS["evm"], "password": "s3cret-pass"},
    )
    assert r.status_code == 422 and "anyone can spend" in r.get_data(as_text=True)


def test_the_dashboard_accepts_it_in_development_and_warns(client, sessions):
    token = login(client, sessions, "live")
    r = client.post(
        "/dashboard/wallets",
        data={"csrf_token": token, "chain": "evm", "xpub": TEST_XPUBS["evm"], "password": "s3cret-pass"},
    )
    page = r.get_data(as_text=True)
    assert r.status_code == 200 and 'id="wallet-warning"' in page and "published" in page


def test_a_live_payment_from_a_published_key_is_refused_outside_development(production, live_merchant):
    error = assert_error(
        production.post(f"{API}/payments", json=LIVE_PAYMENT, headers=live_merchant.headers("live")),
        422,
        "UNPROCESSABLE_ENTITY",
    )
    assert "published" in error["message"]


# ---- one index sequence per key ----------------------------------------------------------


@pytest.fixture
def regtest_client(settings, engine, base_env):
    """BITCOIN_REGTEST enabled for live payments (its node is never asked here)."""
    networks = load_registry({**base_env, "BITCOIN_REGTEST_RPC_URL": "http://127.0.0.1:9"})
    return app_client(settings, engine, networks=networks)


def live_btc_address(client, merchant) -> str:
    r = client.post(
        f"{API}/payments",
        json={"amount": 60, "token": "BTC", "network": "BITCOIN_REGTEST"},
        headers=merchant.headers("live"),
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]["address"]


def test_the_same_key_entered_in_another_encoding_continues_its_index_sequence(regtest_client, merchant, sessions):
    key = fresh_key("xpub")
    set_live_wallet(sessions, merchant.id, "bitcoin", key)
    first = live_btc_address(regtest_client, merchant)
    set_live_wallet(sessions, merchant.id, "bitcoin", encoded(key, "zpub"))  # the merchant re-enters it as a zpub
    second = live_btc_address(regtest_client, merchant)
    assert [first, second] == [derive_address("bitcoin", key, i, bech32_hrp="bcrt") for i in (0, 1)]


def test_a_test_key_entered_as_tpub_then_xpub_continues_its_index_sequence(client, merchant, sessions):
    key = fresh_key("tpub")
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant.id, "test", "evm", key)
    first = client.post(
        f"{API}/payments", json={"amount": 1, "token": "USDC", "network": "BASE"}, headers=merchant.headers()
    ).get_json()["data"]["address"]
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant.id, "test", "evm", encoded(key, "xpub"))
    second = client.post(
        f"{API}/payments", json={"amount": 1, "token": "USDC", "network": "BASE"}, headers=merchant.headers()
    ).get_json()["data"]["address"]
    assert [first, second] == [derive_address("evm", key, TEST_INDEX_BASE + i) for i in (0, 1)]


def test_a_key_whose_sequence_is_gone_never_hands_out_an_address_a_payment_holds(client, merchant, sessions, engine):
    """A key used before whose sequence did not come along (it was named after another text
    of the key and no wallet held that text at the upgrade, or a restore left it out) starts
    after the addresses its payments hold, instead of at index 0."""
    key = fresh_key()
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant.id, "test", "evm", key)

    def address() -> str:
        r = client.post(
            f"{API}/payments", json={"amount": 1, "token": "USDC", "network": "BASE"}, headers=merchant.headers()
        )
        assert r.status_code == 201, r.get_data(as_text=True)
        return r.get_json()["data"]["address"]

    held = [address() for _ in range(3)]
    name = addresses.sequence_name("evm", key, True)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"DROP SEQUENCE {name}")
    addresses._known.clear()  # as a process that has not used the key yet
    assert [*held, address()] == [derive_address("evm", key, TEST_INDEX_BASE + i) for i in range(4)]


# ---- live rates ----------------------------------------------------------------------------


def test_fixed_rates_price_live_coin_payments_only_when_allowed(production, client, sessions, make_merchant):
    m = make_merchant()
    set_live_wallet(sessions, m.id, "evm", fresh_key())
    eth = {"amount": 30, "token": "ETH", "network": "LOCAL_EVM"}
    error = assert_error(
        production.post(f"{API}/payments", json=eth, headers=m.headers("live")), 503, "SERVICE_UNAVAILABLE"
    )
    assert "RATES_PROVIDERS" in error["message"] and "FIXED_RATES_ALLOW_LIVE" in error["message"]
    assert production.post(f"{API}/payments", json=LIVE_PAYMENT, headers=m.headers("live")).status_code == 201  # USDC
    test_eth = {**eth, "network": "BASE"}
    assert production.post(f"{API}/payments", json=test_eth, headers=m.headers("test")).status_code == 201
    allowed = client.post(f"{API}/payments", json=eth, headers=m.headers("live"))  # FIXED_RATES_ALLOW_LIVE=true
    assert allowed.status_code == 201 and allowed.get_json()["data"]["crypto_amount"] == "0.01"


def test_the_web_refuses_to_start_with_the_default_secret_key_outside_development(base_env):
    web = next(p for p in procfile.read(ROOT / "Procfile") if p.name == "web")
    env = procfile.with_this_python(
        {
            **{k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "KASSA_ENV")},
            **{k: v for k, v in base_env.items() if k != "KASSA_ENV"},
            "BIND": f"127.0.0.1:{free_port()}",
            "WEB_CONCURRENCY": "1",
        }
    )
    done = subprocess.run(web.argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "SECRET_KEY" in done.stderr and "KASSA_ENV=development" in done.stderr


def test_a_live_wallet_change_needs_the_password_again(client, sessions):
    """A stolen session alone cannot redirect live payments: no password, no change."""
    from kassa_common.models import Wallet

    token = login(client, sessions, "live")
    address = "0x" + "7" * 40
    for password in (None, "wrong-pass"):
        data = {"csrf_token": token, "chain": "evm", "settlement_address": address}
        if password:
            data["password"] = password
        r = client.post("/dashboard/wallets", data=data)
        assert r.status_code == 403 and "needs your password again" in r.get_data(as_text=True)
    with sessions() as s:
        assert (
            s.scalar(
                sa.select(sa.func.count())
                .select_from(Wallet)
                .where(sa.func.lower(Wallet.settlement_address) == address)
            )
            == 0
        )
    r = client.post(
        "/dashboard/wallets",
        data={"csrf_token": token, "chain": "evm", "settlement_address": address, "password": "s3cret-pass"},
    )
    assert r.status_code == 200, r.get_data(as_text=True)
