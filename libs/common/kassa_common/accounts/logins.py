"""Dashboard logins kept on the server: in PostgreSQL, or in Redis when REDIS_URL is set.

The browser's cookie carries only a login's random id; the store keeps the id's SHA-256
with the account (the person signed in, DESIGN §14), the browser (user agent), the client address and when it was last
seen. Logging out revokes the login, a password change revokes every other login of the
account, and the settings page lists them with a revoke button: a cookie copied before
any of these opens nothing after it. A fresh id is made at each login (no fixation).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, cast

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from kassa_common.models import DashboardSession
from kassa_common.timefmt import utcnow

LIFETIME = timedelta(days=14)  # a login lasts at most this long, however active
TOUCH_EVERY = timedelta(seconds=60)  # "last seen" is written at most this often per login
_AGENT_MAX, _ADDRESS_MAX = 300, 64


@dataclass(frozen=True)
class Login:
    ref: str  # the stored hash: names the login on the settings page (it cannot be used as a cookie)
    account_id: uuid.UUID
    user_agent: str | None
    address: str | None
    created_at: datetime
    last_seen_at: datetime


def id_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


class LoginStore(Protocol):
    def create(self, account_id: uuid.UUID, user_agent: str | None, address: str | None) -> str: ...

    def get(self, token: str) -> Login | None: ...  # the live login of this cookie id (touched), or None

    def revoke(self, account_id: uuid.UUID, ref: str) -> bool: ...

    def revoke_all(self, account_id: uuid.UUID, *, keep: str | None = None) -> int: ...  # keep: a token

    def active(self, account_id: uuid.UUID) -> list[Login]: ...  # most recently seen first


def _clip(value: str | None, size: int) -> str | None:
    return value[:size] if value else None


class PostgresLogins:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, account_id: uuid.UUID, user_agent: str | None, address: str | None) -> str:
        token, now = new_token(), utcnow()
        with self.engine.begin() as conn:
            conn.execute(
                sa.insert(DashboardSession).values(
                    id_hash=id_hash(token),
                    account_id=account_id,
                    user_agent=_clip(user_agent, _AGENT_MAX),
                    address=_clip(address, _ADDRESS_MAX),
                    created_at=now,
                    last_seen_at=now,
                    expires_at=now + LIFETIME,
                )
            )
        return token

    def get(self, token: str) -> Login | None:
        t, now = cast(sa.Table, DashboardSession.__table__), utcnow()
        with self.engine.begin() as conn:
            row = (
                conn.execute(
                    sa.select(t).where(t.c.id_hash == id_hash(token), t.c.revoked_at.is_(None), t.c.expires_at > now)
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            if now - row["last_seen_at"] >= TOUCH_EVERY:
                conn.execute(sa.update(t).where(t.c.id_hash == row["id_hash"]).values(last_seen_at=now))
        return _login(dict(row))

    def revoke(self, account_id: uuid.UUID, ref: str) -> bool:
        t = cast(sa.Table, DashboardSession.__table__)
        with self.engine.begin() as conn:
            done = conn.execute(
                sa.update(t)
                .where(t.c.id_hash == ref, t.c.account_id == account_id, t.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
        return bool(done.rowcount)

    def revoke_all(self, account_id: uuid.UUID, *, keep: str | None = None) -> int:
        t = cast(sa.Table, DashboardSession.__table__)
        where = [t.c.account_id == account_id, t.c.revoked_at.is_(None)]
        if keep:
            where.append(t.c.id_hash != id_hash(keep))
        with self.engine.begin() as conn:
            return int(conn.execute(sa.update(t).where(*where).values(revoked_at=utcnow())).rowcount)

    def active(self, account_id: uuid.UUID) -> list[Login]:
        t = cast(sa.Table, DashboardSession.__table__)
        with self.engine.connect() as conn:
            rows = (
                conn.execute(
                    sa.select(t)
                    .where(t.c.account_id == account_id, t.c.revoked_at.is_(None), t.c.expires_at > utcnow())
                    .order_by(t.c.last_seen_at.desc())
                    .limit(100)
                )
                .mappings()
                .all()
            )
        return [_login(dict(r)) for r in rows]


class RedisLogins:
    """One hash per login (expiring with it) and one set of an account's login hashes."""

    def __init__(self, client: Any) -> None:  # client: redis.Redis
        self.client = client

    @staticmethod
    def _key(ref: str) -> str:
        return f"kassa:login:{ref}"

    @staticmethod
    def _set(account_id: uuid.UUID) -> str:
        return f"kassa:logins:{account_id}"

    def create(self, account_id: uuid.UUID, user_agent: str | None, address: str | None) -> str:
        token, now = new_token(), utcnow()
        ref = id_hash(token)
        record = {
            "account_id": str(account_id),
            "user_agent": _clip(user_agent, _AGENT_MAX) or "",
            "address": _clip(address, _ADDRESS_MAX) or "",
            "created_at": now.isoformat(),
            "last_seen_at": now.isoformat(),
        }
        seconds = int(LIFETIME.total_seconds())
        pipe = self.client.pipeline()
        pipe.set(self._key(ref), json.dumps(record), ex=seconds)
        pipe.sadd(self._set(account_id), ref)
        pipe.expire(self._set(account_id), seconds)
        pipe.execute()
        return token

    def _read(self, ref: str) -> dict[str, Any] | None:
        raw = self.client.get(self._key(ref))
        return json.loads(raw) if raw else None

    def get(self, token: str) -> Login | None:
        ref = id_hash(token)
        record = self._read(ref)
        if record is None:
            return None
        now = utcnow()
        if now - datetime.fromisoformat(record["last_seen_at"]) >= TOUCH_EVERY:
            record["last_seen_at"] = now.isoformat()
            self.client.set(self._key(ref), json.dumps(record), keepttl=True, xx=True)
        return _redis_login(ref, record)

    def revoke(self, account_id: uuid.UUID, ref: str) -> bool:
        record = self._read(ref)
        if record is None or _owner_id(record) != str(account_id):
            return False
        self.client.delete(self._key(ref))
        self.client.srem(self._set(account_id), ref)
        return True

    def revoke_all(self, account_id: uuid.UUID, *, keep: str | None = None) -> int:
        kept = id_hash(keep) if keep else None
        refs = [r.decode() if isinstance(r, bytes) else r for r in self.client.smembers(self._set(account_id))]
        gone = [r for r in refs if r != kept]
        if gone:
            self.client.delete(*(self._key(r) for r in gone))
            self.client.srem(self._set(account_id), *gone)
        return len(gone)

    def active(self, account_id: uuid.UUID) -> list[Login]:
        logins = []
        for raw_ref in self.client.smembers(self._set(account_id)):
            ref = raw_ref.decode() if isinstance(raw_ref, bytes) else raw_ref
            record = self._read(ref)
            if record is None:
                self.client.srem(self._set(account_id), ref)  # expired
            else:
                logins.append(_redis_login(ref, record))
        return sorted(logins, key=lambda x: x.last_seen_at, reverse=True)


def _login(row: dict[str, Any]) -> Login:
    return Login(
        row["id_hash"], row["account_id"], row["user_agent"], row["address"], row["created_at"], row["last_seen_at"]
    )


def _redis_login(ref: str, record: dict[str, Any]) -> Login:
    def at(text: str) -> datetime:
        return datetime.fromisoformat(text).astimezone(UTC)

    return Login(
        ref,
        uuid.UUID(_owner_id(record)),
        record["user_agent"] or None,
        record["address"] or None,
        at(record["created_at"]),
        at(record["last_seen_at"]),
    )


def _owner_id(record: dict[str, Any]) -> str:
    """The account of a Redis login (written as ``merchant_id`` before accounts: the same id)."""
    return str(record.get("account_id") or record["merchant_id"])


def make_store(engine: Engine, redis_url: str | None) -> LoginStore:
    if redis_url:
        import redis

        return RedisLogins(redis.Redis.from_url(redis_url, socket_timeout=2))
    return PostgresLogins(engine)
