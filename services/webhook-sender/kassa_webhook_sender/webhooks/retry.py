"""The webhook retry schedule: ``kassa_common.retry`` (the notifier shares it)."""

from kassa_common.retry import DEFAULT_POLICY, GIVE_UP_AFTER, REPEAT_EVERY, RETRY_DELAYS, RetryPolicy

__all__ = ["DEFAULT_POLICY", "GIVE_UP_AFTER", "REPEAT_EVERY", "RETRY_DELAYS", "RetryPolicy"]
