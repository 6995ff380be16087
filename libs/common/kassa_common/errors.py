"""Domain errors: small named classes. Each edge maps them to its own shape in one place
(the API to its JSON error envelope, consumers to retry or dead-letter)."""

from __future__ import annotations


class DomainError(Exception):
    """Base class. ``code`` is the API error code this maps to."""

    code = "BAD_REQUEST"

    def __init__(self, message: str, details: list[dict] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []


class NotFound(DomainError):
    code = "NOT_FOUND"


class InvalidTransition(DomainError):
    code = "CONFLICT"


class IdempotencyConflict(DomainError):
    code = "CONFLICT"


class Unprocessable(DomainError):
    """The request is well formed but cannot be carried out (422)."""

    code = "UNPROCESSABLE_ENTITY"


class WalletNotConfigured(Unprocessable):
    pass


class UnsupportedPair(Unprocessable):
    pass


class ProductUnavailable(Unprocessable):
    pass


class RateNotAvailable(DomainError):
    """No trustworthy rate right now: 503 with ``Retry-After: retry_after``."""

    code = "SERVICE_UNAVAILABLE"

    def __init__(self, message: str, details: list[dict] | None = None, *, retry_after: int = 30) -> None:
        super().__init__(message, details)
        self.retry_after = retry_after


class InvalidCurrency(DomainError):
    code = "VALIDATION_ERROR"


class AmountTooLarge(DomainError):
    """A price worth more, at today's rate, than a payment's ``amount`` can hold."""

    code = "VALIDATION_ERROR"


class InvalidRefund(DomainError):
    """A refund request the payment cannot take (an amount above what is refundable, more
    decimals than the token has): 400 naming the field."""

    code = "VALIDATION_ERROR"


class InvalidClaim(DomainError):
    """A claim page's address that cannot receive the refund: 400 with the reason."""

    code = "VALIDATION_ERROR"


class Unprepared(Exception):
    """A consumer's handler needs something fetched outside its transaction first (the
    settler: a rate the cache does not hold; no network call is made while rows are locked).
    The consumer rolls the batch back, calls ``prepare()`` with no transaction open and
    handles the batch again, its attempts unspent (``consumer.PREPARE_ROUNDS`` times at most)."""

    def prepare(self) -> None:
        raise NotImplementedError
