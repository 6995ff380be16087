"""``kassa store …`` as an operator types it (DESIGN §14): stores for an account, members
added without an invitation, the last owner kept; the stores' money kept apart."""

from __future__ import annotations

import json
import secrets
import uuid

from kassa_common.accounts import keys
from kassa_common.db import unit_of_work
from tests.support.api import API, PAYMENT
from tests.support.cli import kassa  # noqa: F401  (fixtures)


def account(kassa, name: str = "First Shop") -> str:
    """A merchant made by the operator (an account owning one store); its email."""
    address = f"st-{secrets.token_hex(6)}@example.com"
    kassa(
        "merchant", "create", "--email", address, "--password", "correct horse", "--business-name", name, "--activate"
    )
    return address


def stores_of(kassa, email: str) -> list[dict]:
    return json.loads(kassa("store", "list", "--email", email, "--json").stdout)


def test_an_account_creates_a_second_store_and_lists_both_with_its_role(kassa, sessions, client):
    alice = account(kassa, "Alice Coffee")
    first = stores_of(kassa, alice)
    assert [(s["name"], s["role"]) for s in first] == [("Alice Coffee", "owner")]
    made = json.loads(kassa("store", "create", "--email", alice, "--name", "Alice Tea", "--json").stdout)
    assert made["name"] == "Alice Tea" and made["role"] == "owner" and uuid.UUID(made["id"])
    both = stores_of(kassa, alice)
    assert [(s["id"], s["name"], s["role"]) for s in both] == [
        (first[0]["id"], "Alice Coffee", "owner"),  # the first store stays first: `--email` commands act on it
        (made["id"], "Alice Tea", "owner"),
    ]
    assert set(both[0]) == {"id", "name", "role"}
    text = kassa("store", "list", "--email", alice).stdout
    assert "Alice Coffee" in text and "Alice Tea" in text and made["id"] in text

    # the merchant commands still act on the first store, and each store's money is its own
    key = json.loads(
        kassa(
            "key", "create", "--email", alice, "--mode", "test", "--scopes", "payments:create,payments:read", "--json"
        ).stdout
    )["key"]
    with unit_of_work(sessions) as s:
        tea_key = keys.create_key(s, uuid.UUID(made["id"]), "test", ["payments:create", "payments:read"]).key
    paid = client.post(f"{API}/payments", json=PAYMENT, headers={"X-Api-Key": key}).get_json()["data"]
    assert client.get(f"{API}/payments/{paid['id']}", headers={"X-Api-Key": key}).status_code == 200
    assert client.get(f"{API}/payments/{paid['id']}", headers={"X-Api-Key": tea_key}).status_code == 404


def test_store_create_needs_an_existing_account_and_a_name(kassa):
    missing = kassa("store", "create", "--email", f"nobody-{secrets.token_hex(4)}@example.com", "--name", "X", ok=False)
    assert missing.returncode == 1 and "no account with email" in missing.stderr
    nameless = kassa("store", "create", "--email", account(kassa), "--name", "  ", "--json", ok=False)
    assert nameless.returncode == 1 and "needs a name" in json.loads(nameless.stderr)["error"]


def test_add_member_gives_an_existing_account_a_role_and_remove_member_takes_it_away(kassa):
    alice, bob = account(kassa, "Alice Coffee"), account(kassa, "Bob Bikes")
    store = stores_of(kassa, alice)[0]["id"]
    added = json.loads(kassa("store", "add-member", store, "--email", bob, "--role", "viewer", "--json").stdout)
    assert added == {"store_id": store, "email": bob, "role": "viewer"}
    assert [(s["name"], s["role"]) for s in stores_of(kassa, bob)] == [
        ("Bob Bikes", "owner"),
        ("Alice Coffee", "viewer"),
    ]
    kassa("store", "add-member", store, "--email", bob.upper(), "--role", "manager")  # again: a role change
    assert stores_of(kassa, bob)[1]["role"] == "manager"

    removed = json.loads(kassa("store", "remove-member", store, "--email", bob, "--json").stdout)
    assert removed["removed"] is True and removed["role"] == "manager"
    assert [s["name"] for s in stores_of(kassa, bob)] == ["Bob Bikes"]
    again = kassa("store", "remove-member", store, "--email", bob, ok=False)
    assert again.returncode == 1 and "not a member" in again.stderr


def test_add_member_refuses_an_unknown_email_a_bad_role_and_an_unknown_store(kassa):
    alice = account(kassa)
    store = stores_of(kassa, alice)[0]["id"]
    stranger = f"stranger-{secrets.token_hex(4)}@example.com"
    unknown = kassa("store", "add-member", store, "--email", stranger, "--role", "viewer", ok=False)
    assert unknown.returncode == 1 and f"no account with email {stranger}" in unknown.stderr
    assert "sign up first" in unknown.stderr
    bad_role = kassa("store", "add-member", store, "--email", alice, "--role", "admin", ok=False)
    assert bad_role.returncode == 2 and "invalid choice" in bad_role.stderr
    no_store = kassa("store", "add-member", str(uuid.uuid4()), "--email", alice, "--role", "viewer", ok=False)
    assert no_store.returncode == 1 and "no store with id" in no_store.stderr
    garbage = kassa("store", "remove-member", "not-a-uuid", "--email", alice, ok=False)
    assert garbage.returncode == 1 and "no store with id" in garbage.stderr


def test_the_last_owner_can_be_neither_removed_nor_demoted_until_another_owner_exists(kassa):
    alice, bob = account(kassa), account(kassa)
    store = stores_of(kassa, alice)[0]["id"]
    last = kassa("store", "remove-member", store, "--email", alice, "--json", ok=False)
    assert last.returncode == 1 and "last owner" in json.loads(last.stderr)["error"]
    demoted = kassa("store", "add-member", store, "--email", alice, "--role", "manager", ok=False)
    assert demoted.returncode == 1 and "last owner" in demoted.stderr
    assert stores_of(kassa, alice)[0]["role"] == "owner"

    kassa("store", "add-member", store, "--email", bob, "--role", "owner")
    kassa("store", "remove-member", store, "--email", alice)  # two owners: one may leave
    assert [s["id"] for s in stores_of(kassa, alice)] == []
    assert store in [s["id"] for s in stores_of(kassa, bob)]
    still = kassa("store", "remove-member", store, "--email", bob, ok=False)
    assert still.returncode == 1 and "last owner" in still.stderr


def test_store_list_shows_only_the_stores_the_account_can_open(kassa):
    alice = account(kassa)
    kassa("store", "create", "--email", alice, "--name", "Second")
    kassa("merchant", "ban", alice)  # bans the first store the account owns
    assert [s["name"] for s in stores_of(kassa, alice)] == ["Second"]
