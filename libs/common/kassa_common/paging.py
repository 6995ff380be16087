"""Pages of a merchant's objects: newest first, with the ``meta`` every list answers."""

from __future__ import annotations

import math

import sqlalchemy as sa
from sqlalchemy.orm import Session


def newest_first(model) -> tuple:
    """The order of every list: newest first, ties broken by id so pages never overlap."""
    return model.created_at.desc(), model.id.desc()


def page_of(session: Session, model, conds: list, page: int, page_size: int) -> tuple[list, int]:
    """One page of ``model`` rows matching ``conds``, newest first, and the total count."""
    total = session.scalar(sa.select(sa.func.count()).select_from(model).where(*conds)) or 0
    rows = session.scalars(
        sa.select(model).where(*conds).order_by(*newest_first(model)).limit(page_size).offset((page - 1) * page_size)
    ).all()
    return list(rows), total


def page_meta(page: int, page_size: int, total: int) -> dict[str, int]:
    return {"page": page, "pageSize": page_size, "total": total, "pages": math.ceil(total / page_size) if total else 0}
