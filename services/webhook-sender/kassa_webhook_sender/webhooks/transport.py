"""The HTTP side of a delivery: POST the exact signed bytes, return a result object.

``Transport.post`` never raises for a failed request (refused destination, DNS error,
timeout, connection reset, non-2xx): the failure is in the result. Redirects are not
followed and nothing is retried here (the delivery's schedule does that).

The URL's host is resolved once (``netguard.resolve_destination``) and the request is
sent to the address that was checked, the name kept in ``Host`` and in TLS SNI and
certificate checks: a second DNS answer never gets a say. A refused destination is
recorded as "destination refused" and nothing else: no connection is attempted, so the
delivery log cannot tell a closed port from a filtered one behind a refused address.

Each attempt has one wall-clock deadline (``timeout``, 10 s by default) for connecting,
sending, the response headers and the body together: a receiver that drips a byte every
few seconds (which resets any per-read timeout) is cut off when the deadline passes. The
sending thread registers its connection with a ``Reaper`` thread, which shuts the socket
down at the deadline, wherever the read blocks (headers or body).

Requests go through urllib3's connection pools directly (one pool per checked address,
port and TLS name, shared by the sending threads, keep-alive): ``requests`` on top of it
cost ~2.5x the CPU per POST (~650 µs against ~250 µs), which at hundreds of deliveries
a second is most of what a sender spends.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import certifi
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError, SSLError
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.util.ssl_ import create_urllib3_context

from kassa_common.webhooks.netguard import DestinationRefused, Resolver, resolve_destination, system_resolver
from kassa_webhook_sender.engine.dispatcher import Result

log = logging.getLogger("kassa.webhooks")
USER_AGENT = "Kassa-Webhooks/1.0"
MAX_RESPONSE_BODY = 2048  # bytes kept in the attempt log
MAX_READ = 64 * 1024  # beyond this the connection is dropped rather than drained
MAX_POOLS = 1000  # destinations whose idle connections are kept (least recently used go first)
ERRNO = re.compile(r"\[(?:Errno -?\d+|SSL[^\]]*)\][^'\")]*")


@dataclass(frozen=True)
class Request:
    url: str
    body: bytes
    signature: str
    event_type: str
    event_id: str
    delivery_id: str


@dataclass(eq=False)
class Attempt:
    """One POST under way: its deadline, and the connection it uses once it has one."""

    deadline: float  # time.monotonic()
    conn: Any = None
    expired: bool = False
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def use(self, conn: Any) -> None:
        with self.lock:
            self.conn = conn
            late = self.expired
        if late:
            _shut(conn)

    def expire(self) -> None:
        with self.lock:
            if self.done:
                return
            self.expired = True
            conn = self.conn
        if conn is not None:
            _shut(conn)


def _shut(conn: Any) -> None:
    """Unblock whatever reads or writes the connection's socket (it is not reused after)."""
    sock = getattr(conn, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


_current = threading.local()  # the sending thread's Attempt


class Reaper:
    """One thread that expires attempts at their deadlines (a heap of deadlines)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Attempt]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, attempt: Attempt) -> None:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="webhook-deadlines", daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (attempt.deadline, next(self._seq), attempt))
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, _, attempt = heapq.heappop(self._heap)
                attempt.expire()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify()


class _Watched:
    """A connection that tells this thread's attempt it is in use (so its deadline can close
    it), before it connects and before each request; mixed into urllib3's HTTP and HTTPS."""

    def connect(self) -> None:
        _use(self)
        super().connect()  # type: ignore[misc]

    def request(self, *args: Any, **kwargs: Any) -> None:
        _use(self)
        super().request(*args, **kwargs)  # type: ignore[misc]


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


def _use(conn: Any) -> None:
    attempt = getattr(_current, "attempt", None)
    if attempt is not None:
        attempt.use(conn)


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


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


def _describe(exc: BaseException) -> str:
    """A short reason without the URL (exception texts may repeat it, query string included)."""
    if isinstance(exc, (Urllib3Timeout, TimeoutError)) and not isinstance(exc, NewConnectionError):
        return "timed out"
    cause = ERRNO.search(str(exc))
    detail = f" ({cause.group(0).strip()})" if cause else ""
    if isinstance(exc, (SSLError, ssl.SSLError)):
        return "TLS handshake failed" + detail
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        return "connection failed" + detail
    return type(exc).__name__


def tls_context(verify: bool | str) -> ssl.SSLContext:
    """One context for every connection (loading the CA bundle per connection costs ~10 ms):
    the certifi bundle (as ``requests`` uses), or the file ``verify`` names, or no checks.
    Host names are checked by urllib3 against the name the request was meant for."""
    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED if verify else ssl.CERT_NONE)
    context.check_hostname = False  # urllib3 matches ``assert_hostname`` itself
    context.hostname_checks_common_name = False
    if verify:
        context.load_verify_locations(cafile=verify if isinstance(verify, str) else certifi.where())
    return context


def target(url: str) -> tuple[str, str, int, str, str]:
    """``(scheme, host name, port, path with query, Host header)`` of a webhook URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"unsupported scheme {parts.scheme!r}")
    name = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    display = f"[{name}]" if ":" in name else name
    host_header = f"{display}:{parts.port}" if parts.port else display
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, name, port, path, host_header


class Transport:
    def __init__(
        self,
        *,
        timeout: float = 10.0,
        allow_private: bool = False,
        resolver: Resolver = system_resolver,
        verify: bool | str = True,
        connections: int = 32,
    ) -> None:
        """``connections``: idle keep-alive connections kept per destination (about the
        number of threads sending)."""
        self.timeout, self.allow_private = timeout, allow_private
        self.resolver, self.verify = resolver, verify
        self._pools = urllib3.PoolManager(
            MAX_POOLS,
            maxsize=connections,
            block=False,
            retries=False,
            ssl_context=tls_context(verify),
            cert_reqs=ssl.CERT_REQUIRED if verify else ssl.CERT_NONE,
        )
        self._pools.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
        self._reaper = Reaper()

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
            scheme, name, port, path, host_header = target(req.url)
            address = resolve_destination(name, port, allow_private=self.allow_private, resolver=self.resolver)
        except (DestinationRefused, ValueError) as exc:
            return Result(None, _ms(started), None, f"destination refused: {exc}")
        tls = (
            {"server_hostname": name, "assert_hostname": name if self.verify else False} if scheme == "https" else None
        )
        headers = self.headers(req)
        headers["Host"] = host_header
        attempt = Attempt(started + self.timeout)
        _current.attempt = attempt
        self._reaper.watch(attempt)
        try:
            return self._send(req, attempt, started, scheme, address, port, path, headers, tls)
        finally:
            with attempt.lock:
                attempt.done = True
            _current.attempt = None

    def _send(
        self,
        req: Request,
        attempt: Attempt,
        started: float,
        scheme: str,
        address: str,
        port: int,
        path: str,
        headers: dict[str, str],
        tls: dict[str, Any] | None,
    ) -> Result:
        try:
            pool = self._pools.connection_from_host(address, port, scheme, pool_kwargs=tls)
            left = max(attempt.deadline - time.monotonic(), 0.001)
            response = pool.urlopen(
                "POST",
                path,
                body=req.body,
                headers=headers,
                retries=False,
                redirect=False,
                assert_same_host=False,
                timeout=urllib3.Timeout(left, left),
                preload_content=False,
                release_conn=False,
            )
        except Exception as exc:  # noqa: BLE001 - every failure is a result, never raised
            reason = "timed out" if attempt.expired else _describe(exc)
            log.info("webhook to %s failed: %s", sanitize_url(req.url), reason)
            return Result(None, _ms(started), None, reason)
        body, error = self._read(response, started)
        if attempt.expired and error is not None:
            error = "timed out reading the response"
        code = response.status
        if error is None and not 200 <= code < 300:
            error = f"HTTP {code}" + (" (redirects are not followed)" if 300 <= code < 400 else "")
        return Result(code, _ms(started), body, error)

    def _read(self, response: urllib3.BaseHTTPResponse, started: float) -> tuple[str | None, str | None]:
        """Up to MAX_READ bytes of the body (kept: the first MAX_RESPONSE_BODY), within the timeout.
        The connection goes back to the pool only when the whole response was read."""
        kept, total, error, complete = bytearray(), 0, None, False
        try:
            while True:
                chunk = response.read(8192)
                if not chunk:
                    complete = True
                    break
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
            if not complete:
                response.close()  # unread bytes would poison the next request on it: drop it
            response.release_conn()
        if error is None and time.monotonic() - started > self.timeout:
            error = "timed out"
        return (kept.decode("utf-8", "replace") if kept else None), error

    def close(self) -> None:
        self._reaper.close()
        self._pools.clear()


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
