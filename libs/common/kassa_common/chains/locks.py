"""Exactly one active watcher per network: a PostgreSQL session advisory lock, held on a
dedicated connection. A watcher that cannot take it stands by and tries again; if the
holder dies its connection closes and the lock is free for the next one."""

from __future__ import annotations

import hashlib
import logging

import psycopg2
import psycopg2.extensions

from kassa_common.db import libpq_url

log = logging.getLogger("kassa.chain_watcher")


def lock_key(network: str, purpose: str = "chain-watcher") -> int:
    """The advisory lock key of ``purpose`` (one holder per network) on ``network``."""
    digest = hashlib.sha256(f"kassa.{purpose}:{network.upper()}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _dsn(database_url: str) -> str:
    return libpq_url(database_url)  # several hosts too: libpq picks the one asked for


class NetworkLock:
    def __init__(self, database_url: str, network: str) -> None:
        self.dsn, self.network, self.key = _dsn(database_url), network, lock_key(network)
        self._conn: psycopg2.extensions.connection | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    def try_acquire(self) -> bool:
        if self._conn is None:
            self._conn = psycopg2.connect(
                self.dsn,
                application_name=f"kassa-chain-watcher-{self.network.lower()}",
                connect_timeout=5,
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=3,
            )
            self._conn.autocommit = True
        try:
            with self._conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (self.key,))
                row = cur.fetchone()
                assert row is not None  # a SELECT of one value
                got = bool(row[0])
        except psycopg2.Error:
            self.release()
            raise
        if not got:
            self.release()
        return got

    def still_held(self) -> bool:
        """Check the lock's connection is alive (a lost connection means a lost lock)."""
        if self._conn is None:
            return False
        try:
            with self._conn.cursor() as cur:
                cur.execute("SELECT 1")
            return True
        except psycopg2.Error:
            log.error("%s: lost the watcher lock's database connection", self.network)
            self.release()
            return False

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()  # closing the session releases the advisory lock
            except psycopg2.Error:
                pass
