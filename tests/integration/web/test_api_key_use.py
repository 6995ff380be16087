"""An API key's created and last-used dates: the API records a key's use at most once a
minute (the lookup says whether the stored time is stale), and the dashboard's API keys page
shows both, "never" for a key not used yet."""

from __future__ import annotations

import json
import re

import sqlalchemy as sa

from kassa_common.models import ApiKey, Merchant
from tests.support.api import API, new_key
from tests.support.cli import cli_runner
from tests.support.dashboard import post


def stored(sessions, prefix: str) -> tuple:
    """The key's last_used_at and the row's version (xmin changes with every write)."""
    with sessions() as s:
        return s.execute(
            sa.select(ApiKey.last_used_at, sa.literal_column("api_keys.xmin::text")).where(ApiKey.prefix == prefix)
        ).one()


def test_a_key_records_its_use_at_most_once_a_minute(client, sessions, make_merchant):
    merchant = make_merchant()
    key = new_key(sessions, merchant.id, "test", ["payments:read"])
    prefix = key[:18] + "…"
    assert stored(sessions, prefix)[0] is None

    assert client.get(f"{API}/payments", headers={"X-Api-Key": key}).status_code == 200
    used, version = stored(sessions, prefix)
    assert used is not None

    for _ in range(3):  # within the minute: nothing written
        assert client.get(f"{API}/payments", headers={"X-Api-Key": key}).status_code == 200
    assert stored(sessions, prefix) == (used, version)

    with sessions() as s, s.begin():  # a minute and more later
        s.execute(
            sa.update(ApiKey)
            .where(ApiKey.prefix == prefix)
            .values(last_used_at=ApiKey.last_used_at - sa.text("interval '61 seconds'"))
        )
    assert client.get(f"{API}/payments", headers={"X-Api-Key": key}).status_code == 200
    assert stored(sessions, prefix)[0] > used


def test_a_refused_key_records_nothing(client, sessions, make_merchant):
    merchant = make_merchant(activated=False)
    key = new_key(sessions, merchant.id, "test", ["payments:read"])
    assert client.get(f"{API}/payments", headers={"X-Api-Key": key}).status_code == 401
    assert stored(sessions, key[:18] + "…")[0] is None


def test_the_keys_page_shows_created_and_last_used(dash, sessions, app):
    with sessions() as s:
        merchant_id = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
    used = new_key(sessions, merchant_id, "test", ["payments:read"])
    assert post(dash, "/dashboard/keys", name="never used", mode="test", scopes="payments:read").status_code == 200
    assert app.test_client().get(f"{API}/payments", headers={"X-Api-Key": used}).status_code == 200

    page = dash.get("/dashboard/keys").get_data(as_text=True)
    with sessions() as s:
        rows = {k.prefix: k for k in s.scalars(sa.select(ApiKey).where(ApiKey.merchant_id == merchant_id))}
    assert len(rows) == 2
    for prefix, row in rows.items():
        item = page[page.index(prefix) :]
        item = item[: item.index("</li>")]
        created = re.search(r'class="key-created" datetime="[^"]+">([^<]+)<', item).group(1)
        assert created == row.created_at.strftime("%Y-%m-%d %H:%M") + " UTC"
        last = re.search(r'class="key-last-used"[^>]*>([^<]+)<', item).group(1)
        if row.last_used_at is None:
            assert row.name == "never used" and last == "never"
        else:
            assert last == row.last_used_at.strftime("%Y-%m-%d %H:%M") + " UTC"
    assert "Last used" in page


def test_kassa_key_list_shows_created_and_last_used(client, sessions, make_merchant, database_url, monkeypatch, capsys):
    merchant = make_merchant()
    used = new_key(sessions, merchant.id, "test", ["payments:read"])
    unused = new_key(sessions, merchant.id, "live", ["payments:read"])
    assert client.get(f"{API}/payments", headers={"X-Api-Key": used}).status_code == 200
    kassa = cli_runner(monkeypatch, capsys, {"DATABASE_URL": database_url, "KASSA_ENV": "development"})

    code, out, _ = kassa("--json", "key", "list", "--email", merchant.email)
    assert code == 0
    listed = {k["prefix"]: k for k in json.loads(out)["keys"]}
    assert listed[used[:18] + "…"]["last_used_at"] is not None and listed[unused[:18] + "…"]["last_used_at"] is None
    assert all(k["created_at"] for k in listed.values()) and used not in out  # never the secret

    code, out, _ = kassa("key", "list", "--email", merchant.email)
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "last used never" in lines[unused[:18] + "…"]
    assert "last used never" not in lines[used[:18] + "…"] and "created " in lines[used[:18] + "…"]
