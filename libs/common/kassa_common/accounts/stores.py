"""Accounts, stores and members (DESIGN §14): a person signs in (an ``Account``), money
belongs to a store (a ``Merchant`` row: the table kept its name and its ids), and
``StoreMember`` says who may open which store with which role.

Roles, from most to least: ``owner`` (everything, wallets and members included), ``manager``
(products, webhooks, refunds, keys, settings; not wallets), ``employee`` (view and create
payments and products), ``viewer`` (read only). A store always keeps one owner: the last
one can be neither removed nor made anything less.

A store an account "can open" is activated and not banned; the dashboard opens the first
one the account owns unless told otherwise (for a migrated merchant, its own). A store may
require two-factor sign-in of every member: a member without it is sent to turn it on first.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.errors import DomainError, NotFound
from kassa_common.models import ROLES, Account, Merchant, StoreMember
from kassa_common.timefmt import utcnow

RANK = {role: len(ROLES) - i for i, role in enumerate(ROLES)}  # owner 4 … viewer 1
OWNER = "owner"


class StoreError(DomainError):
    code = "VALIDATION_ERROR"


def at_least(role: str | None, least: str) -> bool:
    """Whether ``role`` may do what needs ``least``."""
    return role is not None and RANK.get(role, 0) >= RANK[least]


def check_role(role: str) -> str:
    role = role.strip().lower()
    if role not in ROLES:
        raise StoreError(f"role must be one of {', '.join(ROLES)}; got {role[:40]!r}")
    return role


# ---- accounts ------------------------------------------------------------------------------


def find_account(session: Session, email: str) -> Account | None:
    return session.scalar(sa.select(Account).where(sa.func.lower(Account.email) == email.strip().lower()))


def account_by_email(session: Session, email: str) -> Account:
    account = find_account(session, email)
    if account is None:
        raise NotFound(f"no account with email {email.strip()[:320]}")
    return account


def new_account(session: Session, email: str, password_hash: str | None) -> Account:
    """An account for an email already checked to be valid and new."""
    account = Account(id=uuid.uuid4(), email=email, password_hash=password_hash)
    session.add(account)
    session.flush()
    return account


# ---- stores --------------------------------------------------------------------------------


def add_store(session: Session, owner: Account, name: str | None, *, activated: bool) -> Merchant:
    """A new store owned by ``owner`` (its notices go to the owner's address). The times are
    the clock's, not the transaction's: stores made in one transaction keep their order."""
    store = Merchant(id=uuid.uuid4(), email=owner.email, business_name=name, activated=activated, created_at=utcnow())
    session.add(store)
    session.flush()
    session.add(StoreMember(store_id=store.id, account_id=owner.id, role=OWNER, created_at=utcnow()))
    session.flush()
    return store


class StoreRole(NamedTuple):
    id: uuid.UUID
    name: str | None
    role: str
    openable: bool  # activated and not banned


def stores_of(session: Session, account_id: uuid.UUID, *, openable_only: bool = True) -> list[StoreRole]:
    """The account's stores with its role in each: the ones it owns first, each group in
    the order it joined them."""
    rows = session.execute(
        sa.select(Merchant.id, Merchant.business_name, StoreMember.role, Merchant.activated, Merchant.banned)
        .join(StoreMember, StoreMember.store_id == Merchant.id)
        .where(StoreMember.account_id == account_id)
        .order_by((StoreMember.role != OWNER), StoreMember.created_at, Merchant.created_at, Merchant.id)
    ).all()
    stores = [StoreRole(r.id, r.business_name, r.role, r.activated and not r.banned) for r in rows]
    return [s for s in stores if s.openable] if openable_only else stores


def first_owned_store(session: Session, account_id: uuid.UUID) -> Merchant | None:
    """The store the ``kassa merchant …`` and ``--email`` commands act on: the account's
    first owned store (a migrated merchant's own), whether or not it can be opened."""
    owned = [s for s in stores_of(session, account_id, openable_only=False) if s.role == OWNER]
    return session.get(Merchant, owned[0].id) if owned else None


def role_of(session: Session, account_id: uuid.UUID, store_id: uuid.UUID) -> str | None:
    return session.scalar(
        sa.select(StoreMember.role).where(StoreMember.account_id == account_id, StoreMember.store_id == store_id)
    )


# ---- members -------------------------------------------------------------------------------


class Member(NamedTuple):
    account_id: uuid.UUID
    email: str
    role: str
    two_factor: bool
    since: datetime


def members_of(session: Session, store_id: uuid.UUID) -> list[Member]:
    """The store's members: owners first, then by role, each group in the order it joined."""
    rows = session.execute(
        sa.select(Account.id, Account.email, StoreMember.role, Account.totp_enabled_at, StoreMember.created_at)
        .join(StoreMember, StoreMember.account_id == Account.id)
        .where(StoreMember.store_id == store_id)
    ).all()
    members = [Member(r.id, r.email, r.role, r.totp_enabled_at is not None, r.created_at) for r in rows]
    return sorted(members, key=lambda m: (-RANK[m.role], m.since, m.email))


def _store_for_update(session: Session, store_id: uuid.UUID) -> Merchant:
    """The store's row, locked: changes of its members are made one at a time, so two
    removals at once cannot both pass the last-owner check."""
    store = session.get(Merchant, store_id, with_for_update=True)
    if store is None:
        raise NotFound(f"no store with id {store_id}")
    return store


def _owners(session: Session, store_id: uuid.UUID) -> int:
    return int(
        session.scalar(
            sa.select(sa.func.count())
            .select_from(StoreMember)
            .where(StoreMember.store_id == store_id, StoreMember.role == OWNER)
        )
        or 0
    )


def set_member(
    session: Session, store_id: uuid.UUID, account: Account, role: str, *, actor: audit.Actor
) -> StoreMember:
    """Make ``account`` a member of the store with ``role`` (a member already: its role
    changes). The last owner cannot be made anything less. Audited as ``actor``'s."""
    role = check_role(role)
    _store_for_update(session, store_id)
    member = session.get(StoreMember, (store_id, account.id))
    if member is None:
        member = StoreMember(store_id=store_id, account_id=account.id, role=role, created_at=utcnow())
        session.add(member)
        audit.record(session, store_id, actor, "member.added", "account", account.id, f"{account.email} as {role}")
    elif member.role == OWNER and role != OWNER and _owners(session, store_id) <= 1:
        raise StoreError(f"{account.email} is the store's last owner: make another member owner first")
    elif member.role != role:
        detail = f"{account.email}: {member.role} to {role}"
        member.role = role
        audit.record(session, store_id, actor, "member.role_changed", "account", account.id, detail)
    session.flush()
    return member


def require_two_factor(session: Session, store_id: uuid.UUID, by: Account, on: bool, *, actor: audit.Actor) -> None:
    """Require two-factor sign-in of every member of the store, or stop requiring it. Only an
    owner who has it on may require it (nobody locks the store while unable to open it)."""
    store = _store_for_update(session, store_id)
    if on and by.totp_enabled_at is None:
        raise StoreError("turn two-factor sign-in on for your own account first: the store would not open for you")
    if store.require_2fa != on:
        action = "store.two_factor_required" if on else "store.two_factor_not_required"
        audit.record(session, store_id, actor, action, "store", store_id)
    store.require_2fa = on


def remove_member(session: Session, store_id: uuid.UUID, account: Account, *, actor: audit.Actor) -> str:
    """Take ``account`` out of the store; the role it had. The last owner stays."""
    _store_for_update(session, store_id)
    member = session.get(StoreMember, (store_id, account.id))
    if member is None:
        raise NotFound(f"{account.email} is not a member of store {store_id}")
    if member.role == OWNER and _owners(session, store_id) <= 1:
        raise StoreError(f"{account.email} is the store's last owner and cannot be removed")
    role = member.role
    session.delete(member)
    session.flush()
    audit.record(session, store_id, actor, "member.removed", "account", account.id, f"{account.email}, was {role}")
    return role
