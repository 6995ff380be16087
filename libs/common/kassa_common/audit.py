"""The audit log of a store (DESIGN §14): who changed what, which object, from where, when.

``record`` adds one row to the caller's session, so it is written in the change's own
transaction: a change rolled back leaves no row, and a row always means the change happened.
The domain operations that change money or access call it (wallets, API keys, members and
the store's two-factor rule, webhooks, products, refunds, payment cancels); the web layer
says who asked with an ``Actor`` built per request (``kassa_api.actors``), the operator's
commands with ``OPERATOR``, the background jobs with ``SYSTEM``.

Read by the dashboard's audit page (``page``) and its CSV export (``csv_chunks``); rows
older than ``AUDIT_LOG_DAYS`` are deleted by ``kassa_common.retention``.
"""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.models import AuditEntry, StoreMember
from kassa_common.paging import page_of

# Every action recorded, grouped by what it touches (the dashboard's filter offers them).
ACTIONS = (
    "wallet.change_requested",
    "wallet.changed",
    "wallet.change_canceled",
    "wallet.change_applied",
    "api_key.created",
    "api_key.revoked",
    "member.invited",
    "member.invitation_accepted",
    "member.invitation_revoked",
    "member.added",
    "member.role_changed",
    "member.removed",
    "store.two_factor_required",
    "store.two_factor_not_required",
    "webhook.created",
    "webhook.updated",
    "webhook.secret_rotated",
    "webhook.deleted",
    "product.created",
    "product.updated",
    "product.deleted",
    "refund.created",
    "refund.canceled",
    "refund.completed_with_hash",
    "payment.canceled",
    "account.password_changed",
    "account.password_reset",
    "account.two_factor_enabled",
    "account.two_factor_disabled",
)
KINDS = ("account", "api_key", "operator", "system", "link")


@dataclass(frozen=True)
class Actor:
    """Who made a change: ``kind`` (``KINDS``), the account's or the key's ``id`` and a
    ``label`` a reader knows it by (the email, the key's prefix), and, for a request, the
    client address (as the web computes it, behind trusted proxies) and its user agent."""

    kind: str
    id: uuid.UUID | None = None
    label: str | None = None
    ip: str | None = None
    user_agent: str | None = None


OPERATOR = Actor("operator", label="kassa command line")
SYSTEM = Actor("system", label="Kassa")


def record(
    session: Session,
    store_id: uuid.UUID,
    actor: Actor,
    action: str,
    object_type: str,
    object_id: object = None,
    detail: str | None = None,
) -> None:
    """Add the audit row of ``action`` on the object to the caller's transaction."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    session.add(
        AuditEntry(
            id=uuid.uuid4(),
            store_id=store_id,
            actor_kind=actor.kind,
            actor_id=actor.id,
            actor_label=(actor.label or "")[:320] or None,
            action=action,
            object_type=object_type,
            object_id=None if object_id is None else str(object_id)[:100],
            detail=(detail or "")[:500] or None,
            ip=(actor.ip or "")[:64] or None,
            user_agent=(actor.user_agent or "")[:300] or None,
        )
    )


def record_for_account(
    session: Session, account_id: uuid.UUID, actor: Actor, action: str, detail: str | None = None
) -> None:
    """A change of an account's own sign-in (its password, its two-factor), recorded in every
    store it is a member of: each store's owners see who may now open it, and how."""
    for store_id in session.scalars(sa.select(StoreMember.store_id).where(StoreMember.account_id == account_id)):
        record(session, store_id, actor, action, "account", account_id, detail)


# ---- reads ---------------------------------------------------------------------------------


def _conds(store_id: uuid.UUID, action: str | None) -> list:
    conds = [AuditEntry.store_id == store_id]
    if action:
        conds.append(AuditEntry.action == action)
    return conds


def page(
    session: Session, store_id: uuid.UUID, page_no: int, page_size: int, action: str | None = None
) -> tuple[list[AuditEntry], int]:
    """A page of the store's audit rows, newest first, and how many there are."""
    return page_of(session, AuditEntry, _conds(store_id, action), page_no, page_size)


COLUMNS = (
    "created_at",
    "action",
    "object_type",
    "object_id",
    "actor_kind",
    "actor_id",
    "actor",
    "ip",
    "user_agent",
    "detail",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet runs as a formula (CSV injection)


def _cell(value: object) -> str:
    text = "" if value is None else value.isoformat() if hasattr(value, "isoformat") else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_chunks(session: Session, store_id: uuid.UUID, action: str | None = None, batch: int = 500) -> Iterator[str]:
    """The store's audit rows as CSV text (the header first), newest first, a chunk per batch."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    query = (
        sa.select(AuditEntry)
        .where(*_conds(store_id, action))
        .order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc())
        .execution_options(yield_per=batch)
    )
    for rows in session.scalars(query).partitions():
        for e in rows:
            cells = (e.created_at, e.action, e.object_type, e.object_id, e.actor_kind, e.actor_id, e.actor_label, e.ip)
            writer.writerow([_cell(c) for c in (*cells, e.user_agent, e.detail)])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if buffer.getvalue():
        yield buffer.getvalue()
