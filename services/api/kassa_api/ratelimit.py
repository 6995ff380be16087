"""Fixed-window rate limit per API key: shared through Redis when REDIS_URL is set,
otherwise counted in each process (one gunicorn worker each)."""
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
    def hit(self, key: str) -> Verdict: ...


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


class RedisRateLimiter:
    def __init__(self, client, limit: int, window: int = 60) -> None:  # client: redis.Redis
        self.client, self.limit, self.window = client, limit, window

    def hit(self, key: str) -> Verdict:
        now = time.time()
        slot = int(now // self.window)
        name = f"kassa:rl:{key}:{slot}"
        pipe = self.client.pipeline(transaction=False)
        pipe.incr(name)
        pipe.expire(name, self.window + 1)
        count, _ = pipe.execute()
        return _verdict(int(count), self.limit, int((slot + 1) * self.window - now) + 1)


def _verdict(count: int, limit: int, reset_in: int) -> Verdict:
    return Verdict(count <= limit, limit, max(limit - count, 0), reset_in)


def make_limiter(redis_url: str | None, limit: int) -> RateLimiter:
    if redis_url:
        import redis

        return RedisRateLimiter(redis.Redis.from_url(redis_url, socket_timeout=2), limit)
    return MemoryRateLimiter(limit)
