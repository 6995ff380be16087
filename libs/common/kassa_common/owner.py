"""Whose objects a request acts on: one merchant, in one mode.

Payments, products and webhook endpoints all belong to a merchant *and* a mode (test or
live, as in Stripe); every lookup is scoped by both. The web layer builds an ``Owner``
in one place (``kassa_api.deps.make_owner``) for the API key, the dashboard session or
the public product page. Below it, the guards every resource shares: the ownership check
(``owned``), soft delete and owned lists.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol, TypeVar

from sqlalchemy.orm import Session

from kassa_common.errors import NotFound
from kassa_common.ids import parse_uuid
from kassa_common.paging import page_of
from kassa_common.timefmt import utcnow


@dataclass(frozen=True)
class Owner:
    merchant_id: uuid.UUID
    test_mode: bool
    lifetime_minutes: int  # how long this merchant's new payments stay open

    @property
    def mode(self) -> str:
        return "test" if self.test_mode else "live"


class _Owned(Protocol):
    """A row a merchant owns in one mode."""

    @property
    def merchant_id(self) -> uuid.UUID: ...
    @property
    def test_mode(self) -> bool: ...


T = TypeVar("T", bound=_Owned)


def owned(session: Session, model: type[T], ref: str, owner: Owner, *, what: str, lock: bool = False) -> T:
    """The merchant's live (not deleted) object of this mode, or NotFound: never confirm others exist."""
    oid = parse_uuid(ref)
    obj = session.get(model, oid, with_for_update=lock) if oid else None
    if (
        obj is None
        or obj.merchant_id != owner.merchant_id
        or obj.test_mode != owner.test_mode
        or getattr(obj, "deleted_at", None) is not None
    ):
        raise NotFound(f"{what} not found")
    return obj


def soft_delete(session: Session, model, ref: str, owner: Owner, *, what: str) -> None:
    """Hide the object from get and list (rows that reference it keep their link)."""
    obj = owned(session, model, ref, owner, what=what, lock=True)
    obj.deleted_at = obj.updated_at = utcnow()
    obj.active = False


def list_owned(session: Session, model, owner: Owner, page: int, page_size: int):
    """A page of the merchant's live (not deleted) objects of this mode, newest first."""
    conds = [model.merchant_id == owner.merchant_id, model.test_mode == owner.test_mode, model.deleted_at.is_(None)]
    return page_of(session, model, conds, page, page_size)
