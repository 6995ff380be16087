"""HTTP to the API: one ``requests.Session``, the key header, JSON both ways, retries
(``retries`` decides when and how long), and error answers turned into exceptions.

A create that carries an Idempotency-Key keeps the same key on every retry, so the API
answers a repeat with the first response instead of creating twice.
"""

from __future__ import annotations

import logging
import platform
import random
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests
import urllib3.exceptions
from requests.__version__ import __version__ as requests_version

from kassa_client import retries
from kassa_client._version import __version__
from kassa_client.encoding import dumps, format_param
from kassa_client.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    RateLimitError,
    ServiceUnavailableError,
    error_class,
)

log = logging.getLogger("kassa_client")
USER_AGENT = f"kassa-client-python/{__version__} python/{platform.python_version()} requests/{requests_version}"


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: Any  # the decoded JSON

    @property
    def request_id(self) -> str | None:
        return self.headers.get("X-Request-Id") or None


class Transport:
    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str,
        timeout: float | tuple[float, float],
        max_retries: int,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self._given_session = session
        # A session of our own per thread (a connection pool is not shared between threads);
        # held weakly here, so a finished thread's session goes with it.
        self._local = threading.local()
        self._sessions: weakref.WeakSet[requests.Session] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._sleep = sleep
        self._rand = rand

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions), weakref.WeakSet()
            self._local = threading.local()
        for session in sessions:
            session.close()

    def session(self) -> requests.Session:
        """The caller's session, or this thread's own."""
        if self._given_session is not None:
            return self._given_session
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
            with self._lock:
                self._sessions.add(session)
        return session

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> Response:
        """Send the request, retrying what ``retries`` allows, and return the decoded
        answer; an error answer raises its ``APIError`` subclass."""
        method = method.upper()
        url = self.base_url + path
        query = {k: format_param(v) for k, v in (params or {}).items() if v is not None}
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if self.api_key:
            headers["X-Api-Key"] = self.api_key
        data = None
        if body is not None:
            data = dumps(body)
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        keyed = idempotency_key is not None
        attempt = 0
        while True:
            try:
                raw = self.session().request(
                    method, url, params=query, data=data, headers=headers, timeout=self.timeout, allow_redirects=False
                )
            except requests.RequestException as exc:
                sent = _request_sent(exc)
                if attempt < self.max_retries and retries.connection_error_retryable(sent, method, keyed):
                    self._wait(attempt, None, f"{method} {path}: {type(exc).__name__}")
                    attempt += 1
                    continue
                raise _connection_error(exc, method, url) from exc
            if attempt < self.max_retries and retries.status_retryable(raw.status_code, method, keyed):
                retry_after = retries.parse_retry_after(raw.headers.get("Retry-After"))
                if self._wait(attempt, retry_after, f"{method} {path}: {raw.status_code}"):
                    attempt += 1
                    continue
            return _answer(raw)

    def _wait(self, attempt: int, retry_after: float | None, why: str) -> bool:
        delay = retries.retry_delay(attempt, retry_after, self._rand())
        if delay is None:
            return False
        log.info("kassa: retrying %s in %.2fs (retry %d of %d)", why, delay, attempt + 1, self.max_retries)
        self._sleep(delay)
        return True


def _request_sent(exc: requests.RequestException) -> bool:
    """False when the connection could not even be opened (the API never saw the request)."""
    if isinstance(exc, requests.ConnectTimeout):
        return False
    reason = exc.args[0] if exc.args else None
    if isinstance(reason, urllib3.exceptions.MaxRetryError):
        reason = reason.reason
    return not isinstance(reason, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError))


def _connection_error(exc: requests.RequestException, method: str, url: str) -> APIConnectionError:
    if isinstance(exc, requests.Timeout):
        return APITimeoutError(f"{method} {url}: no answer within the timeout ({exc})")
    return APIConnectionError(f"{method} {url}: {type(exc).__name__}: {exc}")


def _decode(raw: requests.Response) -> Any:
    if not raw.content:
        return None
    try:
        return raw.json()
    except ValueError:
        return None


def _answer(raw: requests.Response) -> Response:
    body = _decode(raw)
    headers = raw.headers
    if 200 <= raw.status_code < 300:
        if raw.content and body is None:
            raise APIError(
                f"the answer is not JSON: {raw.text[:200]!r}",
                status=raw.status_code,
                request_id=headers.get("X-Request-Id"),
                headers=headers,
                body=raw.text,
            )
        return Response(raw.status_code, headers, body)
    raise _api_error(raw.status_code, headers, body, raw.text)


def _api_error(status: int, headers: Mapping[str, str], body: Any, text: str) -> APIError:
    shape = body.get("error") if isinstance(body, dict) else None
    if not isinstance(shape, dict):
        shape = {}
    code = shape.get("code") if isinstance(shape.get("code"), str) else None
    message = shape.get("message") if isinstance(shape.get("message"), str) else None
    details = shape.get("details") if isinstance(shape.get("details"), list) else []
    request_id = headers.get("X-Request-Id") or shape.get("request_id")
    if 300 <= status < 400:
        # Not followed: requests would carry X-Api-Key to wherever the redirect points.
        message = f"the API redirected to {headers.get('Location')!r}: set base_url to that address"
    cls = error_class(status, code)
    error = cls(
        message or f"HTTP {status}: {text[:200]}",
        status=status,
        code=code,
        details=details,
        request_id=request_id,
        headers=headers,
        body=body if body is not None else text,
    )
    if isinstance(error, (RateLimitError, ServiceUnavailableError)):
        error.retry_after = retries.parse_retry_after(headers.get("Retry-After"))
    return error
