"""Payments by address through an index; one address-index sequence per key, whatever its encoding.

- ``payments_address_key`` becomes unique on ``lower(address)``: addresses are
  case-insensitive (EIP-55 mixed case, bech32 in either case), and the settler looks a
  transfer's recipient up that way; on the plain column that lookup scanned the table.
- Address indexes came from one sequence per extended-key *string*, so the same key
  entered again as zpub instead of xpub started again at index 0 (addresses handed out
  twice). Sequences are now named after the key material (chain code and public key);
  each existing sequence of a wallet's key, or of the published test keys, carries its
  position over to the new name (the highest, when one key was entered in two encodings).

This file holds its own copy of the naming rules and the test keys: a migration must keep
doing what it did when the code it ran with changes.

Revision ID: 0005
Revises: 0008
"""
import hashlib

import base58
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0008"
branch_labels = None
depends_on = None

TEST_KEYS = (
    ("evm", "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt"),
    ("bitcoin", "vpub5Y6cjg78GGuNLsaPhmYsiw4gYX3HoQiRBiSwDaBXKUafCt9bNwWQiitDk5VZ5BVxYnQdwoTyXSs2JHRPAgjAvtbBrf8ZhDYe2jWAqvZVnsc"),
)


def _by_string(chain: str, xpub: str) -> str:
    return "kassa_idx_" + hashlib.sha256(f"{chain}:{xpub}".encode()).hexdigest()[:32]


def _by_key(chain: str, xpub: str) -> str | None:
    try:
        raw = base58.b58decode_check(xpub)
    except ValueError:
        return None
    if len(raw) != 78:
        return None
    return "kassa_idx_" + hashlib.sha256(chain.encode() + b":" + raw[13:78]).hexdigest()[:32]


def _next_value(conn, name: str) -> int | None:
    """The index ``nextval`` would hand out next, or None if the sequence does not exist."""
    if conn.scalar(sa.text("SELECT to_regclass(:n)"), {"n": name}) is None:
        return None
    last, called = conn.execute(sa.text(f"SELECT last_value, is_called FROM {name}")).one()
    return last + 1 if called else last


def _carry_over(conn, old_name, new_name) -> None:
    """Every key's new sequence continues from the furthest of its old ones."""
    keys = {tuple(row) for row in conn.execute(sa.text("SELECT DISTINCT chain, xpub FROM wallets WHERE xpub IS NOT NULL"))} | set(TEST_KEYS)
    sources: dict[str, set[str]] = {}
    for chain, xpub in keys:
        target, source = new_name(chain, xpub), old_name(chain, xpub)
        if target and source:
            sources.setdefault(target, set()).add(source)
    for target, names in sorted(sources.items()):
        positions = [p for p in (_next_value(conn, n) for n in sorted(names | {target})) if p is not None]
        if not positions:
            continue
        conn.execute(sa.text(f"CREATE SEQUENCE IF NOT EXISTS {target} MINVALUE 0 START WITH 0"))
        if max(positions) > 0:
            conn.execute(sa.text("SELECT setval(:n, :v, true)"), {"n": target, "v": max(positions) - 1})


def upgrade() -> None:
    op.drop_index("payments_address_key", table_name="payments")
    op.create_index("payments_address_key", "payments", [sa.literal_column("lower(address)")], unique=True)
    _carry_over(op.get_bind(), _by_string, _by_key)


def downgrade() -> None:
    conn = op.get_bind()
    _carry_over(conn, _by_key, _by_string)
    op.drop_index("payments_address_key", table_name="payments")
    op.create_index("payments_address_key", "payments", ["address"], unique=True)
