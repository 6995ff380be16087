"""What the chain watchers keep per network: the cursor, the reports published, the settled
watermark, the recent blocks and the mempool transfers seen."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created


class ChainCursor(Base):
    """How far the chain watcher has followed one network.

    ``block_number``/``block_hash``: the last block scanned (the head of ``chain_blocks``);
    ``confirmed_through``: every transfer in blocks up to this height was published confirmed.
    """

    __tablename__ = "chain_cursors"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    block_number: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    block_hash: Mapped[str | None] = mapped_column(sa.String(100))
    confirmed_through: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    # When the watcher last read the tip and had every block up to it scanned and reported:
    # a payment expires only once this passed its ``expires_at``.
    scanned_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    updated_at: Mapped[datetime] = created()


class ChainReport(Base):
    """A transfer report a chain watcher published, recorded right after the broker confirmed
    it: the settler has applied it once its message id is among its processed messages.
    Rows go once a watermark found them applied (``payments.watermark``)."""

    __tablename__ = "chain_reports"
    seq: Mapped[int] = mapped_column(sa.BigInteger, sa.Identity(), primary_key=True)
    network: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    message_id: Mapped[str] = mapped_column(sa.String(100), nullable=False, unique=True)
    created_at: Mapped[datetime] = created()
    __table_args__ = (sa.Index("chain_reports_network", "network", "seq"),)


class SettledWatermark(Base):
    """How far the settler has applied what a network's watcher reported: ``settled_at`` is
    a time at which the watcher had read the tip with every block up to it reported, and every
    one of those reports is applied. A live payment expires only once this passed its
    ``expires_at`` (``payments.watermark``, ``payments.expire``)."""

    __tablename__ = "settled_watermarks"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    settled_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False)
    updated_at: Mapped[datetime] = created()


class ChainBlock(Base):
    """A recently scanned block: its hash and parent (reorg detection) and the transfers to
    watched addresses found in it (so an orphaned block's transfers can be reported)."""

    __tablename__ = "chain_blocks"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    number: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    hash: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    parent_hash: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    transfers: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, nullable=False, server_default="[]")


class ChainMempoolTransfer(Base):
    """A transfer the watcher saw unconfirmed (Bitcoin's mempool) and reported seen: kept
    until it is mined or gone, so that a restart still reports a dropped or replaced one
    as orphaned. ``misses``: consecutive looks at the mempool that did not find it."""

    __tablename__ = "chain_mempool_transfers"
    network: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tx_hash: Mapped[str] = mapped_column(sa.String(100), primary_key=True)
    log_index: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    transfer: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    misses: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    # this stay in the mempool: a transaction dropped and broadcast again is a new sighting,
    # whose reports the settler must not take for the earlier one's (``mempool.py``)
    sighting: Mapped[str] = mapped_column(sa.String(32), nullable=False, server_default="")
    seen_at: Mapped[datetime] = created()
