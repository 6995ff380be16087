"""The shared rate limit through Redis (``kassa_api.ratelimit``): hits reserved in leases far
from the limit, one by one near it, and never more allowed than the limit across processes."""

from __future__ import annotations

import secrets

import pytest
import redis

from kassa_api.ratelimit import RedisRateLimiter

REDIS_URL = "redis://127.0.0.1:6379/0"


class CountingRedis(redis.Redis):
    """A real client that counts the round trips made through pipelines."""

    round_trips = 0

    def pipeline(self, *args, **kwargs):
        pipe = super().pipeline(*args, **kwargs)
        execute = pipe.execute

        def counted(*a, **kw):
            self.round_trips += 1
            return execute(*a, **kw)

        pipe.execute = counted
        return pipe


@pytest.fixture
def client():
    c = CountingRedis.from_url(REDIS_URL)
    yield c
    c.close()


def key() -> str:
    return f"test:{secrets.token_hex(6)}"


def test_a_key_far_below_its_limit_costs_a_round_trip_every_few_requests(client):
    limiter, k = RedisRateLimiter(client, 1000), key()
    verdicts = [limiter.hit(k) for _ in range(100)]
    assert all(v.allowed for v in verdicts)
    assert [v.remaining for v in verdicts] == list(range(999, 899, -1))
    assert client.round_trips <= 10


def test_near_its_limit_every_hit_is_counted_in_redis_and_the_limit_holds(client):
    limiter, k = RedisRateLimiter(client, 5), key()
    verdicts = [limiter.hit(k) for _ in range(7)]
    assert [v.allowed for v in verdicts] == [True] * 5 + [False] * 2
    assert [v.remaining for v in verdicts] == [4, 3, 2, 1, 0, 0, 0]
    assert client.round_trips == 7


def test_several_processes_together_never_get_more_than_the_limit(client):
    processes, k = [RedisRateLimiter(client, 200) for _ in range(3)], key()
    allowed = sum(processes[i % 3].hit(k).allowed for i in range(400))
    assert 180 <= allowed <= 200  # at most the limit; a few reserved places may go unused


def test_clear_forgets_the_window_here_and_in_redis(client):
    limiter, k = RedisRateLimiter(client, 3), key()
    for _ in range(3):
        limiter.hit(k)
    assert limiter.exceeded(k)
    limiter.clear(k)
    assert not limiter.exceeded(k) and limiter.hit(k).remaining == 2
