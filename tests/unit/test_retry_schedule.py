"""The webhook retry schedule of DESIGN.md section 3."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kassa_webhook_sender.engine.retry import DEFAULT_POLICY, RetryPolicy

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_delays_follow_the_published_schedule_then_every_12_hours():
    delays = [DEFAULT_POLICY.delay_after(n) for n in range(1, 13)]
    assert delays == [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200, 43200, 43200]


def test_a_delivery_failing_forever_is_tried_until_three_days_then_given_up():
    now, attempts, times = T0, 0, [T0]
    while True:
        attempts += 1
        nxt = DEFAULT_POLICY.next_attempt(attempts, T0, now)
        if nxt is None:
            break
        now = nxt
        times.append(now)
    assert times[-1] <= T0 + timedelta(days=3)
    assert times[-1] + timedelta(hours=12) > T0 + timedelta(days=3)
    assert attempts == len(times) == 14  # the first try, 9 scheduled retries, 4 twelve-hourly


def test_an_old_delivery_redelivered_by_hand_gets_one_attempt():
    later = T0 + timedelta(days=10)
    assert DEFAULT_POLICY.next_attempt(1, T0, later) is None


def test_scaled_policy_keeps_the_shape():
    fast = DEFAULT_POLICY.scaled(0.01)
    assert fast.delays[:2] == (0.05, 0.3)
    assert fast.next_attempt(1, T0, T0) == T0 + timedelta(seconds=0.05)


def test_custom_delays():
    p = RetryPolicy(delays=(0.1, 0.2), repeat_every=1, give_up_after=5)
    assert [p.delay_after(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 1, 1]
    assert p.next_attempt(3, T0, T0 + timedelta(seconds=4.5)) is None


def test_an_operator_schedule_repeats_its_last_delay():
    p = RetryPolicy.from_schedule((1, 2))
    assert [p.delay_after(n) for n in (1, 2, 3, 9)] == [1, 2, 2, 2]
    assert p.give_up_after == DEFAULT_POLICY.give_up_after


def test_the_sender_takes_the_schedule_from_settings():
    from kassa_common.config import Settings
    from kassa_webhook_sender.webhooks.main import retry_policy

    assert retry_policy(Settings()) == DEFAULT_POLICY
    assert retry_policy(Settings().with_(sender={"webhook_retry_schedule": (1.0, 1.0)})).delays == (1.0, 1.0)
