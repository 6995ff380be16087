"""The audit log (DESIGN §14): one row per change of money or access in a store, written in
the change's own transaction (``kassa_common.audit.record``)."""

from __future__ import annotations

import uuid
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created, uuid_pk


class AuditEntry(Base):
    """Who (an account, an API key, the operator's command line, the system, the holder of an
    emailed link), what (an action such as ``api_key.created``), which object (type and id),
    from where (the client address and user agent, when a request made it), when."""

    __tablename__ = "audit_log"
    id: Mapped[uuid.UUID] = uuid_pk()
    store_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    actor_kind: Mapped[str] = mapped_column(
        sa.String(16), nullable=False
    )  # account | api_key | operator | system | link
    actor_id: Mapped[uuid.UUID | None] = mapped_column(sa.Uuid)  # the account's or the key's id
    actor_label: Mapped[str | None] = mapped_column(sa.String(320))  # the account's email, the key's prefix
    action: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    object_type: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    object_id: Mapped[str | None] = mapped_column(sa.String(100))
    detail: Mapped[str | None] = mapped_column(sa.String(500))
    ip: Mapped[str | None] = mapped_column(sa.String(64))
    user_agent: Mapped[str | None] = mapped_column(sa.String(300))
    created_at: Mapped[datetime] = created()
    __table_args__ = (
        sa.Index("audit_log_store", "store_id", sa.text("created_at DESC")),
        sa.Index("audit_log_created", "created_at"),
    )
