"""Every failure the client reports, as one hierarchy under ``KassaError``.

An answer of the API in its error shape becomes an ``APIError`` subclass chosen by the
HTTP status (and, for 400, by the error code), carrying the shape's fields::

    {"success": false, "statusCode": 404,
     "error": {"code": "NOT_FOUND", "message": "payment not found", "status": 404, "details": []}}

A request that got no answer becomes an ``APIConnectionError`` (``APITimeoutError`` when
it timed out). A webhook whose signature does not verify raises
``SignatureVerificationError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from requests.structures import CaseInsensitiveDict


class KassaError(Exception):
    """The base of every error this package raises."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class APIError(KassaError):
    """The API answered with an error. ``status`` is the HTTP status; ``code``, ``message``
    and ``details`` come from the error shape (``details``: one entry per invalid field,
    each with ``field`` and ``message``); ``request_id`` is the ``X-Request-Id`` of the
    answer (quote it when reporting a problem); ``body`` is the decoded answer (or its
    text when it was not JSON)."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str | None = None,
        details: list[dict[str, Any]] | None = None,
        request_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.details: list[dict[str, Any]] = list(details or [])
        self.request_id = request_id
        self.headers: CaseInsensitiveDict[str] = CaseInsensitiveDict(headers or {})
        self.body = body

    def __str__(self) -> str:
        text = f"{self.status} {self.code or 'ERROR'}: {self.message}"
        if self.details:
            fields = "; ".join(f"{d.get('field')}: {d.get('message')}" for d in self.details[:5])
            text += f" ({fields})"
        if self.request_id:
            text += f" [request id {self.request_id}]"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class BadRequestError(APIError):
    """400: a malformed request (``BAD_REQUEST``: bad JSON, a bad query string)."""


class ValidationError(BadRequestError):
    """400 ``VALIDATION_ERROR``: the body is well-formed but a field is invalid;
    ``details`` names each field."""


class AuthenticationError(APIError):
    """401: missing, malformed, unknown or revoked key; banned or incomplete account."""


class ForbiddenError(APIError):
    """403: the key lacks the scope the endpoint needs."""


PermissionDeniedError = ForbiddenError


class NotFoundError(APIError):
    """404: no such object for this key (another merchant's or the other mode's objects
    are not found either)."""


class ConflictError(APIError):
    """409: the object's state forbids it (cancel of a payment that is not PENDING), or
    an Idempotency-Key was reused with another body or is still in flight."""


class UnprocessableError(APIError):
    """422: understood but not possible (unsupported token/network pair, no wallet
    configured, inactive product, a disabled webhook endpoint)."""


class RateLimitError(APIError):
    """429: too many requests for this key. ``retry_after``: seconds the API asked to wait
    (None when it did not say)."""

    retry_after: float | None = None


class ServerError(APIError):
    """5xx: the API failed (quote ``request_id`` when reporting it)."""


class ServiceUnavailableError(ServerError):
    """503: a service Kassa depends on is unreachable, or no rate is available right now.
    ``retry_after``: seconds the API asked to wait."""

    retry_after: float | None = None


class APIConnectionError(KassaError):
    """No answer: the connection failed or broke before the response was read."""


class APITimeoutError(APIConnectionError):
    """No answer within the client's timeout."""


class SignatureVerificationError(KassaError, ValueError):
    """A webhook's ``X-Kassa-Signature`` does not authenticate its body; the message says
    why (malformed header, timestamp outside the tolerance, no matching signature)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_class(status: int, code: str | None) -> type[APIError]:
    """The exception class for an error answer with this status and error code."""
    if status == 400 and code == "VALIDATION_ERROR":
        return ValidationError
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else APIError
