"""Products: what a merchant sells at a set price, each sale a payment."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created, uuid_pk


class Product(Base):
    __tablename__ = "products"
    id: Mapped[uuid.UUID] = uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    name: Mapped[str] = mapped_column(sa.String(200), nullable=False)
    description: Mapped[str | None] = mapped_column(sa.Text)
    price: Mapped[Decimal] = mapped_column(sa.Numeric(36, 18), nullable=False)
    currency_type: Mapped[str] = mapped_column(sa.String(6), nullable=False)  # FIAT | CRYPTO
    currency: Mapped[str] = mapped_column(sa.String(3), nullable=False, server_default="USD")  # of a FIAT price
    token: Mapped[str | None] = mapped_column(sa.String(16))
    network: Mapped[str | None] = mapped_column(sa.String(32))
    active: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.true())
    deleted_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    __table_args__ = (sa.Index("products_merchant_list", "merchant_id", "test_mode", sa.text("created_at DESC")),)
