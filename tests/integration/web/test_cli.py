"""The real ``kassa`` console script, run as a subprocess against the test database; the
keys and wallets it makes are then used through the API. Error variants run the same
``main`` in-process (one subprocess costs about a second of interpreter start-up)."""

from __future__ import annotations

import json
import secrets
import uuid

import pytest
import sqlalchemy as sa

from kassa_common import cli
from kassa_common.accounts import stores
from kassa_common.chains.hd import TEST_XPUBS, derive_address
from kassa_common.models import ApiKey, Merchant, Wallet
from tests.support.api import API, LIVE_PAYMENT, PAYMENT, assert_error, new_key
from tests.support.cli import kassa, kassa_main  # noqa: F401  (fixtures)
from tests.support.keys import fresh_key

TEST_XPUB_FIRST_EVM_ADDRESS = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
XPRV = "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"


def email() -> str:
    return f"op-{secrets.token_hex(6)}@example.com"


def wallets_of(sessions, merchant_id) -> dict:
    with sessions() as s:
        rows = s.scalars(sa.select(Wallet).where(Wallet.merchant_id == merchant_id)).all()
    return {(w.mode, w.chain): w.xpub for w in rows}


# ---- merchants ----------------------------------------------------------------------------


def test_merchant_create_with_activate_prints_json(kassa, sessions, client):
    address = email()
    made = json.loads(
        kassa(
            "--json",
            "merchant",
            "create",
            "--email",
            address,
            "--password",
            "correct horse",
            "--business-name",
            "Corner Shop",
            "--activate",
        ).stdout
    )
    assert made["email"] == address and made["activated"] is True
    with sessions() as s:
        row = s.get(Merchant, uuid.UUID(made["id"]))
        assert stores.account_by_email(s, address).password_hash.startswith("$argon2id$")
    assert (row.business_name, row.activated, row.banned) == ("Corner Shop", True, False)
    key = new_key(sessions, row.id, "test", ["payments:read"])
    assert client.get(f"{API}/payments", headers={"X-Api-Key": key}).status_code == 200


def test_merchant_activate_lets_its_keys_in(kassa, make_merchant, client):
    m = make_merchant(activated=False)
    assert_error(client.get(f"{API}/payments", headers=m.headers()), 401, "UNAUTHORIZED")
    assert json.loads(kassa("--json", "merchant", "activate", m.email).stdout)["activated"] is True
    assert client.get(f"{API}/payments", headers=m.headers()).status_code == 200


def test_merchant_ban_locks_its_keys_out(kassa, merchant, client):
    assert client.get(f"{API}/payments", headers=merchant.headers()).status_code == 200
    done = kassa("merchant", "ban", merchant.email.upper())
    assert "banned = True" in done.stdout
    for mode in ("test", "live"):
        assert_error(client.get(f"{API}/payments", headers=merchant.headers(mode)), 401, "UNAUTHORIZED")


def test_merchant_create_without_activate_is_not_usable(kassa_main, sessions, client):
    address = email()
    code, out, _ = kassa_main(
        "--json", "merchant", "create", "--email", address, "--password", "long enough", "--business-name", "Later Ltd"
    )
    made = json.loads(out)
    assert code == 0 and made["activated"] is False
    key = new_key(sessions, uuid.UUID(made["id"]), "test", ["payments:read"])
    assert_error(client.get(f"{API}/payments", headers={"X-Api-Key": key}), 401, "UNAUTHORIZED")


# ---- keys ---------------------------------------------------------------------------------


def test_key_create_json_prints_key_and_id_and_the_key_works(kassa, merchant, client, sessions):
    key = json.loads(
        kassa(
            "--json",
            "key",
            "create",
            "--email",
            merchant.email,
            "--mode",
            "test",
            "--scopes",
            "payments:create,payments:read",
        ).stdout
    )
    assert {"key", "id"} <= set(key) and key["key"].startswith("kassa_test_")
    with sessions() as s:
        stored = s.get(ApiKey, uuid.UUID(key["id"]))
    assert stored.merchant_id == merchant.id and stored.mode == "test"
    assert sorted(stored.scopes) == ["payments:create", "payments:read"] and key["key"] not in stored.key_hash
    headers = {"X-Api-Key": key["key"]}
    created = client.post(f"{API}/payments", json=PAYMENT, headers=headers)
    assert created.status_code == 201
    assert client.get(f"{API}/payments/{created.json['data']['id']}", headers=headers).status_code == 200
    assert_error(client.get(f"{API}/products", headers=headers), 403, "FORBIDDEN")


def test_key_create_text_output_shows_the_key_once(kassa, merchant, client):
    done = kassa(
        "key", "create", "--email", merchant.email, "--mode", "live", "--scopes", "payments:read", "--name", "ci"
    )
    key = done.stdout.split()[0]
    assert key.startswith("kassa_live_") and "shown once" in done.stdout
    assert client.get(f"{API}/payments", headers={"X-Api-Key": key}).status_code == 200


def test_json_flag_also_works_after_the_command(kassa, merchant):
    done = kassa("key", "create", "--email", merchant.email, "--mode", "test", "--scopes", "payments:read", "--json")
    assert json.loads(done.stdout)["key"].startswith("kassa_test_")


# ---- wallets ------------------------------------------------------------------------------


def test_wallet_set_with_a_real_xpub(kassa, merchant, sessions):
    shown = json.loads(
        kassa(
            "--json",
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
        ).stdout
    )
    assert shown["first_address"] == TEST_XPUB_FIRST_EVM_ADDRESS
    text = kassa(
        "wallet",
        "set",
        "--email",
        merchant.email,
        "--mode",
        "test",
        "--chain",
        "bitcoin",
        "--xpub",
        TEST_XPUBS["bitcoin"],
    ).stdout
    assert "bitcoin wallet set" in text and "tb1q" in text
    assert wallets_of(sessions, merchant.id) == {
        ("live", "evm"): TEST_XPUBS["evm"],
        ("test", "bitcoin"): TEST_XPUBS["bitcoin"],
    }


def test_wallet_set_with_a_garbage_xpub_exits_1_with_a_clear_message(kassa, merchant, sessions):
    done = kassa(
        "wallet",
        "set",
        "--email",
        merchant.email,
        "--mode",
        "live",
        "--chain",
        "evm",
        "--xpub",
        "not-an-xpub",
        ok=False,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("kassa: ") and "extended public key" in done.stderr
    assert "Traceback" not in done.stderr
    assert wallets_of(sessions, merchant.id) == {}


@pytest.mark.parametrize(
    "chain, xpub, words",
    [
        ("evm", TEST_XPUBS["bitcoin"], "cannot be used for evm"),
        ("evm", XPRV, "PUBLIC"),
        ("bitcoin", TEST_XPUBS["evm"][:-4] + "abcd", "checksum"),
        ("evm", "   ", "empty"),
    ],
    ids=["vpub for evm", "private key", "bad checksum", "blank"],
)
def test_wallet_set_rejects_unusable_keys(kassa_main, merchant, sessions, chain, xpub, words):
    code, _, err = kassa_main(
        "wallet", "set", "--email", merchant.email, "--mode", "live", "--chain", chain, "--xpub", xpub
    )
    assert code == 1 and words in err
    assert wallets_of(sessions, merchant.id) == {}


def test_wallet_set_replaces_the_previous_key(kassa_main, merchant, sessions):
    first, second = fresh_key(), fresh_key()
    for xpub in (first, second):
        assert (
            kassa_main("wallet", "set", "--email", merchant.email, "--mode", "live", "--chain", "evm", "--xpub", xpub)[
                0
            ]
            == 0
        )
    assert wallets_of(sessions, merchant.id) == {("live", "evm"): second}


def test_live_payment_derives_from_the_wallet_set_by_the_cli(kassa, merchant, client):
    headers = merchant.headers("live")
    assert_error(client.post(f"{API}/payments", json=LIVE_PAYMENT, headers=headers), 422, "UNPROCESSABLE_ENTITY")
    xpub = fresh_key()
    shown = json.loads(
        kassa(
            "--json", "wallet", "set", "--email", merchant.email, "--mode", "live", "--chain", "evm", "--xpub", xpub
        ).stdout
    )
    assert shown["first_address"] == derive_address("evm", xpub, 0)
    first = client.post(f"{API}/payments", json=LIVE_PAYMENT, headers=headers)
    second = client.post(f"{API}/payments", json=LIVE_PAYMENT, headers=headers)
    assert first.status_code == second.status_code == 201
    assert first.json["data"]["test_mode"] is False
    assert [first.json["data"]["address"], second.json["data"]["address"]] == [
        derive_address("evm", xpub, 0),
        derive_address("evm", xpub, 1),
    ]
    test_payment = client.post(f"{API}/payments", json=PAYMENT, headers=merchant.headers("test")).json["data"]
    assert test_payment["address"] not in {derive_address("evm", xpub, i) for i in range(3)}


# ---- failures -----------------------------------------------------------------------------


def test_errors_are_json_on_stderr_with_the_json_flag(kassa):
    done = kassa("--json", "merchant", "ban", email(), ok=False)
    assert done.returncode == 1 and done.stdout == ""
    assert "no merchant" in json.loads(done.stderr)["error"]


@pytest.mark.parametrize(
    "args, words",
    [
        (("key", "create", "--email", "{email}", "--mode", "test", "--scopes", "payments:write"), "payments:write"),
        (("merchant", "create", "--email", "{new}", "--password", "short", "--business-name", "X"), "8 characters"),
        (
            ("merchant", "create", "--email", "{email}", "--password", "long enough", "--business-name", "X"),
            "already exists",
        ),
        (("merchant", "create", "--email", "nobody", "--password", "long enough", "--business-name", "X"), "email"),
        (("merchant", "activate", "{new}"), "no merchant"),
        (("key", "create", "--email", "{new}", "--mode", "test", "--scopes", "payments:read"), "no merchant"),
    ],
    ids=[
        "unknown scope",
        "short password",
        "duplicate email",
        "not an email",
        "unknown merchant to activate",
        "key for unknown merchant",
    ],
)
def test_invalid_commands_exit_1_with_a_message(kassa_main, merchant, args, words):
    code, out, err = kassa_main(*(a.format(email=merchant.email.upper(), new=email()) for a in args))
    assert code == 1 and out == "" and words in err and err.startswith("kassa: ")


def test_unreachable_database_is_a_clear_failure(monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/nowhere")
    assert cli.main(["--json", "merchant", "ban", email()]) == 1
    assert "database" in json.loads(capsys.readouterr().err)["error"]
