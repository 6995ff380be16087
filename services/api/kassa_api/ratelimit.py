"""Fixed-window counters per key (API keys, client addresses, failed logins): shared through
Redis when REDIS_URL is set, otherwise counted in each process (one gunicorn worker each),
in memory bounded by dropping past windows once it holds many keys."""
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
    def hit(self, key: str) -> Verdict: ...  # count one more, and say whether it is within the limit

    def exceeded(self, key: str) -> bool: ...  # the limit is used up in this window (nothing counted)

    def clear(self, key: str) -> None: ...  # forget this window's count


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


class RedisRateLimiter:
    def __init__(self, client, limit: int, window: int = 60) -> None:  # client: redis.Redis
        self.client, self.limit, self.window = client, limit, window

    def hit(self, key: str) -> Verdict:
        now = time.time()
        slot = int(now // self.window)
        name = f"kassa:rl:{key}:{slot}"  # as _name(key)
        pipe = self.client.pipeline(transaction=False)
        pipe.incr(name)
        pipe.expire(name, self.window + 1)
        count, _ = pipe.execute()
        return _verdict(int(count), self.limit, int((slot + 1) * self.window - now) + 1)

    def _name(self, key: str) -> str:
        return f"kassa:rl:{key}:{int(time.time() // self.window)}"

    def exceeded(self, key: str) -> bool:
        return int(self.client.get(self._name(key)) or 0) >= self.limit

    def clear(self, key: str) -> None:
        self.client.delete(self._name(key))


def _verdict(count: int, limit: int, reset_in: int) -> Verdict:
    return Verdict(count <= limit, limit, max(limit - count, 0), reset_in)


def make_limiter(redis_url: str | None, limit: int, window: int = 60) -> RateLimiter:
    if redis_url:
        import redis

        return RedisRateLimiter(redis.Redis.from_url(redis_url, socket_timeout=2), limit, window)
    return MemoryRateLimiter(limit, window)
