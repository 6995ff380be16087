"""The declarative base every table derives from, and the column helpers they share.

The schema itself is owned by the Alembic migrations (``kassa_common/migrations``): these
classes describe it for the ORM, and ``Base.metadata`` is what Alembic compares it with.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NOW = sa.text("now()")


class Base(DeclarativeBase):
    pass


def uuid_pk() -> Mapped[uuid.UUID]:
    """A random UUID primary key."""
    return mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)


def created() -> Mapped[datetime]:
    """A timestamp the database sets on insert (``created_at``, and ``updated_at`` to start)."""
    return mapped_column(sa.DateTime(timezone=True), server_default=NOW, nullable=False)
