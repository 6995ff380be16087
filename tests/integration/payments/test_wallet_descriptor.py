"""Watch-only descriptors and the gap monitor on real PostgreSQL: the gap over a mix of paid
and unpaid Bitcoin payments (the window query, and its check against a replaced key; a
Litecoin key beside it with a gap of its own), the
``kassa wallet descriptor`` console script, and the dashboard's Wallets page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from kassa_common import cli
from kassa_common.accounts import keys, merchants
from kassa_common.chains.descriptor import checksum_valid, wallet_descriptors
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant, Payment, Transfer
from kassa_common.payments.addresses import TEST_INDEX_BASE as B
from kassa_common.payments.gap import bitcoin_watch_only
from tests.support.api import API
from tests.support.dashboard import signed_in
from tests.support.keys import encoded, fresh_key

KASSA = Path(sys.executable).with_name("kassa")
BTC_PAYMENT = {"amount": 10, "token": "BTC", "network": "BITCOIN"}


def set_bitcoin_key(sessions, merchant_id: uuid.UUID, xpub: str, mode: str = "test") -> None:
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, merchant_id, mode, "bitcoin", xpub)


def create_btc_payments(client, api_key: str, count: int) -> list[dict]:
    made = []
    for _ in range(count):
        r = client.post(f"{API}/payments", json=BTC_PAYMENT, headers={"X-Api-Key": api_key})
        assert r.status_code == 201, r.get_data(as_text=True)
        made.append(r.get_json()["data"])
    return made


def fund(sessions, merchant_id: uuid.UUID, indexes, *, transfer: str | None = None) -> None:
    """Mark the test payments at these indexes (counted from test mode's first, ``B``) paid
    (``amount_received``), or give them a transfer with status ``transfer`` instead (SEEN
    counts, ORPHANED does not)."""
    with unit_of_work(sessions) as s:
        rows = s.scalars(
            sa.select(Payment).where(
                Payment.merchant_id == merchant_id, Payment.derivation_index.in_([B + i for i in indexes])
            )
        ).all()
        assert len(rows) == len(list(indexes))
        for p in rows:
            if transfer is None:
                s.execute(sa.text("UPDATE payments SET amount_received_units = 1000 WHERE id = :id"), {"id": p.id})
            else:
                s.add(
                    Transfer(
                        id=uuid.uuid4(),
                        payment_id=p.id,
                        network=p.network,
                        tx_hash=uuid.uuid4().hex * 2,
                        log_index=0,
                        position=0,
                        token="BTC",
                        amount_units=1000,
                        status=transfer,
                        counted=True,
                    )
                )


def btc_merchant(make_merchant, sessions, client, *, payments: int, key: str | None = None):
    m = make_merchant()
    key = key or fresh_key("zpub")
    set_bitcoin_key(sessions, m.id, key)
    create_btc_payments(client, m.test_key, payments)
    return m, key


def watch_of(sessions, settings, merchant_id, mode="test"):
    with sessions() as s:
        return bitcoin_watch_only(s, merchant_id, mode, settings.networks)


# ---- the gap over payments ------------------------------------------------------------------------


def test_gap_over_paid_and_unpaid_payments(make_merchant, sessions, client, settings):
    m, key = btc_merchant(make_merchant, sessions, client, payments=30)  # indexes B+0..B+29
    fund(sessions, m.id, [0, 3])
    fund(sessions, m.id, [27], transfer="SEEN")  # seen in the mempool: the wallet sees it too
    fund(sessions, m.id, [10], transfer="ORPHANED")  # taken back by a reorg: unused
    other, _ = btc_merchant(make_merchant, sessions, client, payments=3)
    fund(sessions, other.id, [0, 1, 2])

    watch = watch_of(sessions, settings, m.id)
    gap = watch.gap
    assert (gap.handed_out, gap.funded, gap.longest_run, gap.run_from, gap.run_to) == (30, 3, 23, B + 4, B + 26)
    assert gap.over_default and gap.gap_limit == 43 and gap.range_end == B + 29 + 43
    assert f"(indexes {B + 4}-{B + 26})" in gap.summary()
    assert "at least 43" in gap.warning()
    assert watch.descriptors == wallet_descriptors(key)
    request = watch.import_request()
    assert [r["internal"] for r in request] == [False, True] and request[0]["range"] == [B, B + 72]
    assert isinstance(request[0]["timestamp"], int)

    with sessions() as s:  # the other merchant: its own key, every address paid
        assert bitcoin_watch_only(s, other.id, "test", settings.networks).gap.longest_run == 0
        assert bitcoin_watch_only(s, other.id, "live", settings.networks) is None  # no live key


def test_trailing_unpaid_addresses_count_and_a_new_key_starts_clean(make_merchant, sessions, client, settings):
    m, _ = btc_merchant(make_merchant, sessions, client, payments=4)
    fund(sessions, m.id, [1])
    gap = watch_of(sessions, settings, m.id).gap
    assert (gap.longest_run, gap.run_from, gap.run_to, gap.over_default) == (2, B + 2, B + 3, False)
    assert gap.gap_limit == 22  # the run and the margin: 20 would find these, not 20 more unpaid


def test_a_replaced_key_does_not_hide_the_new_keys_gap(make_merchant, sessions, client, settings):
    m, _old = btc_merchant(make_merchant, sessions, client, payments=12)  # the old key: indexes B+0..B+11
    fund(sessions, m.id, [8])
    new = fresh_key("zpub")
    set_bitcoin_key(sessions, m.id, new)
    create_btc_payments(client, m.test_key, 25)  # the new key: indexes B+0..B+24 again
    with unit_of_work(sessions) as s:  # pay the new key's first index only
        s.execute(
            sa.text(
                "UPDATE payments SET amount_received_units = 1 WHERE merchant_id = :m "
                "AND derivation_index = :b AND created_at = (SELECT max(created_at) FROM payments "
                "WHERE merchant_id = :m AND derivation_index = :b)"
            ),
            {"m": m.id, "b": B},
        )
    watch = watch_of(sessions, settings, m.id)
    # The old key's paid index 8 would split the run 1..24 in two; it is not the new key's.
    assert (watch.gap.handed_out, watch.gap.funded, watch.gap.longest_run) == (25, 1, 24)
    assert watch.descriptors == wallet_descriptors(new)


def test_the_same_key_in_another_encoding_keeps_its_history(make_merchant, sessions, client, settings):
    m, key = btc_merchant(make_merchant, sessions, client, payments=3)
    fund(sessions, m.id, [0, 1, 2])
    set_bitcoin_key(sessions, m.id, encoded(key, "xpub"))
    create_btc_payments(client, m.test_key, 2)  # indexes 3, 4: the sequence continues
    watch = watch_of(sessions, settings, m.id)
    assert (watch.gap.handed_out, watch.gap.funded, watch.gap.longest_run) == (5, 3, 2)
    assert watch.descriptors == wallet_descriptors(key)


# ---- kassa wallet descriptor ----------------------------------------------------------------------


def test_cli_prints_descriptors_and_the_gap(make_merchant, sessions, client, database_url):
    m, key = btc_merchant(make_merchant, sessions, client, payments=26)
    fund(sessions, m.id, [0])  # 25 unused after it
    env = {**os.environ, "DATABASE_URL": database_url, "KASSA_ENV": "development"}
    run = [str(KASSA), "wallet", "descriptor", "--email", m.email, "--mode", "test", "--chain", "bitcoin"]
    done = subprocess.run([*run, "--json"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    expected = wallet_descriptors(key)
    assert (data["receive"], data["change"], data["key_origin"]) == (expected.receive, expected.change, None)
    assert data["receive"].startswith("wpkh(xpub") and "/0/*)#" in data["receive"] and checksum_valid(data["receive"])
    assert data["gap"]["longest_run"] == 25 and data["gap"]["gap_limit"] == 45 and data["gap"]["over_default"]
    assert data["importdescriptors"][0]["range"] == [B, B + 25 + 45]
    assert "warning" in done.stderr and "at least 45" in done.stderr

    text = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert text.returncode == 0, text.stderr
    assert expected.receive in text.stdout and expected.change in text.stdout
    assert "set the gap limit to at least 45" in text.stdout and "wallet.change_gap_limit(45)" in text.stdout
    assert "key origin: unknown" in text.stdout and "importdescriptors" in text.stdout


def test_cli_fingerprint_and_errors(make_merchant, sessions, monkeypatch, capsys, database_url):
    monkeypatch.setenv("DATABASE_URL", database_url)
    m = make_merchant()

    def main(*args):
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    base = ("wallet", "descriptor", "--email", m.email, "--mode", "test")
    code, _, err = main("--json", *base, "--chain", "bitcoin")
    assert code == 1 and "no bitcoin wallet" in json.loads(err)["error"]
    code, _, err = main(*base, "--chain", "evm")
    assert code == 1 and "--chain bitcoin" in err
    key = fresh_key("vpub")
    set_bitcoin_key(sessions, m.id, key)
    code, out, _ = main("--json", *base, "--chain", "bitcoin", "--fingerprint", "DEADBEEF")
    data = json.loads(out)
    assert code == 0 and data["key_origin"] == "deadbeef/84h/1h/0h"
    assert data["receive"].startswith("wpkh([deadbeef/84h/1h/0h]tpub") and checksum_valid(data["receive"])
    assert data["gap"]["handed_out"] == 0 and data["gap"]["warning"] is None
    code, _, err = main(*base, "--chain", "bitcoin", "--fingerprint", "xyz")
    assert code == 1 and "8 hex" in err


# ---- the dashboard ---------------------------------------------------------------------------------


@pytest.fixture
def dash(client, sessions):
    signed_in(client, sessions)
    with sessions() as s:
        client.merchant_id = s.scalars(sa.select(Merchant.id).where(Merchant.email == client.email)).one()
    return client


def test_wallets_page_shows_descriptors_and_the_gap_warning(dash, sessions, make_merchant, client):
    key = fresh_key("zpub")
    saved = dash.post("/dashboard/wallets", data={"csrf_token": dash.token, "chain": "bitcoin", "xpub": key})
    page = saved.get_data(as_text=True)
    d = wallet_descriptors(key)
    assert saved.status_code == 200 and d.receive in page and d.change in page
    assert 'data-copy="descriptor-receive"' in page and 'id="gap-warning"' not in page
    assert "No address handed out yet" in page

    with unit_of_work(sessions) as s:
        api_key = keys.create_key(s, dash.merchant_id, "test", ["payments:create"]).key
    create_btc_payments(client, api_key, 23)  # index 0 paid, 1..22 not: a run of 22
    fund(sessions, dash.merchant_id, [0])
    _other, other_key = btc_merchant(make_merchant, sessions, client, payments=2)

    page = dash.get("/dashboard/wallets").get_data(as_text=True)
    assert 'id="gap-warning"' in page and "22 unused addresses in a row" in page
    assert "at least <strong>42</strong>" in page and "wallet.change_gap_limit(42)" in page
    assert f"&#34;range&#34;: [{B}, {B + 64}]" in page or f'"range": [{B}, {B + 64}]' in page
    assert wallet_descriptors(other_key).receive not in page and encoded(other_key, "xpub") not in page


def test_bitcoin_and_litecoin_keys_each_have_their_own_gap(make_merchant, sessions, client, settings):
    m, btc_key = btc_merchant(make_merchant, sessions, client, payments=3)  # Bitcoin: B+0..B+2
    ltc_key = fresh_key("zpub")
    with unit_of_work(sessions) as s:
        merchants.set_wallet(s, m.id, "test", "litecoin", ltc_key)
    for _ in range(5):  # Litecoin: B+0..B+4 of its own key, from a sequence of its own
        r = client.post(
            f"{API}/payments",
            json={"amount": 10, "token": "LTC", "network": "LITECOIN"},
            headers={"X-Api-Key": m.test_key},
        )
        assert r.status_code == 201 and r.get_json()["data"]["address"].startswith("tltc1")
    with unit_of_work(sessions) as s:
        s.execute(
            sa.text("UPDATE payments SET amount_received_units = 1 WHERE merchant_id = :m AND derivation_index = :i"),
            {"m": m.id, "i": B + 4},
        )
    with sessions() as s:
        btc = bitcoin_watch_only(s, m.id, "test", settings.networks)
        ltc = bitcoin_watch_only(s, m.id, "test", settings.networks, chain="litecoin")
    assert (btc.gap.handed_out, btc.gap.funded, btc.gap.longest_run) == (3, 0, 3)  # no Litecoin payment in it
    assert btc.descriptors == wallet_descriptors(btc_key)
    assert (ltc.gap.handed_out, ltc.gap.funded, ltc.gap.longest_run) == (5, 1, 4)
    assert ltc.descriptors == wallet_descriptors(ltc_key, chain="litecoin")
