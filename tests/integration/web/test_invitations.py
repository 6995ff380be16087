"""Invitations to a store (DESIGN §14): an owner invites an email with a role; the link is
emailed (and shown to the owner when the server sends no email); nothing happens until the
invitee accepts it by signing in, or up, with that email; it works once, for 7 days, and an
owner may revoke it first. Inviting, accepting and revoking are in the audit log."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta

import sqlalchemy as sa

from kassa_common.accounts import merchants, stores
from kassa_common.db import unit_of_work
from kassa_common.models import AuditEntry, Notification, StoreInvitation
from kassa_common.timefmt import utcnow
from tests.support.dashboard import PASSWORD, csrf_of, log_in, merchant_with_password

NEW_PASSWORD = "joining-pass-1"


def owner_of_a_store(app, sessions):
    owner = merchant_with_password(sessions)
    client = app.test_client()
    log_in(client, owner)
    client.token = csrf_of(client.get("/dashboard/members"))
    with sessions() as s:
        client.store_id = merchants.merchant_by_email(s, owner).id
    return client


def invite(owner, email: str, role: str) -> str:
    r = owner.post("/dashboard/members/invite", data={"csrf_token": owner.token, "email": email, "role": role})
    assert r.status_code == 200, r.get_data(as_text=True)
    match = re.search(r'<code id="invite-link">([^<]+)</code>', r.get_data(as_text=True))
    assert match, "without SMTP the page shows the link"
    return match.group(1).split("/dashboard", 1)[1]


def actions(sessions, store_id) -> list[str]:
    with sessions() as s:
        return list(
            s.scalars(
                sa.select(AuditEntry.action)
                .where(AuditEntry.store_id == store_id)
                .order_by(AuditEntry.created_at, AuditEntry.id)
            )
        )


def test_a_new_person_signs_up_through_the_link_and_joins_with_the_role(app, sessions):
    owner = owner_of_a_store(app, sessions)
    email = f"new-{secrets.token_hex(4)}@example.com"
    path = invite(owner, email, "employee")
    with sessions() as s:
        mail = s.scalars(sa.select(Notification).where(Notification.recipient == email)).one()
        assert path in mail.body_text and "as employee" in mail.body_text
    listed = owner.get("/dashboard/members").get_data(as_text=True)
    assert 'id="invited"' in listed and email in listed

    guest = app.test_client()
    page = guest.get(f"/dashboard{path}")
    assert page.status_code == 200 and "Sign up and join" in page.get_data(as_text=True)
    with sessions() as s:
        assert stores.find_account(s, email) is None  # opening the link changes nothing
    token = csrf_of(page)
    short = guest.post(f"/dashboard{path}", data={"csrf_token": token, "password": "x", "confirm_password": "x"})
    assert short.status_code == 400
    with sessions() as s:
        assert stores.find_account(s, email) is None
    form = {"csrf_token": token, "password": NEW_PASSWORD, "confirm_password": NEW_PASSWORD}
    joined = guest.post(f"/dashboard{path}", data=form)
    assert joined.status_code == 303 and joined.headers["Location"].endswith("/dashboard/overview")
    with sessions() as s:
        account = stores.account_by_email(s, email)
        assert stores.role_of(s, account.id, owner.store_id) == "employee"
    assert guest.get("/dashboard/overview").status_code == 200  # signed in, in the store
    assert guest.get("/dashboard/keys").status_code == 403  # as an employee
    assert guest.get(f"/dashboard{path}").status_code == 404  # the link works once
    logged = actions(sessions, owner.store_id)
    assert logged[-3] == "member.invited"
    assert sorted(logged[-2:]) == ["member.added", "member.invitation_accepted"]  # one transaction


def test_an_existing_account_signs_in_to_accept_and_a_wrong_password_changes_nothing(app, sessions):
    owner = owner_of_a_store(app, sessions)
    other = merchant_with_password(sessions)  # an account (with a store of its own) already
    path = invite(owner, other.upper(), "manager")  # the address as typed: matched without case
    guest = app.test_client()
    page = guest.get(f"/dashboard{path}")
    assert "Sign in and join" in page.get_data(as_text=True)
    token = csrf_of(page)
    wrong = guest.post(f"/dashboard{path}", data={"csrf_token": token, "password": "not-the-password"})
    assert wrong.status_code == 401
    with sessions() as s:
        assert stores.role_of(s, stores.account_by_email(s, other).id, owner.store_id) is None
    right = guest.post(f"/dashboard{path}", data={"csrf_token": token, "password": PASSWORD})
    assert right.status_code == 303
    with sessions() as s:
        assert stores.role_of(s, stores.account_by_email(s, other).id, owner.store_id) == "manager"
    overview = guest.get("/dashboard/overview").get_data(as_text=True)
    assert "Dash Ltd" in overview  # the invited store is the one open


def test_a_revoked_or_expired_invitation_no_longer_works_and_members_are_not_invited(app, sessions):
    owner = owner_of_a_store(app, sessions)
    revoked, expired = (f"{w}-{secrets.token_hex(4)}@example.com" for w in ("revoked", "expired"))
    path = invite(owner, revoked, "viewer")
    with sessions() as s:
        invitation = s.scalars(sa.select(StoreInvitation).where(StoreInvitation.email == revoked)).one()
    done = owner.post(f"/dashboard/members/invitations/{invitation.id}/revoke", data={"csrf_token": owner.token})
    assert done.status_code == 303
    assert app.test_client().get(f"/dashboard{path}").status_code == 404
    again = owner.post(f"/dashboard/members/invitations/{invitation.id}/revoke", data={"csrf_token": owner.token})
    assert again.status_code == 404

    late = invite(owner, expired, "viewer")
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(StoreInvitation)
            .where(StoreInvitation.email == expired)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    guest = app.test_client()
    assert guest.get(f"/dashboard{late}").status_code == 404
    member = owner.post(
        "/dashboard/members/invite",
        data={"csrf_token": owner.token, "email": merchants_email(sessions, owner.store_id), "role": "viewer"},
    )
    assert member.status_code == 400 and "already a member" in member.get_data(as_text=True)
    assert actions(sessions, owner.store_id).count("member.invitation_revoked") == 1


def merchants_email(sessions, store_id) -> str:
    with sessions() as s:
        return stores.members_of(s, store_id)[0].email
