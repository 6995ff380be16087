"""The HTTP side of a delivery: POST the exact signed bytes, return a result object.

``Transport.post`` never raises for a failed request (refused destination, DNS error,
timeout, connection reset, non-2xx): the failure is in the result. Redirects are not
followed. Each worker thread keeps its own ``requests.Session`` (keep-alive pool).

The URL's host is resolved once (``netguard.resolve_destination``) and the request is
sent to the address that was checked, the name kept in ``Host`` and in TLS SNI and
certificate checks: a second DNS answer never gets a say. A refused destination is
recorded as "destination refused" and nothing else: no connection is attempted, so the
delivery log cannot tell a closed port from a filtered one behind a refused address.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter

from kassa_common.netguard import DestinationRefused, Resolver, resolve_destination, system_resolver

log = logging.getLogger("kassa.webhooks")
USER_AGENT = "Kassa-Webhooks/1.0"
MAX_RESPONSE_BODY = 2048  # bytes kept in the attempt log
MAX_READ = 64 * 1024  # beyond this the connection is dropped rather than drained
ERRNO = re.compile(r"\[(?:Errno -?\d+|SSL[^\]]*)\][^'\")]*")


@dataclass(frozen=True)
class Request:
    url: str
    body: bytes
    signature: str
    event_type: str
    event_id: str
    delivery_id: str


@dataclass(frozen=True)
class Result:
    status_code: int | None
    duration_ms: int
    response_body: str | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300 and self.error is None


def sanitize_url(url: str) -> str:
    """scheme://host[:port]/path: no credentials, query or fragment (safe for logs)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid url>"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _describe(exc: Exception) -> str:
    """A short reason without the URL (exception texts repeat it, query string included)."""
    if isinstance(exc, requests.Timeout):
        return "timed out"
    cause = ERRNO.search(str(exc))
    detail = f" ({cause.group(0).strip()})" if cause else ""
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS handshake failed" + detail
    if isinstance(exc, requests.ConnectionError):
        return "connection failed" + detail
    return type(exc).__name__


class PinnedAdapter(HTTPAdapter):
    """Connects to the URL's IP literal; TLS names the host the request was meant for
    (``server_hostname`` on the prepared request) for SNI and the certificate check."""

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        name = getattr(request, "server_hostname", None)
        if name and host_params["scheme"] == "https":
            pool_kwargs = {**pool_kwargs, "server_hostname": name, "assert_hostname": name}
        return host_params, pool_kwargs


def pin(url: str, address: str) -> tuple[str, str, str]:
    """``(url with the address as host, Host header, host name)``."""
    parts = urlsplit(url)
    name = parts.hostname or ""
    literal = f"[{address}]" if ":" in address else address
    display = f"[{name}]" if ":" in name else name
    port = f":{parts.port}" if parts.port else ""
    return parts._replace(netloc=f"{literal}{port}").geturl(), f"{display}{port}", name


class Transport:
    def __init__(self, *, timeout: float = 10.0, allow_private: bool = False,
                 resolver: Resolver = system_resolver, verify: bool | str = True) -> None:
        self.timeout, self.allow_private = timeout, allow_private
        self.resolver, self.verify = resolver, verify
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._lock = threading.Lock()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.trust_env = False  # no proxies or .netrc credentials from the environment
            session.headers.clear()
            session.verify = self.verify
            adapter = PinnedAdapter()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def headers(self, req: Request) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Kassa-Signature": req.signature,
            "X-Kassa-Event": req.event_type,
            "X-Kassa-Event-Id": req.event_id,
            "X-Kassa-Delivery-Id": req.delivery_id,
        }

    def post(self, req: Request) -> Result:
        started = time.monotonic()
        try:
            parts = urlsplit(req.url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            address = resolve_destination(parts.hostname or "", port, allow_private=self.allow_private,
                                          resolver=self.resolver)
        except (DestinationRefused, ValueError) as exc:
            return Result(None, _ms(started), None, f"destination refused: {exc}")
        url, host_header, name = pin(req.url, address)
        session = self._session()
        prepared = session.prepare_request(requests.Request(
            "POST", url, data=req.body, headers={**self.headers(req), "Host": host_header}))
        prepared.server_hostname = name  # type: ignore[attr-defined]
        try:
            response = session.send(prepared, timeout=self.timeout, allow_redirects=False, stream=True)
        except Exception as exc:  # noqa: BLE001 - every failure is a result, never raised
            log.info("webhook to %s failed: %s", sanitize_url(req.url), _describe(exc))
            return Result(None, _ms(started), None, _describe(exc))
        body, error = self._read(response, started)
        code = response.status_code
        if error is None and not 200 <= code < 300:
            error = f"HTTP {code}" + (" (redirects are not followed)" if 300 <= code < 400 else "")
        return Result(code, _ms(started), body, error)

    def _read(self, response: requests.Response, started: float) -> tuple[str | None, str | None]:
        """Up to MAX_READ bytes of the body (kept: the first MAX_RESPONSE_BODY), within the timeout."""
        kept, total, error = bytearray(), 0, None
        try:
            for chunk in response.iter_content(8192):
                if len(kept) < MAX_RESPONSE_BODY:
                    kept += chunk[: MAX_RESPONSE_BODY - len(kept)]
                total += len(chunk)
                if total >= MAX_READ:
                    break
                if time.monotonic() - started > self.timeout:
                    error = "timed out reading the response"
                    break
        except Exception as exc:  # noqa: BLE001
            error = f"reading the response failed: {_describe(exc)}"
        finally:
            response.close()  # back to the pool if fully read, otherwise dropped
        if error is None and time.monotonic() - started > self.timeout:
            error = "timed out"
        return (kept.decode("utf-8", "replace") if kept else None), error

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
