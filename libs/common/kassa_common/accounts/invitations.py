"""Invitations to a store (DESIGN §14): an owner invites an email with a role; the invitee
gets a link by email and nothing happens until they accept it, by signing in with that
email's account or by signing up with it there (their consent). An invitation is good for
``DAYS`` days, once, and an owner may revoke it first. Only the link's SHA-256 is kept.

Inviting, accepting and revoking are recorded in the store's audit log; an accepted
invitation adds the member through ``stores.set_member``, which records that too.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.accounts import notices, stores
from kassa_common.emails import InvalidEmail, valid_email
from kassa_common.models import Account, Merchant, StoreInvitation
from kassa_common.timefmt import utcnow

DAYS = 7
EVENT_TYPE, KIND = "store.invitation", "invitation"  # an internal row for the email (never published)


@dataclass(frozen=True)
class Invited:
    invitation: StoreInvitation
    link: str  # shown to the owner too when the server sends no email


def _hash(token: str) -> str:
    return hashlib.sha256(token[:100].encode()).hexdigest()


def invite(
    session: Session, store: Merchant, email: str, role: str, *, by: Account, actor: audit.Actor, dashboard_url: str
) -> Invited:
    """Invite ``email`` to ``store`` as ``role`` and email the link (a pending invitation of
    the same email is replaced). StoreError when the address is not one, or is a member already."""
    role = stores.check_role(role)
    try:
        email = valid_email(email)
    except InvalidEmail:
        raise stores.StoreError(f"not an email address: {email[:100]}") from None
    existing = stores.find_account(session, email)
    if existing is not None and stores.role_of(session, existing.id, store.id) is not None:
        raise stores.StoreError(f"{email} is already a member of this store")
    now = utcnow()
    session.execute(
        sa.update(StoreInvitation)
        .where(*_open(now), StoreInvitation.store_id == store.id, sa.func.lower(StoreInvitation.email) == email.lower())
        .values(revoked_at=now)
    )
    token = secrets.token_urlsafe(32)
    invitation = StoreInvitation(
        id=uuid.uuid4(),
        store_id=store.id,
        email=email,
        role=role,
        token_hash=_hash(token),
        invited_by=by.id,
        created_at=now,
        expires_at=now + timedelta(days=DAYS),
    )
    session.add(invitation)
    session.flush()
    link = f"{dashboard_url}/invitations/{token}"
    name = store.business_name or "a store"
    text = (
        f"{by.email} invites you to {name} on Kassa as {role}.\n\n"
        f"To accept, open this link and sign in (or sign up) with this email address, {email}:\n{link}\n\n"
        f"The link works once, until {invitation.expires_at:%Y-%m-%d %H:%M} UTC. Nothing happens unless you accept.\n"
    )
    notices.email_merchant(
        session,
        store.id,
        test_mode=False,
        event_type=EVENT_TYPE,
        kind=KIND,
        subject=f"You are invited to {name} on Kassa",
        text=text,
        payload={"invitation": str(invitation.id)},
        recipient=email,
    )
    audit.record(session, store.id, actor, "member.invited", "invitation", invitation.id, f"{email} as {role}")
    return Invited(invitation, link)


def _open(now):
    return (
        StoreInvitation.accepted_at.is_(None),
        StoreInvitation.revoked_at.is_(None),
        StoreInvitation.expires_at > now,
    )


def pending(session: Session, store_id: uuid.UUID) -> list[StoreInvitation]:
    """The store's invitations still open, newest first."""
    return list(
        session.scalars(
            sa.select(StoreInvitation)
            .where(StoreInvitation.store_id == store_id, *_open(utcnow()))
            .order_by(StoreInvitation.created_at.desc())
        )
    )


def by_token(session: Session, token: str, *, lock: bool = False) -> StoreInvitation | None:
    """The open invitation of this link, or None (unknown, expired, revoked or accepted)."""
    query = sa.select(StoreInvitation).where(StoreInvitation.token_hash == _hash(token), *_open(utcnow()))
    return session.scalars(query.with_for_update() if lock else query).first()


def accept(session: Session, invitation: StoreInvitation, account: Account, *, actor: audit.Actor) -> None:
    """``account`` (signed in or up with the invited email: the caller checked) joins the store."""
    if account.email.lower() != invitation.email.lower():
        raise stores.StoreError(f"this invitation is for {invitation.email}")
    invitation.accepted_at = utcnow()
    if stores.role_of(session, account.id, invitation.store_id) is None:
        stores.set_member(session, invitation.store_id, account, invitation.role, actor=actor)
    detail = f"{invitation.email} as {invitation.role}"
    audit.record(session, invitation.store_id, actor, "member.invitation_accepted", "invitation", invitation.id, detail)


def revoke(session: Session, store_id: uuid.UUID, invitation_id: uuid.UUID, *, actor: audit.Actor) -> bool:
    """An owner takes an open invitation back: its link no longer works. False when there was none."""
    invitation = session.scalars(
        sa.select(StoreInvitation)
        .where(StoreInvitation.id == invitation_id, StoreInvitation.store_id == store_id, *_open(utcnow()))
        .with_for_update()
    ).first()
    if invitation is None:
        return False
    invitation.revoked_at = utcnow()
    detail = f"{invitation.email} as {invitation.role}"
    audit.record(session, store_id, actor, "member.invitation_revoked", "invitation", invitation.id, detail)
    return True
