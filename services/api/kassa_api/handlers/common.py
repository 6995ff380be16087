"""Helpers shared by the CRUD handlers: ownership guard and pagination."""
from __future__ import annotations

import uuid
from typing import TypeVar

from sqlalchemy.orm import Session

from kassa_common.errors import NotFound
from kassa_common.ids import parse_uuid
from kassa_common.paging import page_meta, page_of  # noqa: F401  (the CRUD lists page like payments)
from kassa_common.timefmt import utcnow

T = TypeVar("T")


def owned(session: Session, model: type[T], ref: str, merchant_id: uuid.UUID, test_mode: bool,
          *, what: str, lock: bool = False) -> T:
    """The merchant's live (not deleted) object of this mode, or NotFound: never confirm others exist."""
    oid = parse_uuid(ref)
    obj = session.get(model, oid, with_for_update=lock) if oid else None
    if (obj is None or obj.merchant_id != merchant_id or obj.test_mode != test_mode
            or getattr(obj, "deleted_at", None) is not None):
        raise NotFound(f"{what} not found")
    return obj


def soft_delete(session: Session, model, ref: str, merchant_id: uuid.UUID, test_mode: bool, *, what: str) -> None:
    """Hide the object from get and list (rows that reference it keep their link)."""
    obj = owned(session, model, ref, merchant_id, test_mode, what=what, lock=True)
    obj.deleted_at = obj.updated_at = utcnow()
    obj.active = False


def list_owned(session: Session, model, merchant_id: uuid.UUID, test_mode: bool, page: int, page_size: int):
    """A page of the merchant's live (not deleted) objects of this mode, newest first."""
    conds = [model.merchant_id == merchant_id, model.test_mode == test_mode, model.deleted_at.is_(None)]
    return page_of(session, model, conds, page, page_size)
