"""The members page (DESIGN §14): an owner sees who may open the store, changes a member's
role or removes a member, never the last owner, and never reaches an account that is not a
member; a manager sees the list without the buttons."""

from __future__ import annotations

import secrets
import uuid

from kassa_common import audit
from kassa_common.accounts import merchants, stores
from kassa_common.db import unit_of_work
from kassa_common.timefmt import utcnow
from tests.support.dashboard import PASSWORD, csrf_of, log_in, merchant_with_password


def signed_in(app, email: str):
    client = app.test_client()
    log_in(client, email)
    client.token = csrf_of(client.get("/dashboard/stores"))
    return client


def account_id(sessions, email: str) -> uuid.UUID:
    with sessions() as s:
        return stores.account_by_email(s, email).id


def role_in(sessions, email: str, store_id: uuid.UUID) -> str | None:
    with sessions() as s:
        return stores.role_of(s, account_id(sessions, email), store_id)


def shop_with(sessions, role: str) -> tuple[str, str, uuid.UUID]:
    """An owner's store with one more member of ``role`` (an account of its own store too)."""
    owner, other = merchant_with_password(sessions), merchant_with_password(sessions)
    with unit_of_work(sessions) as s:
        store_id = merchants.merchant_by_email(s, owner).id
        stores.set_member(s, store_id, stores.account_by_email(s, other), role, actor=audit.OPERATOR)
    return owner, other, store_id


def test_an_owner_changes_a_members_role_and_removes_it_after_confirming(app, sessions):
    owner, other, store_id = shop_with(sessions, "manager")
    client = signed_in(app, owner)
    page = client.get("/dashboard/members").get_data(as_text=True)
    assert page.index(owner) < page.index(other)  # owners first
    assert 'href="/dashboard/members"' in page and "Change role" in page

    them = account_id(sessions, other)
    r = client.post(f"/dashboard/members/{them}/role", data={"csrf_token": client.token, "role": "viewer"})
    assert r.status_code == 303 and role_in(sessions, other, store_id) == "viewer"
    bad = client.post(f"/dashboard/members/{them}/role", data={"csrf_token": client.token, "role": "admin"})
    assert bad.status_code == 400 and "role must be one of" in bad.get_data(as_text=True)

    asked = client.post(f"/dashboard/members/{them}/remove", data={"csrf_token": client.token})
    assert asked.status_code == 200 and f"Remove {other} from this store?" in asked.get_data(as_text=True)
    assert role_in(sessions, other, store_id) == "viewer"  # asking changed nothing
    done = client.post(f"/dashboard/members/{them}/remove", data={"csrf_token": client.token, "confirm": "yes"})
    assert done.status_code == 303 and role_in(sessions, other, store_id) is None
    assert other not in client.get("/dashboard/members").get_data(as_text=True)


def test_the_last_owner_stays_and_an_owner_of_two_may_leave(app, sessions):
    owner, other, store_id = shop_with(sessions, "owner")
    client = signed_in(app, owner)
    me = account_id(sessions, owner)
    with unit_of_work(sessions) as s:  # back to one owner
        stores.set_member(s, store_id, stores.account_by_email(s, other), "employee", actor=audit.OPERATOR)
    demote = client.post(f"/dashboard/members/{me}/role", data={"csrf_token": client.token, "role": "viewer"})
    assert demote.status_code == 400 and "last owner" in demote.get_data(as_text=True)
    leave = client.post(f"/dashboard/members/{me}/remove", data={"csrf_token": client.token, "confirm": "yes"})
    assert leave.status_code == 400 and "last owner" in leave.get_data(as_text=True)
    assert role_in(sessions, owner, store_id) == "owner"

    with unit_of_work(sessions) as s:
        stores.set_member(s, store_id, stores.account_by_email(s, other), "owner", actor=audit.OPERATOR)
    left = client.post(f"/dashboard/members/{me}/remove", data={"csrf_token": client.token, "confirm": "yes"})
    assert left.status_code == 303 and left.headers["Location"].endswith("/dashboard/stores")
    assert role_in(sessions, owner, store_id) is None


def test_no_account_outside_the_store_is_reached_or_added_through_the_members_page(app, sessions):
    owner, _, store_id = shop_with(sessions, "viewer")
    stranger = merchant_with_password(sessions)
    client = signed_in(app, owner)
    for ref in (account_id(sessions, stranger), uuid.uuid4(), "nope"):
        r = client.post(f"/dashboard/members/{ref}/role", data={"csrf_token": client.token, "role": "owner"})
        assert r.status_code == 404 and "No such member of this store." in r.get_data(as_text=True), ref
        gone = client.post(f"/dashboard/members/{ref}/remove", data={"csrf_token": client.token, "confirm": "yes"})
        assert gone.status_code == 404, ref
    assert role_in(sessions, stranger, store_id) is None


def test_a_manager_sees_the_members_without_the_buttons_and_an_employee_not_at_all(app, sessions):
    owner, manager, store_id = shop_with(sessions, "manager")
    employee = f"emp-{secrets.token_hex(4)}@example.com"
    with unit_of_work(sessions) as s:
        stores.set_member(
            s,
            store_id,
            stores.new_account(s, employee, merchants.hash_password(PASSWORD)),
            "employee",
            actor=audit.OPERATOR,
        )
    client = signed_in(app, manager)
    switched = client.post(f"/dashboard/stores/{store_id}/switch", data={"csrf_token": client.token})
    assert switched.status_code == 303
    page = client.get("/dashboard/members").get_data(as_text=True)
    assert owner in page and employee in page and "Change role" not in page
    worker = signed_in(app, employee)
    assert 'href="/dashboard/members"' not in worker.get("/dashboard/payments").get_data(as_text=True)
    assert worker.get("/dashboard/members").status_code == 403


def two_factor_on(sessions, email: str) -> None:
    """Two-factor sign-in on for the account (as enrolment leaves it; its login goes on)."""
    with unit_of_work(sessions) as s:
        account = stores.account_by_email(s, email)
        account.totp_secret, account.totp_enabled_at = "JBSWY3DPEHPK3PXP", utcnow()


def test_an_owner_with_two_factor_requires_it_of_every_member_who_then_turns_it_on_to_open_the_store(app, sessions):
    owner, member, store_id = shop_with(sessions, "viewer")
    client = signed_in(app, owner)
    refused = client.post("/dashboard/members/two-factor", data={"csrf_token": client.token, "require_2fa": "on"})
    assert refused.status_code == 400 and "for your own account first" in refused.get_data(as_text=True)
    two_factor_on(sessions, owner)
    done = client.post("/dashboard/members/two-factor", data={"csrf_token": client.token, "require_2fa": "on"})
    assert done.status_code == 200 and "now requires two-factor" in done.get_data(as_text=True)
    assert client.get("/dashboard/payments").status_code == 200  # the owner has it: the store opens

    other = signed_in(app, member)  # its own store requires nothing: it opens
    assert other.get("/dashboard/payments").status_code == 200
    assert other.post(f"/dashboard/stores/{store_id}/switch", data={"csrf_token": other.token}).status_code == 303
    sent = other.get("/dashboard/payments")
    assert sent.status_code == 303 and sent.headers["Location"].endswith("/dashboard/settings/2fa")
    page = other.get("/dashboard/settings/2fa").get_data(as_text=True)
    assert 'id="store-requires-2fa"' in page and "requires two-factor sign-in of its members" in page
    assert other.get("/dashboard/stores").status_code == 200  # it may still go back to another store
    two_factor_on(sessions, member)
    assert other.get("/dashboard/payments").status_code == 200

    off = client.post("/dashboard/members/two-factor", data={"csrf_token": client.token})
    assert off.status_code == 200 and "no longer requires" in off.get_data(as_text=True)
