"""Migrations that move data: a database at the previous head, upgraded to the current one."""

from __future__ import annotations

import hashlib
import os
import secrets
import uuid
from datetime import UTC, datetime

import sqlalchemy as sa

from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.db import sqlalchemy_url
from kassa_common.migrate import upgrade
from kassa_common.payments.addresses import sequence_name
from tests.conftest import ADMIN_URL
from tests.support.keys import encoded, fresh_key


def legacy_sequence(chain: str, xpub: str) -> str:
    """How 0003 named a key's index sequence: after the text of the key."""
    return "kassa_idx_" + hashlib.sha256(f"{chain}:{xpub}".encode()).hexdigest()[:32]


def test_0005_continues_every_keys_index_sequence_whatever_encoding_it_was_entered_in():
    name = f"kassa_test_mig{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{secrets.token_hex(4)}"
    url = ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    upgrade(url, "0003")
    engine = sa.create_engine(sqlalchemy_url(url))
    key = fresh_key("xpub")
    as_xpub, as_zpub = key, encoded(key, "zpub")  # one key, entered by two merchants in two encodings
    try:
        with engine.begin() as conn:
            for xpub, next_index in ((as_xpub, 7), (as_zpub, 3), (TEST_XPUBS["evm"], 11)):
                chain = "evm" if xpub == TEST_XPUBS["evm"] else "bitcoin"
                if chain == "bitcoin":
                    mid = uuid.uuid4()
                    conn.execute(
                        sa.text("INSERT INTO merchants (id, email) VALUES (:id, :e)"),
                        {"id": mid, "e": f"{mid}@example.com"},
                    )
                    conn.execute(
                        sa.text(
                            "INSERT INTO wallets (id, merchant_id, mode, chain, xpub) "
                            "VALUES (:id, :m, 'live', 'bitcoin', :x)"
                        ),
                        {"id": uuid.uuid4(), "m": mid, "x": xpub},
                    )
                seq = legacy_sequence(chain, xpub)
                conn.execute(sa.text(f"CREATE SEQUENCE {seq} MINVALUE 0 START WITH 0"))
                conn.execute(sa.text("SELECT setval(:s, :v, true)"), {"s": seq, "v": next_index - 1})
        upgrade(url)
        with engine.begin() as conn:

            def next_index(chain, xpub):
                return conn.scalar(sa.text(f"SELECT nextval('{sequence_name(chain, xpub)}')"))

            assert next_index("bitcoin", as_zpub) == 7  # the furthest of the key's two sequences
            assert next_index("bitcoin", as_xpub) == 8  # the same sequence
            assert next_index("evm", TEST_XPUBS["evm"]) == 11
            index = conn.scalar(sa.text("SELECT indexdef FROM pg_indexes WHERE indexname = 'payments_address_key'"))
            assert "UNIQUE" in index and "lower((address)::text)" in index
    finally:
        engine.dispose()
        admin = sa.create_engine(sqlalchemy_url(ADMIN_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_0018_starts_each_network_settled_where_its_watcher_had_scanned_and_goes_back_down():
    from alembic import command

    from kassa_common.migrate import alembic_config

    name = f"kassa_test_mig{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{secrets.token_hex(4)}"
    url = ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    upgrade(url, "0016")
    engine = sa.create_engine(sqlalchemy_url(url))
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO chain_cursors (network, block_number, confirmed_through, scanned_at) "
                    "VALUES ('BASE', 10, 8, '2026-01-01T00:00:00Z'), ('BITCOIN', 5, 4, NULL)"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO chain_mempool_transfers (network, tx_hash, log_index, transfer) "
                    "VALUES ('BITCOIN', 'ab', 0, '{}')"
                )
            )
        upgrade(url)
        with engine.begin() as conn:
            settled = conn.execute(sa.text("SELECT network, settled_at FROM settled_watermarks")).all()
            assert settled == [("BASE", datetime(2026, 1, 1, tzinfo=UTC))]
            assert conn.scalar(sa.text("SELECT sighting FROM chain_mempool_transfers")) == ""
        command.downgrade(alembic_config(url), "0016")
        upgrade(url)
    finally:
        engine.dispose()
        admin = sa.create_engine(sqlalchemy_url(ADMIN_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
