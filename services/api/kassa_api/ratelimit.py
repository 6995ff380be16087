"""Fixed-window counters per key (API keys, client addresses, failed logins): shared through
Redis when REDIS_URL is set, otherwise counted in each process (one gunicorn worker each),
in memory bounded by dropping past windows once it holds many keys.

Through Redis, a process reserves a key's hits in leases: one INCRBY takes several places
of the window's count, which the process then hands out itself, so a key far below its
limit costs a Redis round trip every few requests instead of every request. A lease is an
eighth of what the window has left as far as the process knows (at most ``MAX_LEASE``), so
near the limit it is one hit and every request is counted in Redis as it comes. The count
in Redis includes every reserved place: the limit is never exceeded across processes; a
place a process reserved and did not hand out before the window ended is lost, so a key
used from several processes at once may be refused a few requests early."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_in: int  # seconds until the window ends


class RateLimiter(Protocol):
    window: int  # seconds: counts start again at each multiple of it

    def hit(self, key: str) -> Verdict: ...  # count one more, and say whether it is within the limit

    def exceeded(self, key: str) -> bool: ...  # the limit is used up in this window (nothing counted)

    def clear(self, key: str) -> None: ...  # forget this window's count


def wait_text(limiter: RateLimiter) -> str:
    """How long until ``limiter``'s window ends, in words: "about 4 minutes", "30 seconds"."""
    left = int(limiter.window - time.time() % limiter.window) + 1
    if left < 90:
        return f"{left} seconds"
    return f"about {round(left / 60)} minutes"


class MemoryRateLimiter:
    def __init__(self, limit: int, window: int = 60) -> None:
        self.limit, self.window = limit, window
        self._counts: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def hit(self, key: str) -> Verdict:
        now = time.time()
        slot = int(now // self.window)
        with self._lock:
            if len(self._counts) > 10_000:
                self._counts = {k: v for k, v in self._counts.items() if k[1] == slot}
            count = self._counts.get((key, slot), 0) + 1
            self._counts[(key, slot)] = count
        return _verdict(count, self.limit, int((slot + 1) * self.window - now) + 1)

    def exceeded(self, key: str) -> bool:
        return self._counts.get((key, int(time.time() // self.window)), 0) >= self.limit

    def clear(self, key: str) -> None:
        with self._lock:
            self._counts.pop((key, int(time.time() // self.window)), None)


@dataclass
class _Lease:
    slot: int  # the window
    next: int  # the place in the window's count the next hit here takes
    end: int  # the last place reserved (the count in Redis after the reservation)


class RedisRateLimiter:
    LEASE_SHARE = 8  # a lease is this fraction of what the window has left
    MAX_LEASE = 50

    def __init__(self, client, limit: int, window: int = 60) -> None:  # client: redis.Redis
        self.client, self.limit, self.window = client, limit, window
        self._leases: dict[str, _Lease] = {}
        self._lock = threading.Lock()

    def hit(self, key: str) -> Verdict:
        now = time.time()
        slot = int(now // self.window)
        reset_in = int((slot + 1) * self.window - now) + 1
        with self._lock:
            lease = self._leases.get(key)
            if lease is not None and lease.slot != slot:
                lease = None
            if lease is not None and lease.next <= min(lease.end, self.limit):
                place, lease.next = lease.next, lease.next + 1
                return _verdict(place, self.limit, reset_in)
        size = max(1, min(self.MAX_LEASE, (self.limit - (lease.end if lease else 0)) // self.LEASE_SHARE))
        name = f"kassa:rl:{key}:{slot}"  # as _name(key)
        pipe = self.client.pipeline(transaction=False)
        pipe.incrby(name, size)
        pipe.expire(name, self.window + 1)
        count, _ = pipe.execute()
        place = int(count) - size + 1
        with self._lock:
            if len(self._leases) > 10_000:
                self._leases = {k: v for k, v in self._leases.items() if v.slot == slot}
            self._leases[key] = _Lease(slot, place + 1, int(count))
        return _verdict(place, self.limit, reset_in)

    def _name(self, key: str) -> str:
        return f"kassa:rl:{key}:{int(time.time() // self.window)}"

    def exceeded(self, key: str) -> bool:
        return int(self.client.get(self._name(key)) or 0) >= self.limit

    def clear(self, key: str) -> None:
        with self._lock:
            self._leases.pop(key, None)
        self.client.delete(self._name(key))


def _verdict(count: int, limit: int, reset_in: int) -> Verdict:
    return Verdict(count <= limit, limit, max(limit - count, 0), reset_in)


def make_limiter(redis_url: str | None, limit: int, window: int = 60) -> RateLimiter:
    if redis_url:
        import redis

        return RedisRateLimiter(redis.Redis.from_url(redis_url, socket_timeout=2), limit, window)
    return MemoryRateLimiter(limit, window)
