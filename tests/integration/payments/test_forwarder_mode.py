"""Forwarder mode per merchant and mode: set with `kassa wallet set --address` or on the
dashboard's Wallets page; each payment's address is then its own deposit address, computed
off-chain from the factory, the settlement address and the payment's salt."""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa

from kassa_common import cli
from kassa_common.chains import forwarder
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.models import Payment, Wallet
from tests.support.api import API, EVM_FIRST
from tests.support.dashboard import post
from tests.support.forwarder import fresh_address

SETTLEMENT = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"  # EIP-55's own example


@pytest.fixture
def kassa(database_url, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("KASSA_ENV", "development")  # the published test key is a live wallet on the dev chain

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def live_payment(client, merchant, **body) -> dict:
    r = client.post(
        f"{API}/payments",
        json={"amount": 10, "token": "USDC", "network": "LOCAL_EVM", **body},
        headers=merchant.headers("live"),
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def test_a_settlement_address_gives_each_payment_its_own_deposit_address(kassa, client, merchant, sessions):
    code, out, _ = kassa(
        "--json",
        "wallet",
        "set",
        "--email",
        merchant.email,
        "--mode",
        "live",
        "--chain",
        "evm",
        "--address",
        SETTLEMENT.lower(),
    )
    assert code == 0 and json.loads(out)["settlement_address"] == SETTLEMENT

    first, second = live_payment(client, merchant), live_payment(client, merchant, token="ETH", amount=30)

    factory = forwarder.factory_address()
    for p in (first, second):
        salt = forwarder.payment_salt(uuid.UUID(p["id"]))
        assert p["address"] == forwarder.deposit_address(factory, SETTLEMENT, salt)
        assert p["settlement_address"] == SETTLEMENT and p["swept_at"] is None and p["sweep_transaction_hash"] is None
        with sessions() as s:
            row = s.get(Payment, uuid.UUID(p["id"]))
            assert row.deposit_salt == "0x" + salt.hex() and row.derivation_index is None
    assert first["address"] != second["address"]


def test_an_extended_public_key_set_again_replaces_the_settlement_address(kassa, client, merchant, sessions):
    assert (
        kassa("wallet", "set", "--email", merchant.email, "--mode", "live", "--chain", "evm", "--address", SETTLEMENT)[
            0
        ]
        == 0
    )
    assert (
        kassa(
            "wallet", "set", "--email", merchant.email, "--mode", "live", "--chain", "evm", "--xpub", TEST_XPUBS["evm"]
        )[0]
        == 0
    )
    p = live_payment(client, merchant)
    assert p["settlement_address"] is None and p["address"].startswith("0x")
    with sessions() as s:
        wallet = s.scalars(sa.select(Wallet).where(Wallet.merchant_id == merchant.id, Wallet.mode == "live")).one()
        assert (wallet.xpub, wallet.settlement_address) == (TEST_XPUBS["evm"], None)


def test_xpub_payments_of_the_merchant_in_the_other_mode_are_unaffected(kassa, client, merchant):
    assert (
        kassa("wallet", "set", "--email", merchant.email, "--mode", "live", "--chain", "evm", "--address", SETTLEMENT)[
            0
        ]
        == 0
    )
    r = client.post(
        f"{API}/payments", json={"amount": 10, "token": "USDC", "network": "BASE"}, headers=merchant.headers("test")
    )
    assert r.status_code == 201 and r.get_json()["data"]["settlement_address"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--chain", "evm", "--address", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"], "checksum"),
        (["--chain", "evm", "--address", "0x1234"], "not an EVM address"),
        (["--chain", "evm", "--address", "0x" + "0" * 40], "zero address"),
        (["--chain", "bitcoin", "--address", SETTLEMENT], "--chain evm"),
    ],
)
def test_a_bad_settlement_address_is_refused_with_the_reason(kassa, merchant, sessions, args, message):
    code, _, err = kassa("wallet", "set", "--email", merchant.email, "--mode", "live", *args)
    assert code == 1 and message in err
    with sessions() as s:
        assert s.scalars(sa.select(Wallet).where(Wallet.merchant_id == merchant.id)).first() is None


def test_a_key_and_an_address_at_once_is_a_usage_error(kassa, merchant):
    with pytest.raises(SystemExit) as exit_:
        kassa(
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
            "--address",
            SETTLEMENT,
        )
    assert exit_.value.code == 2


def test_the_wallets_page_sets_a_settlement_address_and_shows_it(dash, sessions):
    settlement = fresh_address()
    r = post(dash, "/dashboard/wallets", chain="evm", settlement_address=settlement.lower())
    page = r.get_data(as_text=True)
    assert r.status_code == 200 and settlement in page and "forward" in page
    with sessions() as s:
        assert (
            s.scalars(
                sa.select(Wallet.settlement_address).where(
                    Wallet.settlement_address == settlement, Wallet.mode == "test"
                )
            ).one()
            == settlement
        )
    bad = post(dash, "/dashboard/wallets", chain="evm", settlement_address="0xnope")
    assert bad.status_code == 422 and "not an EVM address" in bad.get_data(as_text=True)
    back = post(dash, "/dashboard/wallets", chain="evm", xpub=TEST_XPUBS["evm"])
    assert back.status_code == 200 and EVM_FIRST in back.get_data(as_text=True)
